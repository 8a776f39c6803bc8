// report.html on a realistic report with every section filled and hostile strings everywhere:
// the page is well-formed (every tag balanced), uses only a known set of tags and attributes, loads
// nothing (no scripts, no URLs in attributes, images only as data: URIs), shows hostile text escaped
// and invisible characters visibly, embeds at most 24 screenshot thumbnails, and stays small for a
// report with 100,000 processes and DNS entries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import sharp from 'sharp'
import { renderHtmlReport } from './render'
import { text } from './escape'
import { runSignatures } from '../../processing/signatures/engine'

const HOSTILE = '</script><script>alert(1)</script><img src=x onerror=alert(2)>"\' onmouseover="alert(3)'
const BIDI = 'invoice\u202Egpj.exe'
let dir = ''
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-html-'))
  mkdirSync(path.join(dir, 'shots'))
  mkdirSync(path.join(dir, 'reports'))
  // 30 shots; the first 10 have their thumbnail already, the others need one made.
  for (let i = 1; i <= 30; i++) {
    const name = String(i).padStart(4, '0')
    const img = sharp({ create: { width: 1024, height: 768, channels: 3, background: { r: 8 * i, g: 90, b: 160 } } })
    await img.clone().jpeg().toFile(path.join(dir, 'shots', `${name}.jpg`))
    if (i <= 10) await img.clone().resize(320, 240).jpeg().toFile(path.join(dir, 'shots', `${name}_small.jpg`))
  }
})
afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

