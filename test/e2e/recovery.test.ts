// Crash recovery with real processes: `aviary serve` is killed with SIGKILL while a task runs on a
// netns guest, then started again on the same data directory. The decision (docs/engine.md): a
// task cut off by a crash is queued again once, and runs to completion; a second crash of the same
// task fails it with the reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createNetnsGuest, type NetnsGuest } from '../guests/netns-guest'
import { stages, submitFile, waitForTask } from './e2e-helpers'

// Sleeps long on its first run; once the marker exists (second attempt) it ends at once.
const SAMPLE = `#!/bin/sh
if [ -e /tmp/recovery-marker ]; then echo second; exit 0; fi
touch /tmp/recovery-marker
sleep 120
`

const AGENT = [process.execPath, path.resolve('bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000']

function serve(dataDir: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [path.resolve('bin/aviary.js'), 'serve', '--data', dataDir, '-p', '0'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  return new Promise((resolve, reject) => {
    proc.stderr!.on('data', (b: Buffer) => {
      err += b.toString()
      const m = /analysis API on (http:\/\/\S+)/.exec(err)
      if (m) resolve({ proc, url: m[1]! })
    })
    proc.once('exit', (code) => reject(new Error(`aviary serve exited (${code}): ${err}`)))
  })
}

function captures(iface: string): string[] {
  try {
    return execFileSync('pgrep', ['-af', `^tcpdump .*-i ${iface} `], { encoding: 'utf8' }).trim().split('\n')
  } catch {
    return [] // pgrep exits 1 when nothing matches
  }
}

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()))
}

describe('recovery after kill -9', () => {
  let guest: NetnsGuest
  let dataDir: string
  let server: ChildProcess | undefined

  beforeAll(async () => {
    guest = await createNetnsGuest({ index: 2, prefix: 'avee' })
    dataDir = mkdtempSync(path.join(tmpdir(), 'aviary-recovery-'))
    writeFileSync(path.join(dataDir, 'machines.json'), JSON.stringify({
      driver: 'physical',
      interface: guest.hostIf,
      resultserver: { ip: guest.hostIp, port: 0 },
      screenshots: { interval: 0 },
      machines: [{ name: 'netns2', ip: guest.guestIp, platform: 'linux' }]
    }))
  }, 60_000)

  afterAll(async () => {
    server?.kill('SIGKILL')
    await guest?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('a task cut off by a crash is queued again once and completes', async () => {
    const agent = await guest.startAgent(AGENT)
    let s = await serve(dataDir)
    server = s.proc
    const id = await submitFile(s, 'sleeper.sh', SAMPLE, { timeout: '60' })
    // Wait until the sample runs in the guest, then kill the service without warning.
    const deadline = Date.now() + 60_000
    while (!(await stages(s, id)).includes('sample_running')) {
      if (Date.now() > deadline) throw new Error(`the sample did not start: ${JSON.stringify(await stages(s, id))}`)
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(captures(guest.hostIf)).toHaveLength(1)
    s.proc.kill('SIGKILL')
    await exited(s.proc)
    // The capture dies with the service instead of writing on for ever.
    await new Promise((r) => setTimeout(r, 1000))
    expect(captures(guest.hostIf)).toEqual([])
    // A physical machine is not reset by Aviary: the test "reboots" it, as its owner would.
    if (agent.pid) process.kill(-agent.pid, 'SIGKILL')
    await exited(agent)
    await guest.startAgent(AGENT)

    s = await serve(dataDir)
    server = s.proc
    expect(await waitForTask(s, id, ['reported', 'failed_analysis', 'failed_processing'], 90_000)).toBe('reported')
    const timeline = await stages(s, id)
    expect(timeline.filter((x) => x === 'machine_locked')).toHaveLength(2)
    expect(timeline).toContain('recovered')
    const view = await (await fetch(`${s.url}/tasks/view/${id}`)).json() as { task: { errors: string[] } }
    expect(view.task.errors).toEqual([])
    s.proc.kill('SIGTERM')
    await exited(s.proc)
    server = undefined
  }, 240_000)
})
