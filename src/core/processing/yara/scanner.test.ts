// yaraScan on real files with a real rules folder, checked against the Debian `yara` CLI as the
// oracle for which rules match and at which offsets; rule errors name the file and line; the rules
// are compiled once while the folder is unchanged; a 2 GiB sparse "memory dump" is scanned
// without being read into memory and its match past 2^31 is at the right offset.
import { execFileSync } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, utimesSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadRules, yaraScan, YaraRulesError } from './scanner.js'

let work: string
let rules: string
let sample: string
let dropped: string
let empty: string

const RULES: Record<string, string> = {
  'text.yar': [
    'rule evil_text {',
    '  meta:',
    '    description = "says evil things"',
    '    author = "aviary"',
    '    score = 7',
    '    malicious = true',
    '    tested = false',
    '  strings:',
    '    $a = "EVIL-MARKER"',
    '    $w = "wide-marker" wide',
    '  condition:',
    '    $a or $w',
    '}',
    ''
  ].join('\n'),
  'sub/binary.yara': 'rule mz_and_bytes { strings: $mz = { 4D 5A } $bin = { 00 FF 41 ?? 42 } condition: $mz at 0 and #bin >= 2 }\n',
  'count.yar': 'rule many_markers { condition: filesize > 100 and uint16(0) == 0x5a4d }\nrule never_here { strings: $x = "not-in-any-file" condition: $x }\n',
  'ignored.txt': 'this is not a rule file {'
}

/** The yara CLI's view: rule → identifier → offsets. */
function oracle(file: string): Record<string, Record<string, number[]>> {
  const ruleFiles = Object.keys(RULES).filter((f) => /\.(yar|yara)$/.test(f)).map((f) => join(rules, f))
  let out: string
  try {
    out = execFileSync('yara', ['-s', '-w', ...ruleFiles, file], { encoding: 'utf8' })
  } catch (err) {
    out = String((err as { stdout?: string }).stdout ?? '')
  }
  const res: Record<string, Record<string, number[]>> = {}
  let current: Record<string, number[]> | null = null
  for (const line of out.split('\n')) {
    const head = /^(\w+) /.exec(line)
    const hit = /^0x([0-9a-f]+):\$(\w+):/.exec(line)
    if (hit !== null && current !== null) (current[hit[2] ?? ''] ??= []).push(Number.parseInt(hit[1] ?? '0', 16))
    else if (head !== null) res[head[1] ?? ''] = current = {}
  }
  return res
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'aviary-yara-'))
  rules = join(work, 'rules')
  mkdirSync(join(rules, 'sub'), { recursive: true })
  for (const [name, text] of Object.entries(RULES)) writeFileSync(join(rules, name), text)
  sample = join(work, 'sample.exe')
  writeFileSync(sample, Buffer.concat([
    Buffer.from('MZ'), Buffer.alloc(100, 0x90), Buffer.from([0x00, 0xff, 0x41, 0x07, 0x42]), Buffer.from('..EVIL-MARKER..'),
    Buffer.from('wide-marker', 'utf16le'), Buffer.from([0x00, 0xff, 0x41, 0x99, 0x42]), Buffer.from('EVIL-MARKER')
  ]))
  dropped = join(work, 'dropped.txt')
  writeFileSync(dropped, 'nothing to see, but EVIL-MARKER once\n')
  empty = join(work, 'empty.bin')
  writeFileSync(empty, '')
})
afterAll(() => rmSync(work, { recursive: true, force: true }))