function realistic(): Record<string, unknown> {
  const tree = { pid: 1200, ppid: 1, process_name: BIDI, command_line: `C:\\Users\\a\\AppData\\Local\\Temp\\${BIDI} ${HOSTILE}`, first_seen: 1763900001.5, track: true,
    children: [{ pid: 1300, ppid: 1200, process_name: 'cmd.exe', command_line: 'cmd.exe /c "del invoice.exe & schtasks /create /tn x"', first_seen: 1763900002, track: true,
      children: [{ pid: 1400, ppid: 1300, process_name: 'powershell.exe', command_line: 'powershell -enc SQBFAFgA\u0000\u001b[31m', first_seen: 1763900003, track: true, children: [] }] }] }
  const report: Record<string, unknown> = {
    info: { id: 42, version: '2.0.7', started: 1763900000.25, ended: 1763900120.75, duration: 120, package: 'exe', platform: 'windows',
      machine: { name: 'win10-1', label: 'win10-1', manager: 'kvm' }, score: 0 },
    target: { category: 'file', file: { name: BIDI, size: 123456, md5: 'd41d8cd98f00b204e9800998ecf8427e', sha1: 'da39a3ee5e6b4b0d3255bfef95601890afd80709',
      sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', sha512: 'cf83e1357eefb8bdf1542850d66d8007', ssdeep: '3:abc:def',
      type: 'PE32 executable (GUI) Intel 80386, for MS Windows', yara: [{ name: 'UPX_packed', meta: { description: HOSTILE }, strings: [], offsets: {} }] } },
    static: {
      pe_timestamp: '2024-01-02 03:04:05', pe_imphash: 'f34d5f2d4577ed6d9ceec516c1f5a744', signature: [], imported_dll_count: 2,
      pe_sections: [{ name: '.text', virtual_address: '0x00001000', virtual_size: '0x00002000', size_of_data: '0x00002000', entropy: 6.2 },
        { name: 'UPX1', virtual_address: '0x00003000', virtual_size: '0x00010000', size_of_data: '0x00010000', entropy: 7.93 }],
      pe_imports: [{ dll: 'KERNEL32.dll', imports: [{ name: 'CreateFileW', address: '0x1' }, { name: 'WriteFile', address: '0x2' }] }, { dll: 'WS2_32.dll', imports: [{ ordinal: 23 }] }],
      pe_exports: [], pe_versioninfo: [{ name: 'CompanyName', value: HOSTILE }]
    },
    strings: ['This program cannot be run in DOS mode', HOSTILE, 'VBoxService'],
    behavior: {
      processes: [{ pid: 1200, ppid: 1, process_name: BIDI, process_path: `C:\\Users\\a\\AppData\\Local\\Temp\\${BIDI}`, command_line: tree.command_line, calls: [] },
        { pid: 1300, ppid: 1200, process_name: 'cmd.exe', process_path: 'C:\\Windows\\System32\\cmd.exe', command_line: tree.children[0]!.command_line, calls: [
          { api: 'NtWriteVirtualMemory', arguments: { process_handle: '0x1c4', buffer: HOSTILE } }, { api: 'NtQueueApcThread', arguments: { thread_handle: '0x1c8' } }] }],
      processtree: [tree],
      summary: { file_created: ['C:\\Users\\a\\AppData\\Roaming\\Microsoft\\Windows\\Start Menu\\Programs\\Startup\\u.lnk', 'C:\\Users\\a\\AppData\\Local\\Temp\\payload.dll'],
        file_deleted: [`C:\\Users\\a\\AppData\\Local\\Temp\\${BIDI}`], command_line: [tree.command_line], connects_ip: ['45.33.32.156'] }
    },
    network: {
      hosts: ['45.33.32.156', '93.184.216.34'],
      domains: [{ domain: 'example.com', ip: '93.184.216.34' }],
      dns: [{ request: 'example.com', type: 'A', answers: [{ type: 'A', data: '93.184.216.34' }] }, { request: `${HOSTILE}.evil`, type: 'TXT', answers: [{ type: 'TXT', data: HOSTILE }] }],
      http: [{ host: '45.33.32.156', port: 80, uri: '/gate.php?id=1&x="><svg onload=alert(4)>', method: 'POST', 'user-agent': `Mozilla/4.0 ${HOSTILE}`, data: 'POST /gate.php', count: 1 },
        { host: 'example.com', port: 8080, uri: 'javascript:alert(5)', method: 'GET', 'user-agent': 'curl/8.5.0' }],
      tls: [{ sni: 'cdn.example.net', dst: '93.184.216.34', dport: 443 }],
      tcp: [{ src: '10.0.0.2', sport: 49152, dst: '45.33.32.156', dport: 80, time: 1.25, bytes_sent: 512, bytes_received: 2048 }],
      udp: [{ src: '10.0.0.2', sport: 53000, dst: '10.0.0.1', dport: 53, time: 0.5, bytes: 80 }]
    },
    dropped: [{ name: 'payload.dll', path: '/data/files/0123_payload.dll', filepath: 'C:\\Users\\a\\AppData\\Local\\Temp\\payload.dll', size: 65536,
      type: 'PE32 executable (DLL) (GUI) Intel 80386, for MS Windows', sha256: 'a'.repeat(64), yara: [{ name: 'Cobalt_Beacon', meta: {}, strings: [], offsets: {} }] }],
    screenshots: Array.from({ length: 30 }, (_, i) => ({ path: path.join(dir, 'shots', `${String(i + 1).padStart(4, '0')}.jpg`), ocr: '' })),
    procmemory: [{ file: path.join(dir, 'memory', '1200-1.dmp'), pid: 1200, num: 1, size: 4096, yara: [], urls: ['http://evil.example/c2'] }],
    debug: { errors: ['network: truncated packet at offset 1234'] }
  }
  const { signatures, score } = runSignatures(report)
  report.signatures = signatures
  ;(report.info as Record<string, unknown>).score = score
  return report
}

const VOID = new Set(['meta', 'br', 'img'])
const TAGS = new Set(['html', 'head', 'meta', 'title', 'style', 'body', 'header', 'main', 'section', 'div', 'h1', 'h2', 'h3', 'p', 'b', 'span', 'code',
  'table', 'thead', 'tbody', 'tr', 'th', 'td', 'ul', 'li', 'br', 'details', 'summary', 'figure', 'figcaption', 'img', 'pre'])
const ATTRS = new Set(['lang', 'charset', 'http-equiv', 'content', 'name', 'class', 'title', 'id', 'alt', 'src'])

interface Tag { close: boolean; name: string; attrs: [string, string][] }

