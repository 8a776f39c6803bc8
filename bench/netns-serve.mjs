// What the benches that run analyses on netns guests share: the guest fixture of the tests
// (test/guests/netns-guest.ts, bundled here since benches run as plain Node), and the built
// `aviary serve` in its own process, as users run it.
import { build } from 'esbuild'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = fileURLToPath(new URL('..', import.meta.url))

/** createNetnsGuest of the test fixture, and a cleanup for the bundle. */
export async function netnsFixture(name) {
  mkdirSync(path.join(root, 'out'), { recursive: true })
  const work = mkdtempSync(path.join(root, 'out', `${name}-bench-`))
  await build({
    absWorkingDir: root, entryPoints: { guest: 'test/guests/netns-guest.ts' }, outdir: work, outExtension: { '.js': '.mjs' },
    bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'warning'
  })
  const { createNetnsGuest } = await import(path.join(work, 'guest.mjs'))
  process.chdir(root)
  return { createNetnsGuest, cleanup: () => rmSync(work, { recursive: true, force: true }) }
}

/** `aviary serve --data dataDir -p 0`; resolves with the process and its API URL once it listens. */
export async function serve(dataDir) {
  const server = spawn(process.execPath, [path.join(root, 'bin/aviary.js'), 'serve', '--data', dataDir, '-p', '0'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  const url = await new Promise((resolve, reject) => {
    server.stderr.on('data', (b) => {
      err = (err + b).slice(-4096)
      const m = /analysis API on (http:\/\/\S+)/.exec(err)
      if (m) resolve(m[1])
    })
    server.once('exit', (code) => reject(new Error(`aviary serve exited (${code}): ${err}`)))
  })
  return { server, url }
}

/** SIGTERM, and wait for the exit. */
export async function stop(server) {
  if (!server) return
  server.kill('SIGTERM')
  await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)))
}

/** Final statuses of a run (completed moves on to reported between two polls). */
export const FINAL = ['completed', 'reported', 'failed_processing', 'failed_analysis']

/**
 * Waits for task `id` to end and reads its timeline: `wall` is the run from machine_locked to
 * completed, `analysis` the analyzer's own part (analyzer_started to finished), both in seconds.
 */
export async function waitForRun(url, id, pollMs = 250) {
  for (;;) {
    const { task } = await (await fetch(`${url}/tasks/view/${id}`)).json()
    if (FINAL.includes(task.status)) {
      const { timeline } = await (await fetch(`${url}/tasks/timeline/${id}`)).json()
      const at = (stage) => timeline.find((e) => e.stage === stage)?.time
      return { id, status: task.status, wall: at('completed') - at('machine_locked'), analysis: at('finished') - at('analyzer_started') }
    }
    await new Promise((r) => setTimeout(r, pollMs))
  }
}
