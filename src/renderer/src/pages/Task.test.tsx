// @vitest-environment jsdom
// The Task page against a real service whose engine processed a real analysis folder (made here:
// a process tree, a dropped file, two JPEG screenshots, a memory dump) into report.json with
// Aviary's own pipeline: overview from /tasks/summary, full report for screenshots and memory,
// API URLs for images and downloads, and the actions.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import path from 'node:path'
import sharp from 'sharp'
import { ZipFile } from 'yazl'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter, Route, Routes } from 'react-router'
import { finishRun, startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { TaskPage } from './Task'

let h: Harness
let id: number

async function waitForTask(_: Harness, task: number, states: string[], ms: number): Promise<string> {
  const deadline = Date.now() + ms
  for (;;) {
    const { task: t } = (await (await fetch(`${h.url}/tasks/view/${task}`)).json()) as { task: { status: string } }
    if (states.includes(t.status) || Date.now() > deadline) return t.status
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** multipart/form-data by hand: jsdom's FormData and Blob are not the ones Node's fetch takes. */
async function submit(name: string, content: string): Promise<number> {
  const b = '----aviarytest'
  const body = `--${b}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n${content}\r\n--${b}--\r\n`
  const res = await fetch(`${h.url}/tasks/create/file`, { method: 'POST', body, headers: { 'Content-Type': `multipart/form-data; boundary=${b}` } })
  const out = (await res.json()) as { task_id?: number }
  if (typeof out.task_id !== "number") throw new Error(`submit: ${res.status} ${JSON.stringify(out)}`)
  return out.task_id
}

beforeAll(async () => {
  h = await startHarness({ engine: true, machines: { machines: [] } })
  setLocalApiBase(h.url)
  id = await submit('dropper.sh', '#!/bin/sh\ncurl http://example.com/x -o /tmp/x\n')
  const now = Date.now()
  const jpeg = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#c00' } }).jpeg().toBuffer()
  const files: Record<string, string | Buffer> = {
    'logs/behavior.jsonl': [
      { type: 'analyzer', version: 1, package: 'sh', task: id, time: now },
      { type: 'process', pid: 10, ppid: 1, command_line: 'sh /tmp/dropper.sh', exe: '/bin/sh', first_seen: now, exited: now + 5 },
      { type: 'process', pid: 11, ppid: 10, command_line: 'curl http://example.com/x -o /tmp/x', exe: '/usr/bin/curl', first_seen: now + 1, exited: now + 3 },
      // The same bytes written to a second path: the analyzer uploads them once (dropped.ts).
      { type: 'file', op: 'created', path: '/tmp/x', time: now + 2, pid: 11, sha256: createHash('sha256').update('MZ dropped payload').digest('hex') },
      { type: 'file', op: 'created', path: '/var/tmp/copy-of-x', time: now + 3, pid: 10, sha256: createHash('sha256').update('MZ dropped payload').digest('hex') }
    ].map((e) => JSON.stringify(e)).join('\n') + '\n',
    'files/0123456789abcdef_x': 'MZ dropped payload',
    'files.json': JSON.stringify({ path: 'files/0123456789abcdef_x', filepath: '/tmp/x', pids: [11] }) + '\n',
    'shots/0001.jpg': jpeg, 'shots/0002.jpg': jpeg,
    'memory/11-1.dmp': Buffer.alloc(4096, 1)
  }
  finishRun(h, id, files)
  expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
})
afterAll(async () => h?.stop())
afterEach(cleanup)

function page(at: string) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(
    <QueryClientProvider client={qc}>
      <MemoryRouter initialEntries={[at]}>
        <Routes><Route path="/tasks/:id" element={<TaskPage />} /><Route path="/tasks" element={<p>task list</p>} /></Routes>
      </MemoryRouter>
    </QueryClientProvider>
  )
}

describe('Task page', () => {
  it('shows the summary of a real report, then the tabs that need the full report', async () => {
    const user = userEvent.setup()
    page(`/tasks/${id}`)
    expect(await screen.findByRole('heading', { name: 'dropper.sh' })).toBeTruthy()
    expect(screen.getByText('reported')).toBeTruthy()
    expect(screen.getByRole('link', { name: 'download dump.pcap' }).getAttribute('href')).toBe(`${h.url}/pcap/get/${id}`)

    await user.click(screen.getByRole('tab', { name: 'Behavior' }))
    const tree = screen.getByRole('tree', { name: 'Process tree' })
    expect(within(tree).getByText('curl http://example.com/x -o /tmp/x')).toBeTruthy()
    await user.click(within(tree).getByRole('button', { name: 'Collapse pid 10' }))
    expect(within(tree).queryByText('curl http://example.com/x -o /tmp/x')).toBeNull()

    await user.click(screen.getByRole('tab', { name: 'Dropped' }))
    expect(screen.getByText('/tmp/x')).toBeTruthy()
    // Dropped at two paths: listed twice, each with its path, and each downloadable alone.
    const table = screen.getByRole('table', { name: 'dropped files' })
    const rows = within(table).getAllByRole('row').slice(1)
    expect(rows.map((r) => within(r).getAllByRole('cell')[1]?.textContent)).toEqual(['/tmp/x', '/var/tmp/copy-of-x'])
    // Each under its own name (the second copy is copy-of-x), both the same stored file.
    const links = rows.map((r) => within(r).getByRole('link', { name: /^(x|copy-of-x)$/ }))
    expect(links.map((a) => a.textContent)).toEqual(['x', 'copy-of-x'])
    expect(links.map((a) => a.getAttribute('href'))).toEqual([1, 2].map(() => `${h.url}/aviary/tasks/${id}/dropped/files/0123456789abcdef_x`))
    const one = await fetch(links[0]!.getAttribute('href') as string)
    expect(await one.text()).toBe('MZ dropped payload')
    expect(one.headers.get('content-disposition')).toBe(`attachment; filename="${id}-x.bin"`)
    expect(screen.getByRole('link', { name: /every dropped file/ }).getAttribute('href')).toBe(`${h.url}/tasks/report/${id}/dropped`)

    await user.click(screen.getByRole('tab', { name: 'Screenshots' }))
    const thumbs = await screen.findAllByRole('button', { name: /^Screenshot 000\d\.jpg/ })
    expect(thumbs).toHaveLength(2)
    expect(thumbs[1]?.querySelector('img')?.getAttribute('src')).toBe(`${h.url}/tasks/screenshots/${id}/0002_small`)
    // The URL really serves the JPEG.
    expect((await fetch(`${h.url}/tasks/screenshots/${id}/0002`)).headers.get('content-type')).toMatch(/image\/jpeg/)

    await user.click(screen.getByRole('tab', { name: 'Memory' }))
    const dump = await screen.findByRole('link', { name: '11-1.dmp' })
    expect(dump.getAttribute('href')).toBe(`${h.url}/memory/get/${id}/11-1`)
    expect((await fetch(dump.getAttribute('href') as string)).status).toBe(200)

    await user.click(screen.getByRole('tab', { name: 'Timeline' }))
    expect(await screen.findByText('reported', { selector: 'ol span' })).toBeTruthy()
  })

  it('shows the route, and the decrypted HTTPS exchanges, refused handshakes and flows file of a mitm=1 run', async () => {
    const user = userEvent.setup()
    const routed = await submit('fetcher.sh', '#!/bin/sh\ncurl https://upstream.example/secret\n')
    // Pending (no machine takes it here): the route is not chosen yet.
    page(`/tasks/${routed}`)
    await screen.findByRole('heading', { name: `Task ${routed}` })
    const routeFact = () => screen.getAllByRole('rowheader', { name: 'Route' })[0]?.nextElementSibling?.textContent
    expect(routeFact()).toBe('not yet chosen')
    cleanup()

    // What the proxy's addon writes for a run with mitm=1 (resources/mitm/aviary_flows.py), and its dump.
    const dir = h.analysisDir(routed)
    const t = Date.now() / 1000
    const answer = 'the secret answer\n\tline two\n'
    const flows = [
      { type: 'flow', time: t, client: ['10.0.0.5', 40000], server: ['198.51.100.7', 443], sni: 'upstream.example', scheme: 'https', method: 'GET',
        host: 'upstream.example', port: 443, path: '/secret', http_version: 'HTTP/1.1',
        request: { headers: [['Host', 'upstream.example'], ['User-Agent', 'curl/8.5']], body_b64: '', body_size: 0, truncated: false },
        response: { status: 200, reason: 'OK', headers: [['Content-Type', 'text/plain'], ['X-Name', 'invoice\u202Egpj.exe']],
          body_b64: Buffer.from(answer).toString('base64'), body_size: answer.length, truncated: false },
        error: null },
      { type: 'tls_failed', side: 'guest', time: t + 1, client: ['10.0.0.5', 40001], server: ['198.51.100.8', 443], sni: 'pinned.example',
        error: 'The client does not trust the proxy\'s certificate for pinned.example (sslv3 alert certificate unknown)' }
    ]
    mkdirSync(path.join(dir, 'mitm'), { recursive: true })
    writeFileSync(path.join(dir, 'mitm', 'flows.jsonl'), flows.map((f) => JSON.stringify(f)).join('\n') + '\n')
    writeFileSync(path.join(dir, 'mitm', 'dump.mitm'), 'mitmproxy flows')
    h.sql("UPDATE tasks SET route = 'internet', status = 'completed', started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?", routed)
    h.service.engine!.processPending()
    expect(await waitForTask(h, routed, ['reported', 'failed_processing'], 30_000)).toBe('reported')

    const { container } = page(`/tasks/${routed}`)
    await screen.findByRole('heading', { name: 'fetcher.sh' })
    expect(routeFact()).toBe('internet')
    await user.click(screen.getByRole('tab', { name: 'Network' }))
    const panel = screen.getByRole('tabpanel')
    // The route the report recorded (info.route).
    expect(within(panel).getByRole('rowheader', { name: 'Route' }).nextElementSibling?.textContent).toBe('internet — the internet, through NAT')

    // The exchange is listed once, readable, under its own heading; not merged into the capture's HTTP table.
    expect(within(within(panel).getByRole('region', { name: 'HTTP' })).getByText('No HTTP requests.')).toBeTruthy()
    const decrypted = within(panel).getByRole('region', { name: 'Decrypted HTTP(S)' })
    const line = within(decrypted).getByRole('button', { name: /GET.*https:\/\/upstream\.example\/secret.*200/ })
    expect(line.getAttribute('aria-expanded')).toBe('false')
    await user.click(line)
    expect(line.getAttribute('aria-expanded')).toBe('true')
    const details = document.getElementById(line.getAttribute('aria-controls') as string) as HTMLElement
    const resHeaders = within(details).getByRole('table', { name: 'Response headers' })
    expect(within(resHeaders).getByRole('rowheader', { name: 'Content-Type' }).nextElementSibling?.textContent).toBe('text/plain')
    // A header's bidi override is shown as a marker, never applied.
    expect(within(resHeaders).getByRole('rowheader', { name: 'X-Name' }).nextElementSibling?.querySelector('[data-control="RLO"]')).not.toBeNull()
    expect(container.innerHTML).not.toContain('\u202E')
    expect(within(details).getByRole('table', { name: 'Request headers' }).textContent).toContain('curl/8.5')
    expect(within(details).getByRole('region', { name: 'Response body, request 1' }).textContent).toBe('the secret answer\n\tline two\n')
    // The expander works from the keyboard.
    line.focus()
    await user.keyboard('{Enter}')
    expect(line.getAttribute('aria-expanded')).toBe('false')
    expect(document.getElementById(details.id)).toBeNull()

    const refused = within(panel).getByRole('list', { name: 'Failed TLS handshakes' })
    expect(refused.textContent).toMatch(/the guest \(10\.0\.0\.5:40001\) refused the proxy's certificate for pinned\.example \(TLS alert: certificate unknown\)/)

    const download = within(decrypted).getByRole('link', { name: 'download the flows (mitmproxy)' })
    expect(download.getAttribute('href')).toBe(`${h.url}/aviary/tasks/${routed}/flows`)
    const res = await fetch(download.getAttribute('href') as string)
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('mitmproxy flows')
  })

  it('rereports, and deletes only after the confirmation', async () => {
    const user = userEvent.setup()
    page(`/tasks/${id}`)
    await screen.findByRole('heading', { name: 'dropper.sh' })
    await user.click(screen.getByRole('button', { name: 'Rereport' }))
    expect(await screen.findByText('The report is being regenerated.')).toBeTruthy()
    expect(await waitForTask(h, id, ['reported'], 30_000)).toBe('reported')

    await user.click(screen.getByRole('button', { name: 'Delete…' }))
    await user.click(screen.getByRole('button', { name: 'Cancel' }))
    expect((await fetch(`${h.url}/tasks/view/${id}`)).status).toBe(200)
    await user.click(screen.getByRole('button', { name: 'Delete…' }))
    await user.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Delete' }))
    expect(await screen.findByText('task list')).toBeTruthy()
    expect((await fetch(`${h.url}/tasks/view/${id}`)).status).toBe(404)
  })

  it('shows why a run failed, as the engine recorded it: in the errors and on the timeline', async () => {
    // What the engine writes for an agent that misbehaved (test/e2e/hostile-agent.test.ts runs it for real).
    const reason = 'the agent misbehaved: 3 status polls in a row got answers no agent gives; the last: GET /status answered HTTP 302; the machine was stopped'
    const failed = await submit('hostile.sh', '#!/bin/sh\n')
    h.sql(`UPDATE tasks SET status = 'failed_analysis', errors = ?, started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?`,
      JSON.stringify([reason]), failed)
    h.sql('INSERT INTO task_events (task_id, at, stage, message) VALUES (?, ?, ?, ?)', failed, Date.now(), 'failed', reason)
    page(`/tasks/${failed}`)
    expect(await screen.findByText('The analysis failed: see the errors and the timeline.')).toBeTruthy()
    const timeline = await screen.findByRole('list', { name: 'Timeline' })
    expect(within(timeline).getByText(reason)).toBeTruthy()
    expect(screen.getAllByText(reason)).toHaveLength(2) // once in Errors, once on the timeline
  })

  it('says plainly that the sample did not start, on the page and in the Behavior tab, instead of "no processes"', async () => {
    const user = userEvent.setup()
    // What the engine records for the analyzer's `start-failed` (test/e2e/netns-analysis.test.ts runs it for real).
    const reason = 'the analyzer reported failed: the sample did not start: Exec format error (ENOEXEC)'
    const blob = await submit('blob.bin', '\u0000\u0013\u0037')
    const now = Date.now()
    const dir = h.analysisDir(blob)
    mkdirSync(path.join(dir, 'logs'), { recursive: true })
    writeFileSync(path.join(dir, 'logs/behavior.jsonl'), JSON.stringify({ type: 'analyzer', version: 1, task: String(blob), package: 'generic', platform: 'linux',
      category: 'file', target: '/tmp/blob.bin', pid: null, started: now, ended: now, reason: 'start-failed', error: 'Exec format error (ENOEXEC)', monitors: ['proc', 'files'] }) + '\n')
    h.sql(`UPDATE tasks SET status = 'completed', errors = ?, started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?`,
      JSON.stringify([reason]), blob)
    h.service.engine!.processPending()
    expect(await waitForTask(h, blob, ['reported', 'failed_processing'], 30_000)).toBe('reported')

    page(`/tasks/${blob}`)
    expect((await screen.findByTestId('start-failed')).textContent).toBe('The sample did not start: Exec format error (ENOEXEC). Nothing of it ran: the report has no processes and no behaviour.')
    await user.click(await screen.findByRole('tab', { name: 'Behavior' }))
    const panel = screen.getByRole('tabpanel')
    expect(within(panel).getByRole('alert').textContent).toBe('The sample did not start: Exec format error (ENOEXEC). No process ran, so there is no behaviour to show.')
    expect(within(panel).getByRole('region', { name: 'Processes' }).textContent).toContain('No process: the sample did not start.')
  })

  it('shows tags without a platform as a note, true and not red: they are kept for search and retention', async () => {
    const b = '----aviarytags'
    const body = `--${b}\r\nContent-Disposition: form-data; name="tags"\r\n\r\nkeep,lab\r\n--${b}\r\nContent-Disposition: form-data; name="file"; filename="tagged.sh"\r\n\r\necho\r\n--${b}--\r\n`
    const res = await fetch(`${h.url}/tasks/create/file`, { method: 'POST', body, headers: { 'Content-Type': `multipart/form-data; boundary=${b}` } })
    const id = ((await res.json()) as { task_id: number }).task_id
    page(`/tasks/${id}`)
    const notes = await screen.findByTestId('task-notes', {}, { timeout: 10_000 })
    expect(notes.textContent).toBe('tags keep, lab choose no machine without a platform; they are kept for search (tag:) and retention')
    expect(notes.className).not.toMatch(/red/)
    expect(screen.queryByRole('rowheader', { name: 'Errors' })).toBeNull()
  })

  it('says which member of a submitted archive a task runs, before and after its report', async () => {
    const user = userEvent.setup()
    const zip = new ZipFile()
    zip.addBuffer(Buffer.from('#!/bin/sh\necho run\n'), 'bin/run.sh')
    zip.addBuffer(Buffer.from('just text\n'), 'README.txt')
    zip.end()
    const chunks: Buffer[] = []
    for await (const c of zip.outputStream as AsyncIterable<Buffer>) chunks.push(c)
    const bytes = Buffer.concat(chunks)
    const b = '----aviaryzip'
    const body = Buffer.concat([Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="file"; filename="bundle.zip"\r\nContent-Type: application/zip\r\n\r\n`), bytes, Buffer.from(`\r\n--${b}--\r\n`)])
    const res = await fetch(`${h.url}/tasks/create/submit`, { method: 'POST', body, headers: { 'Content-Type': `multipart/form-data; boundary=${b}` } })
    const { task_ids: ids } = (await res.json()) as { task_ids: number[] }
    const members = await Promise.all(ids.map(async (tid) => [tid, ((await (await fetch(`${h.url}/tasks/view/${tid}`)).json()) as { task: { options: string; category: string } }).task] as const))
    const [runId, runTask] = members.find(([, t]) => t.options.includes('bin/run.sh')) ?? []
    expect(runTask?.category).toBe('archive')

    page(`/tasks/${runId}`)
    expect((await screen.findByTestId('task-archive-member')).textContent).toBe('bin/run.sh from bundle.zip (the member of a submitted archive that this task runs)')
    cleanup()

    const dir = h.analysisDir(runId as number)
    mkdirSync(path.join(dir, 'logs'), { recursive: true })
    writeFileSync(path.join(dir, 'logs/behavior.jsonl'), JSON.stringify({ type: 'analyzer', version: 1, package: 'sh', task: runId, time: Date.now() }) + '\n')
    h.sql("UPDATE tasks SET status = 'completed', started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?", runId)
    h.service.engine!.processPending()
    expect(await waitForTask(h, runId as number, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    page(`/tasks/${runId}`)
    await screen.findByRole('heading', { name: 'run.sh' })
    // The archive, not only the member (Cuckoo 2 keeps the archive as the target).
    expect(screen.getByRole('rowheader', { name: 'Ran from archive' }).nextElementSibling?.textContent).toBe('bin/run.sh from bundle.zip')
    await user.click(screen.getByRole('tab', { name: 'Behavior' }))
    // Its analyzer log has no calls: the server says so (404) and the full report has none either.
    expect(await screen.findByText('No calls were recorded.')).toBeTruthy()
    expect(screen.queryByRole('alert')).toBeNull()
  })

  it('shows a process\'s calls paged from the service\'s calls store: filters, search, the failed ones marked', async () => {
    const user = userEvent.setup()
    const traced = await submit('tracer.sh', '#!/bin/sh\n')
    const dir = h.analysisDir(traced)
    const pid = 4242
    const now = Date.now()
    // strace as the analyzer runs it (-f -ttt -yy): 3,000 calls; every 7th a refused connect, every 50th a passwd read.
    const line = (i: number) => {
      const t = `${Math.floor(now / 1000)}.${String(i).padStart(6, '0')}`
      if (i === 0) return `${pid} ${t} execve("/tmp/tracer.sh", ["/tmp/tracer.sh"], 0x7ffd /* 3 vars */) = 0`
      if (i % 7 === 0) return `${pid} ${t} connect(3<TCP:[1]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("203.0.113.9")}, 16) = -1 ECONNREFUSED (Connection refused)`
      if (i % 50 === 0) return `${pid} ${t} openat(AT_FDCWD</tmp>, "/etc/passwd", O_RDONLY) = 3</etc/passwd>`
      return `${pid} ${t} openat(AT_FDCWD</tmp>, "f${i}", O_RDONLY) = -1 ENOENT (No such file or directory)`
    }
    mkdirSync(path.join(dir, 'logs'), { recursive: true })
    writeFileSync(path.join(dir, 'logs/strace.log'), `${Array.from({ length: 3000 }, (_, i) => line(i)).join('\n')}\n`)
    writeFileSync(path.join(dir, 'logs/behavior.jsonl'), [
      { type: 'analyzer', version: 1, package: 'sh', task: String(traced), platform: 'linux', category: 'file', target: '/tmp/tracer.sh', pid, started: now, ended: now + 100, reason: 'tree-ended', monitors: ['proc', 'files', 'strace'] },
      { type: 'process', pid, ppid: 1, command_line: 'sh /tmp/tracer.sh', exe: '/bin/sh', first_seen: now, exited: now + 100 }
    ].map((e) => JSON.stringify(e)).join('\n') + '\n')
    h.sql("UPDATE tasks SET status = 'completed', started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?", traced)
    h.service.engine!.processPending()
    expect(await waitForTask(h, traced, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    const served = (await (await fetch(`${h.url}/aviary/tasks/${traced}/calls`)).json()) as { processes: { pid: number; calls: number }[] }
    expect(served.processes).toEqual([expect.objectContaining({ pid, calls: 3000 })])

    // jsdom has no layout: the calls grid gets the height a browser gives it.
    const height = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'clientHeight')
    Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get() { return this.getAttribute('role') === 'grid' ? 480 : 0 } })
    try {
      page(`/tasks/${traced}?tab=behavior`)
      const grid = await screen.findByRole('grid', { name: 'Calls' })
      await waitFor(() => expect(grid.querySelectorAll('[data-call]').length).toBeGreaterThan(10))
      expect(grid.getAttribute('aria-rowcount')).toBe('3000')
      expect(grid.querySelectorAll('[role="row"]').length).toBeLessThan(60)
      const count = screen.getByTestId('calls-count')
      expect(count.textContent).toBe('3,000 of 3,000 calls') // paged by the service, not read from the report
      const row7 = grid.querySelector('[data-call="7"]') as HTMLElement
      expect(row7.dataset.failed).toBe('true')
      expect(row7.textContent).toContain('connect')
      expect(row7.textContent).toContain('-1 ECONNREFUSED')

      await user.click(within(screen.getByRole('group', { name: 'Categories' })).getByRole('button', { name: /network/ }))
      await waitFor(() => expect(grid.getAttribute('aria-rowcount')).toBe(String(Math.floor(2999 / 7))))
      expect([...grid.querySelectorAll('[data-call]')].every((r) => r.textContent?.includes('connect'))).toBe(true)
      await user.click(within(screen.getByRole('group', { name: 'Categories' })).getByRole('button', { name: /network/ }))
      await user.type(screen.getByRole('searchbox', { name: 'Search calls' }), 'PASSWD')
      // Every 50th call that is not a connect (every 350th is one).
      const passwd = Array.from({ length: 3000 }, (_, i) => i).filter((i) => i > 0 && i % 50 === 0 && i % 7 !== 0).length
      await waitFor(() => expect(grid.getAttribute('aria-rowcount')).toBe(String(passwd)))
      await waitFor(() => expect(grid.querySelector('[data-call]')?.textContent).toContain('/etc/passwd'))
      // The details show the first match whole.
      expect(screen.getByRole('region', { name: 'Call details' }).textContent).toMatch(/openat.*call 50 ·/)
    } finally {
      if (height) Object.defineProperty(HTMLElement.prototype, 'clientHeight', height)
    }
  })

  it('shows the server\'s message for a task that does not exist', async () => {
    page('/tasks/999999')
    expect((await screen.findByRole('alert')).textContent).toMatch(/not found/i)
  })
})