/** A strict tokenizer for this page: text never holds '<' (it is escaped), so every '<' starts a tag. */
function tokenize(html: string): Tag[] {
  const body = html.replace(/^<!DOCTYPE html>\n/, '').replace(/<style>[^<]*<\/style>/, '<style></style>')
  const tags: Tag[] = []
  const re = /<(\/?)([a-z][a-z0-9]*)((?:\s+[a-z-]+="[^"<]*")*)\s*>/g
  let m: RegExpExecArray | null
  let matched = 0
  while ((m = re.exec(body)) !== null) {
    matched += m[0].length
    const attrs = [...(m[3] ?? '').matchAll(/([a-z-]+)="([^"]*)"/g)].map((a) => [a[1]!, a[2]!] as [string, string])
    tags.push({ close: m[1] === '/', name: m[2]!, attrs })
  }
  // Every '<' of the page is one of the tags matched above.
  expect(body.split('<').length - 1).toBe(tags.length)
  expect(matched).toBeGreaterThan(0)
  return tags
}

function checkStructure(html: string): Tag[] {
  const tags = tokenize(html)
  const open: string[] = []
  for (const t of tags) {
    expect(TAGS.has(t.name), t.name).toBe(true)
    for (const [a] of t.attrs) expect(ATTRS.has(a), `${t.name} ${a}`).toBe(true)
    if (t.close) expect(open.pop()).toBe(t.name)
    else if (!VOID.has(t.name)) open.push(t.name)
  }
  expect(open).toEqual([])
  return tags
}

describe('renderHtmlReport', () => {
  it('renders every section of a realistic hostile report as a safe, self-contained page', async () => {
    const report = realistic()
    const out = path.join(dir, 'reports', 'report.html')
    await renderHtmlReport(report, { dir, out })
    const html = readFileSync(out, 'utf8')
    const tags = checkStructure(html)

    // Loads nothing: CSP meta, no script/link/iframe/a, every src a data: JPEG, no URL in any attribute.
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">`)
    for (const t of tags) {
      for (const [a, v] of t.attrs) {
        if (a === 'src') expect(v).toMatch(/^data:image\/jpeg;base64,[A-Za-z0-9+/]+=*$/)
        else expect(v).not.toMatch(/(https?|javascript|file|ftp):/i)
      }
    }
    expect(html).not.toMatch(/<script|<a\s|<link|<iframe|<object|<embed|<base|<form|url\(/i)

    // Hostile text is escaped; invisible characters are shown, never applied or left raw.
    expect(html).toContain(text(HOSTILE))
    expect(html).toContain('&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&quot;&#39; onmouseover=&quot;alert(3)')
    expect(html).toContain('invoice⟨U+202E⟩gpj.exe')
    expect(html).toContain('SQBFAFgA⟨U+0000⟩⟨U+001B⟩[31m')
    // eslint-disable-next-line no-control-regex -- looking for raw control characters is the point
    expect(html).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/)

    // Sections and facts.
    for (const id of ['signatures', 'behavior', 'network', 'dropped', 'static', 'memory', 'screenshots', 'errors']) expect(html).toContain(`<section id="${id}">`)
    expect(html).toContain('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
    // 4 dangers + 5 warnings + 1 info = 23 → 23 / 5 = 4.6 (Cuckoo's formula).
    expect(html).toContain('<div class="score s-medium" title="score 4.6 of 10: medium"><b>4.6</b>score</div>')
    // A call mark: pid, API and escaped arguments.
    expect(html).toContain(`<span class="tag">call</span>pid 1300 · <code>NtWriteVirtualMemory(process_handle=0x1c4, buffer=${text(HOSTILE)})</code>`)
    expect(html).toContain('2025-11-23 12:13:20 UTC') // info.started 1763900000.25
    for (const name of ['process_injection', 'deletes_self', 'yara_match', 'persistence_autorun', 'contacts_bare_ip', 'suspicious_http', 'starts_shell', 'drops_executable', 'packed_section'])
      expect(html, name).toContain(`<span class="muted mono">${name}</span>`)
    expect(html.indexOf('sig sev-3')).toBeLessThan(html.indexOf('sig sev-2'))
    expect(html).toContain('<b>powershell.exe</b>') // third level of the tree
    expect(html).toContain('cdn.example.net')
    expect(html).toContain('sent <span title="512 bytes">512 B</span>, received <span title="2048 bytes">2.0 KiB</span>')
    expect(html).toContain('Cobalt_Beacon')
    expect(html).toContain('<code>UPX1</code>')
    expect(html).toContain('KERNEL32.dll')

    // Screenshots: 24 of 30, thumbnails at most 320 px; those without one on disk were made.
    expect(html).toContain('Screenshots (24 of 30)')
    const srcs = tags.filter((t) => t.name === 'img').map((t) => t.attrs.find(([a]) => a === 'src')![1])
    expect(srcs).toHaveLength(24)
    for (const src of [srcs[0]!, srcs[23]!]) {
      const meta = await sharp(Buffer.from(src.slice('data:image/jpeg;base64,'.length), 'base64')).metadata()
      expect(meta.format).toBe('jpeg')
      expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBeLessThanOrEqual(320)
    }
    // Atomic write: no temporary file left next to it.
    expect(readdirSync(path.join(dir, 'reports'))).toEqual(['report.html'])
  })

  it('stays small and readable for 100,000 processes (deep and wide) and 100,000 DNS entries', async () => {
    const N = 100_000
    // One chain 100,000 deep: a recursive renderer would overflow the stack.
    let chain: Record<string, unknown> = { pid: N, ppid: N - 1, process_name: 'x', command_line: 'x', children: [] }
    for (let i = N - 1; i >= 1; i--) chain = { pid: i, ppid: i - 1, process_name: `p${i}`, command_line: `/bin/p${i}`, children: [chain] }
    const wide = Array.from({ length: N }, (_, i) => ({ pid: N + i + 1, ppid: 1, process_name: 'w', command_line: 'w', children: [] }))
    const report = {
      info: { id: 1, score: 10 },
      target: { category: 'file', file: { name: 'a.elf', type: 'ELF 64-bit LSB executable' } },
      static: { elf: { file_header: { class: 'ELF64', machine: 'x86-64', entry: '0x401000' }, sections: [{ name: '.text', type: 'PROGBITS', size: 4096 }], libraries: ['libc.so.6'] } },
      behavior: { processes: [], processtree: [chain, ...wide], summary: {} },
      network: { dns: Array.from({ length: N }, (_, i) => ({ request: `d${i}.example`, type: 'A', answers: [{ type: 'A', data: '1.2.3.4' }] })), tcp: [], udp: [] },
      dropped: []
    }
    const out = path.join(dir, 'reports', 'big.html')
    await renderHtmlReport(report, { dir: path.join(dir, 'nothing'), out })
    const html = readFileSync(out, 'utf8')
    checkStructure(html)
    expect(html.length).toBeLessThan(2_000_000)
    expect(html).toContain('99500 more DNS queries not shown (100000 in all; see report.json).')
    expect(html).toContain(`${N - 64} descendants deeper than 64 levels not shown.`)
    expect(html).toMatch(/\d+ more processes not shown \(\d+ in all; see report\.json\)\./)
    expect(html).toContain('<span class="tag mono">libc.so.6</span>')
    expect(html).toContain('x86-64')
    expect(html).toContain('No screenshots.')
  })
})

describe('renderHtmlReport on odd reports', () => {
  it('renders an empty report and one with wrong types everywhere, well-formed', async () => {
    const odd = { info: { score: 'high', machine: 7, started: 'not a date' }, target: { url: 'http://evil.example/"><script>' }, signatures: [{ severity: 99, marks: 'x' }, 5],
      behavior: { processtree: [{ children: 'no' }, null], summary: { command_line: [1, null] } }, network: { hosts: [{ ip: '1.2.3.4' }, 5], dns: 'x', tcp: [null] },
      dropped: [{ size: -1, yara: [{}] }], static: { elf: { file_header: { class: 'ELF32' }, sections: [{ name: '.text' }], libraries: 'x' }, pdf: { objects: 3 } }, screenshots: [{ path: '../../etc/passwd' }] }
    for (const [name, report] of [['empty', {}], ['odd', odd]] as const) {
      const out = path.join(dir, 'reports', `${name}.html`)
      // No shots/ folder: the report's only screenshot path is the sole candidate.
      await renderHtmlReport(report as Record<string, unknown>, { dir: path.join(dir, 'nothing'), out })
      const html = readFileSync(out, 'utf8')
      checkStructure(html)
      expect(html).not.toContain('<script')
      if (name === 'odd') {
        expect(html).toContain('http://evil.example/&quot;&gt;&lt;script&gt;')
        expect(html).toContain('No screenshots.') // a path that is not shots/NNNN.jpg is ignored
      }
    }
  })
})

describe('an Office document in report.html', () => {
  it('shows each macro module\'s source as lines of escaped text', async () => {
    const code = `Sub AutoOpen()\r\n  x = "${HOSTILE}"\r\n  y = "${BIDI}"\r\nEnd Sub`
    const out = path.join(dir, 'reports', 'office.html')
    await renderHtmlReport({ static: { office: { format: 'ole', vba: ['Macros'], external_targets: [], macros: [
      { stream: 'Macros/VBA/ThisDocument', filename: 'ThisDocument.cls', orig_code: code, deobf: code }
    ] } } }, { dir: path.join(dir, 'nothing'), out })
    const html = readFileSync(out, 'utf8')
    checkStructure(html)
    expect(html).toContain('<p><b>Macros (1)</b></p>')
    const pre = /<pre>([^]*?)<\/pre>/.exec(html)?.[1] ?? ''
    expect(pre.split('\n')).toEqual(['Sub AutoOpen()', `  x = &quot;${text(HOSTILE)}&quot;`, '  y = &quot;invoice⟨U+202E⟩gpj.exe&quot;', 'End Sub'])
    expect(html).not.toContain('<script')
  })
})

describe('a PDF in report.html', () => {
  it('shows each version and its JavaScript as lines of escaped text', async () => {
    const out = path.join(dir, 'reports', 'pdf.html')
    await renderHtmlReport({ static: { pdf: [
      { version: 0, title: BIDI, javascript: [{ orig_code: 'x', beautified: `if (a) {\n  b("${HOSTILE}")\n}`, urls: [] }], counts: { objects: 3 }, urls: [] },
      { version: 1, javascript: [], urls: ['https://u.example/'] }
    ] } }, { dir: path.join(dir, 'nothing'), out })
    const html = readFileSync(out, 'utf8')
    checkStructure(html)
    expect(html).toContain('<h3>PDF, version 0 (original)</h3>')
    expect(html).toContain('<h3>PDF, version 1 (update)</h3>')
    expect(/<pre>([^]*?)<\/pre>/.exec(html)?.[1]?.split('\n')).toEqual(['if (a) {', `  b(&quot;${text(HOSTILE)}&quot;)`, '}'])
    expect(html).toContain('invoice⟨U+202E⟩gpj.exe')
    expect(html).not.toContain('<script')
  })
})

describe('the score in report.html', () => {
  it('uses the app\'s one scale (src/shared/score.ts): a dropper\'s 1.2 is low, never the green of "safe"', async () => {
    const levels: string[] = []
    for (const score of [0, 1.2, 2, 5]) {
      const out = path.join(dir, 'reports', `score-${score}.html`)
      await renderHtmlReport({ info: { id: 1, score } }, { dir: path.join(dir, 'nothing'), out })
      const html = readFileSync(out, 'utf8')
      levels.push(/<div class="score (s-\w+)" title="score ([^"]+)">/.exec(html)?.slice(1).join(' ') ?? '')
      // No rule of the page paints a score green.
      expect(html).not.toMatch(/\.s-\w+ \{[^}]*(#2f855a|green)/)
    }
    expect(levels).toEqual(['s-none 0 of 10: no signature fired', 's-low 1.2 of 10: low', 's-medium 2 of 10: medium', 's-high 5 of 10: high'])
  })
})

describe('text()', () => {
  it('escapes markup, shows invisible characters and lone surrogates, cuts long values', () => {
    expect(text('<a href="x">&\'')).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&#39;')
    expect(text('a\u202Eb\u200Bc\u0085d\uFEFF\u2066')).toBe('a⟨U+202E⟩b⟨U+200B⟩c⟨U+0085⟩d⟨U+FEFF⟩⟨U+2066⟩')
    expect(text('x\ud800y🐦\udc00')).toBe('x⟨U+D800⟩y🐦⟨U+DC00⟩')
    expect(text('é漢字')).toBe('é漢字')
    // The shared set (src/shared/invisible.ts): tag characters are one marker each, not two halves.
    expect(text('a\u{E0041}\u{E007F}b\u2064\u180f')).toBe('a⟨U+E0041⟩⟨U+E007F⟩b⟨U+2064⟩⟨U+180F⟩')
    expect(text('a'.repeat(2500))).toBe('a'.repeat(2000) + ' … (500 more characters)')
    expect(text({ k: '<b>' })).toBe('{&quot;k&quot;:&quot;&lt;b&gt;&quot;}')
  })
})