describe('yaraScan', () => {
  it('reports the matches the yara CLI finds, in Cuckoo 2 shape', async () => {
    const missing = join(work, 'missing.bin')
    const res = await yaraScan([sample, dropped, empty, missing], rules)
    expect([...res.keys()]).toEqual([sample, dropped, empty, missing])
    expect(res.get(empty)).toEqual([])
    expect(res.get(missing)).toEqual([])

    for (const file of [sample, dropped]) {
      const truth = oracle(file)
      const ours = res.get(file) ?? []
      expect(ours.map((m) => m.name).sort()).toEqual(Object.keys(truth).sort())
      for (const m of ours) {
        const offsets = Object.fromEntries(Object.entries(m.offsets).map(([id, list]) => [id, list.map(([o]) => o)]))
        expect(offsets).toEqual(truth[m.name])
      }
    }
    const evil = res.get(sample)?.find((m) => m.name === 'evil_text')
    expect(evil?.meta).toEqual({ description: 'says evil things', author: 'aviary', score: 7, malicious: true, tested: false })
    const decoded = (evil?.strings ?? []).map((s) => Buffer.from(s, 'base64'))
    expect(decoded.map((b) => b.toString('latin1')).sort()).toEqual(['EVIL-MARKER', Buffer.from('wide-marker', 'utf16le').toString('latin1')].sort())
    for (const [id, list] of Object.entries(evil?.offsets ?? {})) {
      for (const [, idx] of list) expect(Buffer.from(evil?.strings[idx] ?? '', 'base64').toString('latin1')).toBe(id === 'a' ? 'EVIL-MARKER' : Buffer.from('wide-marker', 'utf16le').toString('latin1'))
    }
    const bin = res.get(sample)?.find((m) => m.name === 'mz_and_bytes')
    expect((bin?.strings ?? []).map((s) => Buffer.from(s, 'base64').toString('hex')).sort()).toEqual(['00ff410742', '00ff419942', '4d5a'])
    expect(bin?.meta).toEqual({ description: '(no description)' })
  })

  it('gives empty results without a rules folder, with an empty or missing one', async () => {
    const emptyDir = join(work, 'no-rules')
    mkdirSync(emptyDir)
    for (const dir of [null, emptyDir, join(work, 'does-not-exist')]) {
      const res = await yaraScan([sample], dir)
      expect(res).toEqual(new Map([[sample, []]]))
    }
  })

  it('names the file and line of a rule that does not compile', async () => {
    const bad = join(work, 'bad-rules')
    mkdirSync(bad)
    writeFileSync(join(bad, 'ok.yar'), 'rule fine { condition: true }\n')
    writeFileSync(join(bad, 'broken.yar'), 'rule broken {\n  strings: $a = "x"\n  condition: $a and $zz\n}\n')
    const err = await yaraScan([sample], bad).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(YaraRulesError)
    expect((err as YaraRulesError).file).toBe('broken.yar')
    // yarac names the line where the rule ends.
    expect((err as YaraRulesError).line).toBe(4)
    expect((err as Error).message).toMatch(/^YARA rules: broken\.yar:4: undefined string "\$zz"/)
  })

  it('names the file and line of a rule name defined twice across files', async () => {
    const dup = join(work, 'dup-rules')
    mkdirSync(dup)
    writeFileSync(join(dup, 'a.yar'), 'rule same_name { condition: true }\n')
    writeFileSync(join(dup, 'b.yar'), '// second file\n\nrule same_name { condition: false }\n')
    const err = await yaraScan([sample], dup).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(YaraRulesError)
    expect((err as Error).message).toMatch(/^YARA rules: b\.yar:3: duplicated identifier "same_name"/)
  })

  it('compiles once while the folder is unchanged, again when a rule file changes', async () => {
    const dir = join(work, 'changing')
    mkdirSync(dir)
    writeFileSync(join(dir, 'a.yar'), 'rule first_version { strings: $a = "EVIL-MARKER" condition: $a }\n')
    const one = await loadRules(dir)
    expect(await loadRules(dir)).toBe(one)
    writeFileSync(join(dir, 'a.yar'), 'rule second_version { strings: $a = "EVIL-MARKER" condition: $a }\n')
    utimesSync(join(dir, 'a.yar'), new Date(), new Date(Date.now() + 5000))
    const two = await loadRules(dir)
    expect(two).not.toBe(one)
    expect((await yaraScan([dropped], dir)).get(dropped)?.map((m) => m.name)).toEqual(['second_version'])
  })

  it('keeps compiled rules in a folder of the process, removed when the process exits', () => {
    // What a process killed with SIGKILL left (its pid is not running): the next one removes it.
    const dead = execFileSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).trim()
    const left = mkdtempSync(join(tmpdir(), `aviary-yara-${dead}-`))
    const script = `import { loadRules } from ${JSON.stringify(join(import.meta.dirname, 'scanner.ts'))}
const set = await loadRules(${JSON.stringify(rules)})
console.log(set.compiled)`
    const compiled = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }).trim()
    expect(dirname(compiled)).toMatch(/aviary-yara-/)
    expect(existsSync(dirname(compiled))).toBe(false)
    expect(existsSync(left)).toBe(false)
  })

  it('scans a 2 GiB sparse memory dump and finds a match past 2^31', async () => {
    const dump = join(work, 'memory.dmp')
    const at = 2 ** 31 + 12_345_678
    const dumpRules = join(work, 'dump-rules')
    mkdirSync(dumpRules)
    writeFileSync(join(dumpRules, 'r.yar'), 'rule evil_text { strings: $a = "EVIL-MARKER" condition: $a }\nrule many_markers { condition: filesize > 100 and uint16(0) == 0x5a4d }\n')
    const fd = openSync(dump, 'w')
    try {
      writeSync(fd, Buffer.from('MZ'), 0, 2, 0)
      writeSync(fd, Buffer.from('EVIL-MARKER'), 0, 11, at)
      writeSync(fd, Buffer.from([0]), 0, 1, 2 ** 31 + 32 * 2 ** 20 - 1)
    } finally {
      closeSync(fd)
    }
    const heap = process.memoryUsage().heapUsed
    const res = await yaraScan([dump], dumpRules)
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * 1024 * 1024)
    const evil = res.get(dump)?.find((m) => m.name === 'evil_text')
    expect(evil?.offsets).toEqual({ a: [[at, 0]] })
    expect(res.get(dump)?.map((m) => m.name).sort()).toEqual(['evil_text', 'many_markers'])
    rmSync(dump)
  }, 60_000)
})
