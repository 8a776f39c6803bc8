// kill -9 of `aviary serve` while four tasks run on physical netns guests, which nobody reverts:
// the first attempts' analyzers and samples still run in the guests when the service comes back
// and runs each task again. Before, those analyzers ended the re-runs early and uploaded into the
// next task on their guest (foreign files, another task's behavior.jsonl). Checked through what a
// user sees: each recovered task and the next task on each guest hold only their own files, their
// behaviour log names their own task and only their own sample's processes, and the first
// attempts' samples never got to their last line, and nothing they sent is in the re-runs' pcaps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createNetnsGuest, type NetnsGuest } from '../guests/netns-guest'
import { stages, submitFile, waitForTask } from './e2e-helpers'

const GUESTS = 4
const AGENT = [process.execPath, path.resolve('bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000']

/**
 * First attempt: drops a file, sends a beacon to the host 5 times a second (a UDP packet naming
 * it), then runs long; a second attempt ends at once. `late` is written only if it is never stopped.
 */
const first = (i: number, host: string): string => `#!/bin/sh
if [ -e /tmp/attempt-${i} ]; then echo second > /tmp/second-${i}.txt; exit 0; fi
touch /tmp/attempt-${i}
echo first > /tmp/first-${i}.txt
python3 -c 'import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
while True:
    s.sendto(b"beacon-first-${i}", ("${host}", 9)); time.sleep(0.2)' &
sleep 15
echo late > /tmp/late-${i}.txt
`
const next = (i: number): string => `#!/bin/sh
echo next > /tmp/next-${i}.txt
sleep 12
`

function serve(dataDir: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [path.resolve('bin/aviary.js'), 'serve', '--data', dataDir, '-p', '0'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  return new Promise((resolve, reject) => {
    proc.stderr!.on('data', (b: Buffer) => {
      err = (err + b.toString()).slice(-8192)
      const m = /analysis API on (http:\/\/\S+)/.exec(err)
      if (m) resolve({ proc, url: m[1]! })
    })
    proc.once('exit', (code) => reject(new Error(`aviary serve exited (${code}): ${err}`)))
  })
}

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()))
}

interface Behaviour { analyzer: { task: string } | undefined; processes: string[] }

