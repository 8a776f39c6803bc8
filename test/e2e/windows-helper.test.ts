// The Windows helper (helper.exe, as the build ships it in out/cli/analyzer) against a
// hostile sample under Wine: test/fixtures/windows-samples/hostile-tree.c starts it with itself as
// the anchor and a limit of 40 processes, then starts a child with a 30,000-unit command line of
// quotes, backslashes, control characters, a lone surrogate and a non-BMP character, 60 children
// at once, and a Run value with a hostile name and 5,000 characters of data. Every line the helper
// wrote must be valid JSON, the command line must come back exactly (cut at 8,192 units and said
// so), the process limit must hold and be said once, and the registry value must be seen written
// and deleted. Runs in a prefix of its own over the test bed's template prefix (no network needed).
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildSample, prefixFromTemplate, wineLeftAfter, wineEnv } from '../guests/wine-guest'

const run = promisify(execFile)
const HELPER = path.resolve(__dirname, '../../out/cli/analyzer/helper.exe')

type Line = Record<string, unknown> & { t: string }

describe('the Windows helper under Wine, fed by a hostile sample', () => {
  let dir: string
  let prefix: string
  let lines: Line[]
  let raw: string
  let removePrefix: (() => Promise<void>) | undefined

  beforeAll(async () => {
    expect(existsSync(HELPER), `${HELPER} (built by scripts/build-cli.mjs with mingw-w64)`).toBe(true)
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-winmon-'))
    const own = await prefixFromTemplate(path.join(dir, 'wine'))
    removePrefix = own.remove
    prefix = own.prefix
    // Into the prefix's C: drive: the template has no Z: drive (the host's /).
    const cdir = path.join(prefix, 'drive_c', 'winmon-test')
    mkdirSync(cdir)
    buildSample('hostile-tree.c', cdir, { libs: ['-municode'] })
    copyFileSync(HELPER, path.join(cdir, 'helper.exe'))
    const out = path.join(cdir, 'winmon.jsonl')
    const env = wineEnv(prefix)
    try {
      await run('wine', ['C:\\winmon-test\\hostile-tree.exe', 'C:\\winmon-test\\helper.exe', 'C:\\winmon-test\\winmon.jsonl'], { env, timeout: 120_000 })
    } finally {
      // The helper ends after its anchor; this waits for it (and every other process of the prefix).
      await run('wineserver', ['-w'], { env, timeout: 60_000 }).catch(() => run('wineserver', ['-k'], { env }))
    }
    raw = readFileSync(out, 'utf8')
    lines = raw.trimEnd().split('\n').map((l) => JSON.parse(l) as Line)
  }, 240_000)

  afterAll(async () => {
    if (prefix) await run('wineserver', ['-k'], { env: wineEnv(prefix) }).catch(() => undefined)
    await removePrefix?.()
    rmSync(dir, { recursive: true, force: true })
    // No wineserver or Windows program of this prefix outlives the test.
    if (dir) expect(await wineLeftAfter(10_000, dir)).toEqual([])
  })

  it('writes only valid JSON lines, from hello to bye', () => {
    expect(lines[0]?.t).toBe('hello')
    expect(lines[lines.length - 1]?.t).toBe('bye')
    expect(raw.endsWith('\n')).toBe(true)
  })

  it('gives the absurd command line back exactly, cut at 8,192 units and marked as cut', () => {
    const big = lines.find((l) => l.t === 'process' && typeof l.cmd === 'string' && l.cmd.length > 1000)
    expect(big, 'the child with the long command line').toBeDefined()
    expect(big!.cmd_truncated).toBe(true)
    const cmd = big!.cmd as string
    // Rebuild what the sample wrote (unit n of the command line is JUNK[n % 11]), cut where the
    // helper cuts (8,192 units, never inside a surrogate pair), a lone surrogate shown as U+FFFD.
    const JUNK = [0x22, 0x5c, 0x01, 0x1f, 0x09, 0xd800, 0x78, 0xd83d, 0xde00, 0x2028, 0x7d]
    const head = cmd.slice(0, cmd.indexOf('--child 1500 ') + '--child 1500 '.length)
    expect(head.length).toBeGreaterThan(20)
    const units: number[] = [...head].map((c) => c.charCodeAt(0))
    for (let n = units.length; n < 30000; n++) units.push(JUNK[n % 11]!)
    let cut = 8192
    if (units[cut - 1]! >= 0xd800 && units[cut - 1]! <= 0xdbff && units[cut]! >= 0xdc00 && units[cut]! <= 0xdfff) cut--
    let expected = ''
    for (let i = 0; i < cut; i++) {
      const u = units[i]!
      const next = units[i + 1] ?? 0
      if (u >= 0xd800 && u <= 0xdbff && i + 1 < cut && next >= 0xdc00 && next <= 0xdfff) {
        expected += String.fromCharCode(u, next)
        i++
      } else expected += u >= 0xd800 && u <= 0xdfff ? '\ufffd' : String.fromCharCode(u)
    }
    expect(cmd).toBe(expected)
  })

  it('holds its process limit and says so once', () => {
    const procs = lines.filter((l) => l.t === 'process')
    expect(procs.length).toBeLessThanOrEqual(40)
    expect(procs.length).toBeGreaterThan(20)
    expect(lines.filter((l) => l.t === 'limit' && l.what === 'processes')).toEqual([{ t: 'limit', what: 'processes', max: 40 }])
    // Each reported child's exit is reported, with the code it returned.
    const exits = new Map(lines.filter((l) => l.t === 'exit').map((l) => [l.pid, l.code]))
    for (const p of procs) expect(exits.get(p.pid), `exit of ${String(p.pid)}`).toBe(7)
  })

  it('sees the hostile Run value written and deleted, its name escaped and its data cut', () => {
    const reg = lines.filter((l) => l.t === 'registry' && l.name === 'evil "name"\nline2')
    expect(reg.map((l) => l.op)).toEqual(['written', 'deleted'])
    expect(reg[0]!.key).toBe('HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run')
    expect(reg[0]!.data).toBe('abcdefghijklmnopqrstuvwxyz'.repeat(40).slice(0, 1024))
    expect(reg[0]!.data_truncated).toBe(true)
  })
})
