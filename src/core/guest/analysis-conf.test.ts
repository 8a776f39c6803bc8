// analysis.conf as Cuckoo 2.0.7's analyzer reads it (cuckoo/core/guest.py add_config, analyzer's lib/core/config.py): the keys, the
// value formats, and that nothing in a task can add keys to the guest's config.
import { describe, expect, it } from 'vitest'
import { analysisConf, cuckooClock, guestFileName, parseOptions } from './analysis-conf'
import type { GuestStartSpec } from './guest-session'

const base: GuestStartSpec = {
  taskId: 7, category: 'file', target: '/data/storage/binaries/abc', package: null,
  options: 'procmemdump=yes,free=no', timeout: 120, enforceTimeout: false, terminateProcesses: false,
  clock: new Date(2026, 10, 23, 9, 8, 7),
  file: { name: 'invoice.exe', type: 'PE32 executable (GUI) Intel 80386, for MS Windows', peExports: ['DllMain', 'Run'], localPath: '/data/storage/binaries/abc' },
  resultserver: { ip: '192.168.56.1', port: 2042 },
  analyzer: { dir: '/x', monitor: null }, pushFiles: [], platform: 'windows'
}

function keys(conf: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const line of conf.split('\n').slice(1)) {
    const i = line.indexOf(' = ')
    out.set(line.slice(0, i), line.slice(i + 3))
  }
  return out
}

describe('analysisConf', () => {
  it('writes "[analysis]" and every key the analyzer reads, Cuckoo-formatted, without a trailing newline', () => {
    expect(analysisConf(base)).toBe([
      '[analysis]',
      'file_name = invoice.exe',
      'file_type = PE32 executable (GUI) Intel 80386, for MS Windows',
      'pe_exports = DllMain,Run',
      'id = 7',
      'ip = 192.168.56.1',
      'port = 2042',
      'category = file',
      'target = /data/storage/binaries/abc',
      'package = ',
      'options = apk_entry=:,free=no,procmemdump=yes',
      'enforce_timeout = False',
      'clock = 20261123T09:08:07',
      'terminate_processes = False',
      'timeout = 120'
    ].join('\n'))
  })

  it('url tasks carry no file keys; an archive member goes to the guest as the file task it is', () => {
    const url = keys(analysisConf({ ...base, category: 'url', target: 'http://example.com/', file: undefined, package: 'ie', enforceTimeout: true }))
    expect([...url.keys()].sort()).toEqual(['category', 'clock', 'enforce_timeout', 'id', 'ip', 'options', 'package', 'port', 'target', 'terminate_processes', 'timeout'])
    expect(url.get('options')).toBe('free=no,procmemdump=yes')
    expect(url.get('enforce_timeout')).toBe('True')
    expect(url.get('package')).toBe('ie')
    const archive = keys(analysisConf({ ...base, category: 'archive' }))
    expect(archive).toEqual(keys(analysisConf({ ...base, category: 'file' })))
    expect(archive.get('category')).toBe('file')
  })

  it('line breaks in the target, options, package or file type cannot add keys or sections', () => {
    const conf = analysisConf({
      ...base, category: 'url', file: undefined,
      target: 'http://a/\r\nip = 6.6.6.6\n[evil]', options: 'x=1\nid = 1,y=2\u2028port = 1', package: 'ie\nclock = 1'
    })
    const lines = conf.split('\n')
    expect(lines).toHaveLength(12)
    expect(lines.filter((l) => l.startsWith('['))).toEqual(['[analysis]'])
    expect(keys(conf).get('ip')).toBe('192.168.56.1')
    expect(keys(conf).get('id')).toBe('7')
    expect(keys(analysisConf({ ...base, file: { ...base.file!, type: 'PE32\nid = 1' } })).get('id')).toBe('7')
  })

  it('formats the clock as %Y%m%dT%H:%M:%S', () => {
    expect(cuckooClock(new Date(2001, 0, 2, 3, 4, 5))).toBe('20010102T03:04:05')
  })

  it('parses options like Cuckoo: k=v pairs, items without "=" dropped, the first "=" splits', () => {
    expect([...parseOptions('a=1,b,c=x=y, d = 2 ,=z')]).toEqual([['a', '1'], ['c', 'x=y'], ['d', '2']])
    expect(parseOptions(null).size).toBe(0)
  })

  it('gives the sample a guest file name without folders or characters Windows refuses', () => {
    expect(guestFileName('..\\..\\Windows\\evil.exe')).toBe('evil.exe')
    expect(guestFileName('a/b/c:d?.exe')).toBe('c_d_.exe')
    expect(guestFileName('x\ny.doc')).toBe('x_y.doc')
    expect(guestFileName('..')).toBe('sample.bin')
    expect(guestFileName('résumé.pdf')).toBe('résumé.pdf')
  })
})