/** The behaviour log a task's analyzer uploaded: which task it says it ran, and its processes' command lines. */
function behaviour(dir: string): Behaviour {
  const lines = readFileSync(path.join(dir, 'logs', 'behavior.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  return {
    analyzer: lines.find((r) => r.type === 'analyzer') as { task: string } | undefined,
    processes: lines.filter((r) => r.type === 'process').map((r) => String(r.command_line))
  }
}

describe('kill -9 with four tasks on physical guests', () => {
  const guests: NetnsGuest[] = []
  let dataDir: string
  let server: ChildProcess | undefined

  beforeAll(async () => {
    for (let i = 0; i < GUESTS; i++) {
      const g = await createNetnsGuest({ index: 21 + i, prefix: 'avrp' })
      guests.push(g)
      await g.startAgent(AGENT)
    }
    dataDir = mkdtempSync(path.join(tmpdir(), 'aviary-recovery-physical-'))
    writeFileSync(path.join(dataDir, 'machines.json'), JSON.stringify({
      driver: 'physical',
      resultserver: { port: 0 },
      screenshots: { interval: 0 },
      machines: guests.map((g, i) => ({ name: `phys${i}`, ip: g.guestIp, platform: 'linux', interface: g.hostIf, resultserver_ip: g.hostIp }))
    }))
  }, 60_000)

  afterAll(async () => {
    server?.kill('SIGKILL')
    for (const g of guests) await g.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('each task and the next one on its guest hold only their own files', async () => {
    let s = await serve(dataDir)
    server = s.proc
    const ids: number[] = []
    for (let i = 0; i < GUESTS; i++) ids.push(await submitFile(s, `first-${i}.sh`, first(i, guests[i]!.hostIp), { machine: `phys${i}`, timeout: '40' }))
    const deadline = Date.now() + 60_000
    for (const id of ids) {
      while (!(await stages(s, id)).includes('sample_running')) {
        if (Date.now() > deadline) throw new Error(`task ${id} did not start: ${JSON.stringify(await stages(s, id))}`)
        await new Promise((r) => setTimeout(r, 200))
      }
    }
    // Nobody reboots the guests: the first attempts' analyzers and samples run on.
    const killedAt = Date.now()
    const at = (ms: number): string => `${((ms - killedAt) / 1000).toFixed(1)} s`
    /** When guest i's late file was written, and what the second attempt and the next task logged, each against the kill. */
    const lateStory = async (i: number, first: number, next: number): Promise<string> => {
      const late = path.join(guests[i]!.tmpDir, `late-${i}.txt`)
      const out = [`the kill: 0 s; late-${i}.txt written at ${existsSync(late) ? at(statSync(late).mtimeMs) : '(gone)'}`]
      for (const id of [first, next]) {
        const tl = (await (await fetch(`${s.url}/tasks/timeline/${id}`)).json() as { timeline: { stage: string; time: number; message: string | null }[] }).timeline
        out.push(`task ${id}: ${tl.map((e) => `${e.stage} ${at(e.time)}`).join(', ')}`)
        const log = readFileSync(path.join(dataDir, 'storage', 'analyses', String(id), 'analysis.log'), 'utf8')
        out.push(...log.split('\n').filter((l) => /earlier|reset|ended|pinned|watching/.test(l)).map((l) => `  ${l}`))
      }
      const agentLog = await fetch(`http://${guests[i]!.guestIp}:8000/logs`).then(async (r) => ((await r.json()) as { stdout: string }).stdout, (e: Error) => e.message)
      out.push(`guest ${i}'s agent log:`, ...agentLog.split('\n').slice(-80).map((l) => `  ${l}`))
      return out.join('\n')
    }
    s.proc.kill('SIGKILL')
    await exited(s.proc)
    s = await serve(dataDir)
    server = s.proc

    for (const id of ids) expect(await waitForTask(s, id, ['reported', 'failed_analysis', 'failed_processing'], 120_000)).toBe('reported')
    const nextIds: number[] = []
    for (let i = 0; i < GUESTS; i++) nextIds.push(await submitFile(s, `next-${i}.sh`, next(i), { machine: `phys${i}`, timeout: '30' }))
    for (const id of nextIds) expect(await waitForTask(s, id, ['reported', 'failed_analysis', 'failed_processing'], 120_000)).toBe('reported')
    // Past the end of the first samples' sleep: a survivor would have written and uploaded by now
    // (while the next tasks ran, or after).
    await new Promise((r) => setTimeout(r, Math.max(0, killedAt + 25_000 - Date.now())))

    for (let i = 0; i < GUESTS; i++) {
      for (const [id, own] of [[ids[i]!, `first-${i}.sh`], [nextIds[i]!, `next-${i}.sh`]] as const) {
        const dir = path.join(dataDir, 'storage', 'analyses', String(id))
        const view = await (await fetch(`${s.url}/tasks/view/${id}`)).json() as { task: { errors: string[] } }
        expect(view.task.errors, `task ${id}`).toEqual([])
        const b = behaviour(dir)
        expect(b.analyzer?.task, `task ${id}'s behavior.jsonl`).toBe(String(id))
        expect(b.processes.length, `task ${id}`).toBeGreaterThan(0)
        for (const cmd of b.processes) expect(cmd, `task ${id} lists only its own sample's processes`).toMatch(new RegExp(`${own}|^echo|^sleep|^touch|^\\[`))
        const files = existsSync(path.join(dir, 'files')) ? readdirSync(path.join(dir, 'files')) : []
        const mine = id === ids[i] ? [`second-${i}.txt`] : [`next-${i}.txt`]
        const names = files.map((f) => f.replace(/^[0-9a-f]{16}_/, '')).sort()
        // A late file means the first attempt's sample outlived the reset (it did on these
        // guests, which have no cgroup2, until the agent noted what its analyses started): say
        // when it was written against what the runs and the agent logged.
        if (names.includes(`late-${i}.txt`)) expect.fail(`task ${id}'s dropped files: ${names.join(', ')}\n${await lateStory(i, ids[i]!, id)}`)
        expect(names, `task ${id}'s dropped files`).toEqual(mine)
        // The first attempt's beacon was ended before the re-run's capture began: none in its pcap.
        const pcap = path.join(dir, 'dump.pcap')
        expect(existsSync(pcap), `task ${id}'s pcap`).toBe(true)
        expect(readFileSync(pcap).includes('beacon-first-'), `task ${id}'s pcap holds the first attempt's beacon`).toBe(false)
        const finished = (await (await fetch(`${s.url}/tasks/timeline/${id}`)).json() as { timeline: { stage: string; message: string | null }[] })
          .timeline.filter((e) => e.stage === 'finished')
        expect(finished.at(-1)?.message, `task ${id} ended by its own analyzer`).toBe('True')
      }
      // The first attempt's sample was ended, not left to finish.
      expect(existsSync(path.join(guests[i]!.tmpDir, `late-${i}.txt`)), `guest ${i}`).toBe(false)
    }
    s.proc.kill('SIGTERM')
    await exited(s.proc)
    server = undefined
  }, 300_000)
})
