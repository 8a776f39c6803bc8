// What the benches that run analyses on netns guests share: the guest fixture of the tests
// (test/guests/netns-guest.ts, bundled here since benches run as plain Node), and the built
// `aviary serve` in its own process, as users run it. Both are registered with bench/cleanup.mjs:
// guests (namespace, veth, agents), the service and the bundle go when the bench ends, is
// interrupted or fails.
import { build } from 'esbuild'
import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { made, own, stopChild, tempDir, track } from './cleanup.mjs'

export const root = fileURLToPath(new URL('..', import.meta.url))

/**
 * createNetnsGuest of the test fixture; each guest it makes is closed at cleanup (`await
 * guest.release()` closes one earlier). The bundle's folder goes at cleanup too.
 */
export async function netnsFixture(name) {
  mkdirSync(path.join(root, 'out'), { recursive: true })
  const work = tempDir(`${name}-bench-`, path.join(root, 'out'))
  await build({
    absWorkingDir: root, entryPoints: { guest: 'test/guests/netns-guest.ts' }, outdir: work, outExtension: { '.js': '.mjs' },
    bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'warning'
  })
  const fixture = await import(path.join(work, 'guest.mjs'))
  process.chdir(root)
  const createNetnsGuest = (opts) => {
    made('netns', `${opts.prefix ?? 'avng'}${opts.index}`)
    return own(fixture.createNetnsGuest(opts), (g) => g.close(), `close guest ${opts.prefix ?? 'avng'}${opts.index}`)
  }
  return { createNetnsGuest }
}

/** `aviary serve --data dataDir -p 0`; resolves with the process and its API URL once it listens. Stopped at cleanup. */
export async function serve(dataDir, { timeoutMs = 60_000 } = {}) {
  const server = spawn(process.execPath, [path.join(root, 'bin/aviary.js'), 'serve', '--data', dataDir, '-p', '0'], { stdio: ['ignore', 'ignore', 'pipe'] })
  track(server, { graceMs: 20_000, label: 'stop aviary serve' })
  let err = ''
  let timer
  const url = await new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`aviary serve did not listen within ${timeoutMs / 1000} s: ${err}`)), timeoutMs)
    server.stderr.on('data', (b) => {
      err = (err + b).slice(-4096)
      const m = /analysis API on (http:\/\/\S+)/.exec(err)
      if (m) resolve(m[1])
    })
    server.once('exit', (code) => reject(new Error(`aviary serve exited (${code}): ${err}`)))
  }).finally(() => clearTimeout(timer))
  return { server, url }
}

/** SIGTERM, and wait for the exit (SIGKILL after 20 s). */
export async function stop(server) {
  await stopChild(server, { graceMs: 20_000 })
}

/** A task's run has ended: any status but pending and running (completed moves on between two polls). */
export const runEnded = (status) => status !== 'pending' && status !== 'running'
/** Processing is done as well: the run ended and the task is no longer `completed`. */
export const settled = (status) => runEnded(status) && status !== 'completed'

/**
 * Waits for task `id`'s run to end and reads its timeline: `wall` is the run from machine_locked to
 * completed, `analysis` the analyzer's own part (analyzer_started to finished), `start` the host's
 * part before it (machine_locked to analyzer_started) and `end` the one after (finished to
 * completed: capture stopped, guest ended, machine stopped), all in milliseconds. Throws after
 * `timeoutMs` rather than waiting for ever.
 */
export async function waitForRun(url, id, pollMs = 250, timeoutMs = 600_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { task } = await (await fetch(`${url}/tasks/view/${id}`)).json()
    if (runEnded(task.status)) {
      const { timeline } = await (await fetch(`${url}/tasks/timeline/${id}`)).json()
      const at = (stage) => timeline.find((e) => e.stage === stage)?.time
      return {
        id, status: task.status, wall: at('completed') - at('machine_locked'), analysis: at('finished') - at('analyzer_started'),
        start: at('analyzer_started') - at('machine_locked'), end: at('completed') - at('finished')
      }
    }
    if (Date.now() > deadline) throw new Error(`task ${id} still ${task.status} after ${timeoutMs / 1000} s`)
    await new Promise((r) => setTimeout(r, pollMs))
  }
}
