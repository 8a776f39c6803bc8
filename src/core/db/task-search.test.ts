// The task search on a real SQLite file: every kind of term, plain text, several terms, sorting,
// the status and category filters, hostile values, and what other connections write. Terms are
// written through TaskTermsRepository as processing writes them (search-index.test.ts makes them
// from real processed reports).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase, type Db } from './database'
import { TaskSearch, type SearchQuery } from './task-search'
import { TaskTermsRepository } from './task-terms.repository'
import { SearchSyntaxError } from '../../shared/search-query'
import { reportTerms } from '../search/report-terms'

const MD5 = '0123456789abcdef0123456789abcdef'
const SHA256 = 'fedcba9876543210'.repeat(4)
const DROPPED = { md5: 'aa'.repeat(16), sha1: 'bb'.repeat(20), sha256: 'cc'.repeat(32) }

describe('TaskSearch', () => {
  let dir: string
  let db: Db
  let search: TaskSearch
  let terms: TaskTermsRepository
  const insert = (target: string, o: { status?: string; tags?: string[]; machine?: string; score?: number; added?: string; sample?: number; conn?: Database.Database } = {}) =>
    Number((o.conn ?? db).prepare(`INSERT INTO tasks (category, target, clock, added_on, status, tags, machine, score, sample_id)
      VALUES (?, ?, '2026-01-01 00:00:00', ?, ?, ?, ?, ?, ?)`)
      .run(target.startsWith('http') ? 'url' : target.endsWith('.zip!') ? 'archive' : 'file', target, o.added ?? '2026-01-01 00:00:00',
        o.status ?? 'pending', JSON.stringify(o.tags ?? []), o.machine ?? null, o.score ?? null, o.sample ?? null).lastInsertRowid)
  const find = (q: string, more: Partial<SearchQuery> = {}) => search.search({ q, offset: 0, limit: 100, order: 'asc', ...more }).ids
  const index = (id: number, report: unknown) => terms.replace(id, reportTerms(report).terms)

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-search-'))
    db = openDatabase(path.join(dir, 'aviary.db'))
    search = new TaskSearch(db)
    terms = new TaskTermsRepository(db)
  })
  afterEach(() => {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('finds a task by its file name or URL in any case, Unicode included, never by the folders of the stored path', () => {
    const a = insert('/data/storage/uploads/abc/Setup Ü.EXE')
    const b = insert('http://Example.COM/a/b')
    const c = insert('/data/storage/uploads/def/x')
    expect(find('setup')).toEqual([a])
    expect(find('ü.e')).toEqual([a]) // the trigram index folds Unicode case
    expect(find('Ü')).toEqual([a]) // one character: GLOB over both cases
    expect(find('example.com/A')).toEqual([b])
    expect(find('name:"setup ü.exe"')).toEqual([a])
    expect(find('x')).toEqual([a, b, c]) // .EXE and Example have one too
    expect(find('uploads')).toEqual([])
    expect(find('abc')).toEqual([])
  })

  it('finds each kind of report term: domains by themselves and their parents, IPs, URLs, signatures, dropped hashes', () => {
    const a = insert('/u/h/a.exe', { status: 'reported' })
    const b = insert('/u/h/b.exe', { status: 'reported' })
    index(a, {
      network: {
        domains: [{ domain: 'C2.Evil.example.com', ip: '203.0.113.7' }], hosts: ['198.51.100.1'],
        http: [{ uri: 'http://c2.evil.example.com/gate.php?id=7', host: 'c2.evil.example.com' }],
        tcp: [{ dst: '2001:DB8:0:0:0:0:0:1' }]
      },
      signatures: [{ name: 'antivm_generic_disk', families: ['Emotet'] }],
      dropped: [DROPPED]
    })
    index(b, { network: { domains: [{ domain: 'example.com', ip: '' }] }, signatures: [{ name: 'antivm_cpuid', families: [] }] })
    expect(find('domain:c2.evil.example.com')).toEqual([a])
    expect(find('domain:EVIL.example.com.')).toEqual([a])
    expect(find('domain:example.com')).toEqual([a, b])
    expect(find('domain:https://evil.example.com/x')).toEqual([a])
    expect(find('domain:vil.example.com')).toEqual([]) // whole labels only
    expect(find('ip:203.0.113.7')).toEqual([a])
    expect(find('ip:203.000.113.007')).toEqual([a])
    expect(find('ip:198.51.100.1')).toEqual([a])
    expect(find('ip:2001:db8::1')).toEqual([a])
    expect(find('ip:203.0.113.70')).toEqual([])
    expect(find('url:c2.evil.example.com/gate.php?id=7')).toEqual([a])
    expect(find('url:https://C2.evil.example.com/gate.php')).toEqual([a]) // without its query; the scheme is not compared
    expect(find('url:c2.evil.example.com/gate')).toEqual([])
    expect(find('sig:antivm')).toEqual([a, b])
    expect(find('sig:antivm_generic')).toEqual([a])
    expect(find('sig:ANTIVM_GENERIC_DISK')).toEqual([a])
    expect(find('sig:emotet')).toEqual([a])
    expect(find('sig:antiv')).toEqual([]) // starts at '_' only
    expect(find(`hash:${DROPPED.md5}`)).toEqual([a])
    expect(find(`hash:${DROPPED.sha256.slice(0, 8)}`)).toEqual([a])
    expect(find(`hash:${DROPPED.sha1.toUpperCase()}`)).toEqual([a])
  })

  it('plain text is every kind it can be; several terms must all match', () => {
    db.prepare(`INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
      VALUES (1, 'data', ?, '0', ?, ?, ?, NULL, '2026-01-01 00:00:00')`).run(MD5, '1'.repeat(40), SHA256, '2'.repeat(128))
    const a = insert('/u/h/a.exe', { status: 'reported', tags: ['Win7', 'x64'], machine: 'vm1', sample: 1 })
    const b = insert('/u/h/b.exe', { status: 'reported', tags: ['win10'] })
    const c = insert('http://evil.example/', { status: 'reported' })
    db.prepare(`INSERT INTO guests (task_id, name, label, manager, status, started_on) VALUES (?, 'cuckoo1', 'Win10-Label', 'kvm', 'stopped', '2026-01-01 00:00:00')`).run(b)
    index(a, { network: { domains: [{ domain: 'evil.example', ip: '203.0.113.7' }] }, signatures: [{ name: 'network_http', families: [] }], dropped: [DROPPED] })
    index(b, { network: { http: [{ uri: 'http://other.example/evil.example', host: 'other.example' }] } })
    expect(find('evil.example')).toEqual([a, c]) // a's domain, c's URL; b only has it in a path
    expect(find('203.0.113.7')).toEqual([a])
    expect(find('network_http')).toEqual([a])
    expect(find('network')).toEqual([a])
    expect(find(DROPPED.md5)).toEqual([a])
    expect(find(MD5.slice(0, 6))).toEqual([a])
    expect(find('other.example/evil.example')).toEqual([b])
    expect(find('WIN7')).toEqual([a])
    expect(find('tag:x64')).toEqual([a])
    expect(find('tag:x6')).toEqual([]) // a tag is whole
    expect(find('machine:VM1')).toEqual([a])
    expect(find('machine:cuckoo1')).toEqual([b])
    expect(find('machine:win10-label')).toEqual([b])
    expect(find(String(b))).toEqual([b])
    expect(find(`id:${c}`)).toEqual([c])
    expect(find('evil.example network_http')).toEqual([a])
    expect(find('evil.example tag:win10')).toEqual([])
    expect(find('   ')).toEqual([a, b, c])
  })

  it('sorts by score (no score lowest), time added or id, and filters by category and status', () => {
    const a = insert('/u/h/a.exe', { status: 'reported', score: 2.5, added: '2026-01-03 00:00:00' })
    const b = insert('http://b.example/', { status: 'reported', score: 9, added: '2026-01-01 00:00:00' })
    const c = insert('/u/h/c.zip!', { status: 'pending', added: '2026-01-02 00:00:00' })
    const d = insert('/u/h/d.exe', { status: 'reported', score: 2.5, added: '2026-01-02 00:00:00' })
    expect(find('', { sort: 'score', order: 'desc' })).toEqual([b, d, a, c])
    expect(find('', { sort: 'score', order: 'asc' })).toEqual([c, a, d, b])
    expect(find('', { sort: 'added', order: 'desc' })).toEqual([a, d, c, b])
    expect(find('', { sort: 'id', order: 'desc' })).toEqual([d, c, b, a])
    expect(find('', { categories: ['file'] })).toEqual([a, d])
    expect(find('', { categories: ['url', 'archive'] })).toEqual([b, c])
    expect(find('.exe', { sort: 'score', order: 'desc', statuses: ['reported'] })).toEqual([d, a])
    expect(search.search({ sort: 'score', order: 'desc', offset: 1, limit: 2 })).toEqual({ ids: [d, a], total: 4 })
    expect(search.search({ q: '.exe', sort: 'score', order: 'desc', offset: 5, limit: 2 })).toEqual({ ids: [], total: 2 })
    expect(search.search({ q: '.exe', offset: 0, limit: 0, order: 'asc' })).toEqual({ ids: [], total: 2 })
  })

  it('hostile names and terms: long, Unicode, bidi, and what SQL, LIKE, GLOB and FTS5 would read as syntax', () => {
    const rlo = 'invoice\u202Egpj.exe'
    const a = insert(`/u/h/${rlo}`)
    const b = insert('/u/h/50%_off[1]*?.exe', { tags: ['50%_x', 'q"uote'] })
    const c = insert('/u/h/") OR 1=1 -- NEAR(a b).exe')
    const long = `${'a'.repeat(600)}.example`
    index(a, {
      network: { dns: [{ request: `evil\u202Ecom.example`, type: 'A', answers: [] }, { request: 'пример.испытание', type: 'A', answers: [] }],
        http: [{ uri: `http://x.example/${'p'.repeat(5000)}`, host: long }] },
      signatures: [{ name: 'x'.repeat(300), families: [] }, { name: 'sig\u0000nul', families: [] }]
    })
    expect(find(rlo)).toEqual([a])
    expect(find('\u202E')).toEqual([a])
    expect(find('%_')).toEqual([b])
    expect(find('[1]')).toEqual([b])
    expect(find('*')).toEqual([b])
    expect(find('?')).toEqual([b])
    expect(find('tag:50%_x')).toEqual([b])
    expect(find('tag:50%')).toEqual([])
    expect(find('tag:q"uote')).toEqual([b])
    expect(find('") OR 1=1 --')).toEqual([c])
    expect(find('NEAR(a')).toEqual([c])
    expect(find('"')).toEqual([a, b, c]) // an empty quoted term: no filter
    expect(find('name:"NEAR(a b).exe')).toEqual([c]) // a quote left open runs to the end
    expect(find(`domain:evil\u202Ecom.example`)).toEqual([a]) // kept as written, found as written
    expect(find('domain:пример.испытание')).toEqual([a]) // the report's name and the query both as punycode
    expect(find('domain:xn--e1afmkfd.xn--80akhbyknj4f')).toEqual([a])
    // A URL longer than the index keeps is cut there, and so is the query: its start still finds it.
    expect(find(`url:http://x.example/${'p'.repeat(5000)}`)).toEqual([a])
    expect(find(`url:x.example/${'p'.repeat(600)}`)).toEqual([a])
    const kept = terms.list(a)
    expect(kept.every((t) => t.term.length <= 512)).toBe(true)
    expect(kept.some((t) => t.kind === 'domain' && t.term.includes('aaaa'))).toBe(false) // 609 characters: no host name
    expect(kept.some((t) => t.kind === 'sig' && t.term.includes('\u0000'))).toBe(false)
    expect(find('q'.repeat(1024))).toEqual([])
    // Never an SQL error (a 5xx): at most a query its kinds cannot mean.
    for (const q of ['a\u0000b', '\u0000', '\ud800', 'abc\ud800', '""""', '"a"b"c"', 'NEAR("a")', '*:*', 'name:\u0000x\u0000', 'domain:\ud800.com',
      'url:\ud800', 'sig:\ud800', 'tag:\ud800', 'machine:\u0000', '\\', 'ip:[::1]', 'ip:::', 'url:http://[', 'domain:.', `name:${'\u202e'.repeat(500)}`]) {
      try {
        find(q)
      } catch (err) {
        expect(err, JSON.stringify(q)).toBeInstanceOf(SearchSyntaxError)
      }
    }
    expect(find('a\u0000b')).toEqual([])
  })

  it('refuses a query its kinds cannot mean, saying what each wants', () => {
    for (const [q, message] of [
      ['hash:xyz123', /^hash: wants an md5/], ['hash:abcde', /^hash: /], ['ip:1.2.3.256', /^ip: wants an IPv4 or IPv6 address/],
      ['ip:evil.com', /^ip: /], ['id:12a', /^id: wants a task id/], ['domain:1.2.3.4', /^domain: '1.2.3.4' is an address: ip:1.2.3.4 finds it/],
      ['domain:"a b"', /^domain: wants/], ['tag:', /^tag: wants a value/], ['name:""', /^name: wants a value/],
      ['a b c d e f g h i', /^at most 8 terms/], [`sig:${'s'.repeat(201)}`, /^sig: /]
    ] as const) {
      expect(() => find(q), q).toThrow(SearchSyntaxError)
      expect(() => find(q), q).toThrow(message)
    }
    expect(find('http://not-a-kind.example/')).toEqual([]) // a scheme is no kind: plain text
  })

  it('says a kind it does not know, and takes URLs, IPv6 addresses, drive letters and ports as text', () => {
    expect(() => find('signatur:antivm')).toThrow(/^'signatur:' is not a search kind \(kinds: domain, ip, url, sig, alert, hash, name, file, command, mutex, key, tag, machine, id\)$/)
    expect(() => find('evil.com foo:bar')).toThrow(SearchSyntaxError)
    for (const q of ['http://a.example/', 'fe80::1', 'dead:beef::1', 'C:\\x', 'localhost:8080']) expect(() => find(q), q).not.toThrow()
  })

  it("takes Cuckoo's and CAPE's spellings of the kinds", () => {
    const a = insert('/u/h/a.exe', { status: 'reported' })
    insert('/u/h/b.exe', { status: 'reported' })
    index(a, { signatures: [{ name: 'starts_shell' }], network: { domains: [{ domain: 'c2.example' }] }, dropped: [DROPPED] })
    for (const q of ['signature:starts_shell', 'SIGNAME:starts_shell', 'sig:starts', 'host:c2.example', `md5:${DROPPED.md5}`, `sha256:${DROPPED.sha256}`]) {
      expect(find(q), q).toEqual([a])
    }
  })

  it('finds what the run touched: file:, path:, command:, mutex:, key:, and plain text', () => {
    const a = insert('/u/h/a.sh', { status: 'reported' })
    const b = insert('/u/h/b.sh', { status: 'reported' })
    index(a, { behavior: { summary: { file_written: ['/tmp/update.bin', '/etc/cron.d/crontab.txt'], mutex: ['Global\\M1'], regkey_written: ['HKCU\\Software\\Run'] },
      processes: [{ command_line: '/usr/bin/curl -o /tmp/update.bin http://e.example/' }] } })
    index(b, { behavior: { summary: { file_opened: ['/etc/passwd'] } } })
    expect(find('file:crontab.txt')).toEqual([a])
    expect(find('file:/tmp/update.bin')).toEqual([a])
    expect(find('path:/etc/passwd')).toEqual([b])
    expect(find('crontab.txt')).toEqual([a])
    expect(find('/tmp/update.bin')).toEqual([a])
    expect(find('command:curl')).toEqual([a])
    expect(find('command:"/usr/bin/curl -o /tmp/update.bin http://e.example/"')).toEqual([a])
    expect(find('mutex:global\\m1')).toEqual([a])
    expect(find('key:HKCU\\Software\\Run')).toEqual([a])
    expect(find('file:update.bin command:curl')).toEqual([a])
  })

  it("finds an archive's members by the archive's name (option archive=), its name staying the member's", () => {
    const member = Number(db.prepare(`INSERT INTO tasks (category, target, clock, added_on, status, tags, options)
      VALUES ('archive', '/u/h/inner1.sh', '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'pending', '[]', 'archive=two.zip,filename=dir/inner1.sh')`).run().lastInsertRowid)
    const other = insert('/u/h/readme.txt')
    expect(find('two.zip')).toEqual([member])
    expect(find('name:two')).toEqual([member])
    expect(find('inner1')).toEqual([member])
    expect(find('readme')).toEqual([other])
  })

  it('sees what another connection writes, names included (SQL triggers), and drops terms with their task', () => {
    const other = new Database(path.join(dir, 'aviary.db'))
    try {
      const a = insert('http://two.example/', { conn: other })
      expect(find('two.example')).toEqual([a])
      other.prepare("UPDATE tasks SET target = 'http://three.example/' WHERE id = ?").run(a)
      expect(find('two.example')).toEqual([])
      expect(find('three.example')).toEqual([a])
      index(a, { network: { domains: [{ domain: 'gone.example', ip: '' }] } })
      expect(find('domain:gone.example')).toEqual([a])
      // Another connection, without foreign keys: a trigger takes the terms with the task all the same.
      other.prepare('DELETE FROM tasks WHERE id = ?').run(a)
      expect(find('domain:gone.example')).toEqual([])
      expect(search.search({ q: 'domain:gone.example', offset: 0, limit: 10, order: 'desc' }).total).toBe(0)
      expect(db.prepare('SELECT count(*) FROM task_terms WHERE task_id = ?').pluck().get(a)).toBe(0)
      expect(find('three.example')).toEqual([])
      // Tags become terms at insert, whichever connection inserts (what is not a string of 1-512 characters is skipped).
      const tagged = insert('/u/h/t.exe', { tags: ['Lab', 'x'.repeat(600), 'ÜBER'], conn: other })
      const odd = Number(other.prepare(`INSERT INTO tasks (category, target, clock, added_on, tags) VALUES ('file', '/u/h/o', '', '', '[1, null, {"a": "b"}, "ok"]')`).run().lastInsertRowid)
      expect(find('tag:LAB')).toEqual([tagged])
      expect(find('tag:ÜBER')).toEqual([tagged]) // SQL folds ASCII only, and so does the query
      expect(find('tag:über')).toEqual([])
      expect(db.prepare("SELECT count(*) FROM task_terms WHERE kind = 'tag' AND task_id IN (?, ?)").pluck().get(tagged, odd)).toBe(3) // lab, über, ok
      expect(find('tag:ok')).toEqual([odd])
      other.prepare(`UPDATE tasks SET tags = '["lab2"]' WHERE id = ?`).run(tagged)
      expect(find('tag:lab')).toEqual([])
      expect(find('tag:lab2')).toEqual([tagged])
      index(tagged, { network: { domains: [{ domain: 'tagged.example' }] } }) // a report's terms leave the tags be
      expect(find('tag:lab2 domain:tagged.example')).toEqual([tagged])
      // This service's connection (foreign keys on): the terms go with the task.
      const b = insert('/u/h/b.exe')
      index(b, { network: { domains: [{ domain: 'gone.example', ip: '' }] } })
      expect(terms.list(b)).not.toEqual([])
      db.prepare('DELETE FROM tasks WHERE id = ?').run(b)
      expect(db.prepare('SELECT count(*) FROM task_terms WHERE task_id = ?').pluck().get(b)).toBe(0)
      expect(terms.replace(b, [{ kind: 'domain', term: 'late.example' }])).toBe(false) // a deleted task gets no terms
    } finally {
      other.close()
    }
  })

  it('answers the same whichever way a query is read (a term\'s own index, a walk of the sort\'s index, the general plan)', () => {
    // 600 tasks: scores with ties and gaps, three categories, two statuses; a dense term (9 in 10
    // tasks), a sparse one (1 in 50), a name in a third of them, a tag, a machine asked for or run
    // on. Expected answers computed here.
    let seed = 7
    const rnd = (n: number) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n }
    const tasks = Array.from({ length: 600 }, (_, i) => {
      const score = rnd(4) === 0 ? null : rnd(20) / 2
      const added = `2026-01-${String(1 + rnd(28)).padStart(2, '0')} 00:00:00`
      const status = rnd(3) === 0 ? 'pending' : 'reported'
      const target = i % 3 === 0 ? `http://u${i}.example/` : i % 3 === 1 ? `/u/h/half-${i}.exe` : `/u/h/other-${i}.zip!`
      const id = insert(target, { status, score: score ?? undefined, added, tags: i % 7 === 0 ? ['T1'] : [], machine: i % 11 === 0 ? 'VmA' : undefined })
      if (i % 13 === 0) db.prepare(`INSERT INTO guests (task_id, name, label, manager, status, started_on) VALUES (?, 'vma', 'x', 'kvm', 'stopped', '')`).run(id)
      const dense = rnd(10) !== 0
      const sparse = rnd(50) === 0
      index(id, { network: { domains: [...(dense ? [{ domain: 'dense.example' }] : []), ...(sparse ? [{ domain: 'sparse.example' }] : [])] } })
      return { id, score, added, status, category: target.startsWith('http') ? 'url' : target.endsWith('!') ? 'archive' : 'file', dense, sparse, half: i % 3 === 1,
        tag: i % 7 === 0, machine: i % 11 === 0 || i % 13 === 0 }
    })
    type T = (typeof tasks)[number]
    const cmp = { id: (a: T, b: T) => a.id - b.id, score: (a: T, b: T) => ((a.score ?? -1) - (b.score ?? -1)) || a.id - b.id, added: (a: T, b: T) => a.added.localeCompare(b.added) || a.id - b.id }
    for (const [q, match] of [['domain:dense.example', (t: T) => t.dense], ['domain:sparse.example', (t: T) => t.sparse], ['half-', (t: T) => t.half],
      ['tag:t1', (t: T) => t.tag], ['machine:VMA', (t: T) => t.machine], ['domain:dense.example tag:t1', (t: T) => t.dense && t.tag],
      ['half- machine:vma domain:dense.example', (t: T) => t.half && t.machine && t.dense], ['', () => true]] as const) {
      for (const sort of ['id', 'score', 'added'] as const) {
        for (const order of ['asc', 'desc'] as const) {
          for (const [statuses, categories] of [[undefined, undefined], [['reported'], undefined], [undefined, ['file', 'archive']]] as const) {
            const want = tasks.filter((t) => match(t) && (!statuses || statuses.includes(t.status as 'reported')) && (!categories || (categories as readonly string[]).includes(t.category)))
              .sort(cmp[sort]).map((t) => t.id)
            if (order === 'desc') want.reverse()
            for (const [offset, limit] of [[0, 10], [37, 25], [want.length - 3, 10], [want.length + 5, 10], [0, 0]] as [number, number][]) {
              const got = search.search({ q, sort, order, offset, limit, statuses: statuses as never, categories: categories as never })
              expect(got, JSON.stringify({ q, sort, order, statuses, categories, offset, limit })).toEqual({ ids: want.slice(offset, offset + limit), total: want.length })
            }
          }
        }
      }
    }
  })

  it('replaces a task\'s terms whole (a rereport)', () => {
    const a = insert('/u/h/a.exe')
    index(a, { network: { domains: [{ domain: 'first.example', ip: '' }] } })
    index(a, { network: { domains: [{ domain: 'second.example', ip: '' }] } })
    expect(find('domain:first.example')).toEqual([])
    expect(find('domain:second.example')).toEqual([a])
  })
})
