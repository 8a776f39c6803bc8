// Reading an ISO's editions. No Windows ISO can be had here, so the install image is a stand-in:
// a WIM that wimtools' wimcapture builds from a small folder, with the image names and WINDOWS
// properties (edition id, architecture, build) a real install.wim carries, and an ESD-style one
// (`--solid`, LZMS, as install.esd). It is put under sources/ of an ISO made with genisoimage
// (UDF and ISO 9660, as Windows ISOs have UDF) or xorriso (ISO 9660 only). wiminfo, reading the
// stand-in itself, is the oracle for what our reader finds through the ISO.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chooseEdition, isoEditions, parseWimXml, readWimEditions, type WindowsEdition } from './editions'
import { WindowsSpecError } from './options'

interface StandIn { name: string; editionId: string; arch: number; build: number }

const WIN10: StandIn[] = [
  { name: 'Windows 10 Home', editionId: 'Core', arch: 9, build: 19045 },
  // A name no real ISO has, to show names are read as text, entities and all.
  { name: 'Windows 10 Pro <N> & "Lab"', editionId: 'ProfessionalN', arch: 9, build: 19045 },
  { name: 'Windows 10 Pro', editionId: 'Professional', arch: 9, build: 19045 },
  { name: 'Windows 10 Education', editionId: 'Education', arch: 9, build: 19045 }
]
const WIN11: StandIn[] = [
  { name: 'Windows 11 Home', editionId: 'Core', arch: 9, build: 22631 },
  { name: 'Windows 11 Pro', editionId: 'Professional', arch: 9, build: 22631 }
]

const ARCH_NAMES: Record<string, number> = { x86: 0, x86_64: 9, ARM64: 12 }

/** wiminfo's own reading of a WIM: the oracle. */
function wiminfo(wim: string): WindowsEdition[] {
  const out = execFileSync('wiminfo', [wim], { encoding: 'utf8' })
  return out.split(/\n(?=Index:)/).slice(1).map((block) => {
    const field = (name: string): string | null => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(block)?.[1]?.trim() ?? null
    const build = field('Build')
    return {
      index: Number(field('Index')),
      name: field('Name') ?? '',
      editionId: field('Edition ID'),
      arch: ARCH_NAMES[field('Architecture') ?? ''] ?? null,
      build: build === null ? null : Number(build)
    }
  })
}

describe('the editions of a Windows ISO (a wimcapture stand-in for install.wim)', () => {
  let dir: string
  const isos: Record<string, string> = {}
  const wims: Record<string, string> = {}

  const standIn = (file: string, images: StandIn[], solid: boolean): string => {
    const content = path.join(dir, 'content')
    mkdirSync(path.join(content, 'Windows', 'System32'), { recursive: true })
    writeFileSync(path.join(content, 'Windows', 'System32', 'stand-in.txt'), 'not Windows\n')
    const out = path.join(dir, file)
    images.forEach((img, i) => {
      execFileSync(i === 0 ? 'wimcapture' : 'wimappend', [content, out, img.name, ...(i === 0 && solid ? ['--solid'] : []),
        '--image-property', `WINDOWS/EDITIONID=${img.editionId}`, '--image-property', `WINDOWS/ARCH=${img.arch}`,
        '--image-property', `WINDOWS/VERSION/BUILD=${img.build}`], { stdio: 'pipe' })
    })
    return out
  }

  const iso = (name: string, installName: string, wim: string, tool: 'genisoimage' | 'xorriso'): string => {
    const root = path.join(dir, `${name}-root`)
    mkdirSync(path.join(root, 'sources'), { recursive: true })
    copyFileSync(wim, path.join(root, 'sources', installName))
    writeFileSync(path.join(root, 'setup.exe'), 'stand-in\n')
    const out = path.join(dir, `${name}.iso`)
    if (tool === 'genisoimage') execFileSync('genisoimage', ['-quiet', '-udf', '-J', '-o', out, root], { stdio: 'pipe' })
    else execFileSync('xorriso', ['-no_rc', '-as', 'mkisofs', '-quiet', '-o', out, '-J', '-r', root], { stdio: 'pipe' })
    return out
  }

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'avwv-editions-'))
    wims.win10 = standIn('win10.wim', WIN10, false)
    wims.win11esd = standIn('win11.esd', WIN11, true)
    isos.win10udf = iso('win10-udf', 'install.wim', wims.win10, 'genisoimage')
    isos.win11esd = iso('win11-esd', 'install.esd', wims.win11esd, 'xorriso')
    isos.none = iso('none', 'boot.wim', wims.win10, 'xorriso')
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('reads install.wim through a UDF ISO as wiminfo reads the WIM itself', async () => {
    const found = await isoEditions(isos.win10udf!)
    expect(found).toEqual(wiminfo(wims.win10!))
    expect(found.map((e) => e.name)).toEqual(WIN10.map((e) => e.name))
    expect(found[1]).toEqual({ index: 2, name: 'Windows 10 Pro <N> & "Lab"', editionId: 'ProfessionalN', arch: 9, build: 19045 })
  })

  it('reads a solid (LZMS, ESD-style) install.esd through an ISO 9660 ISO', async () => {
    const found = await isoEditions(isos.win11esd!)
    expect(found).toEqual(wiminfo(wims.win11esd!))
    expect(found.map((e) => [e.index, e.name, e.build])).toEqual([[1, 'Windows 11 Home', 22631], [2, 'Windows 11 Pro', 22631]])
  })

  it('says so when the ISO has no install image, or is not an ISO', async () => {
    await expect(isoEditions(isos.none!)).rejects.toThrow(/has no sources\/install\.wim or sources\/install\.esd/)
    const notIso = path.join(dir, 'not.iso')
    writeFileSync(notIso, 'hello')
    await expect(isoEditions(notIso)).rejects.toThrow(/has no sources\/install\.wim/)
  })

  it('refuses a truncated WIM and a file that is not one, naming what is wrong', async () => {
    const bytes = readFileSync(wims.win10!)
    const stream = (b: Buffer): Readable => Readable.from([b.subarray(0, 100), b.subarray(100)])
    await expect(readWimEditions(stream(bytes.subarray(0, bytes.length - 40)), () => undefined)).rejects.toThrow(/ends at byte \d+, before its XML data/)
    await expect(readWimEditions(stream(Buffer.from('x'.repeat(300))), () => undefined)).rejects.toThrow(/not a WIM/)
    // The whole file, in chunks of every size the pipe may give: the same answer.
    for (const size of [1, 7, 208, 4096]) {
      const chunks: Buffer[] = []
      for (let o = 0; o < bytes.length; o += size) chunks.push(bytes.subarray(o, o + size))
      expect((await readWimEditions(Readable.from(chunks), () => undefined)).map((e) => e.name)).toEqual(WIN10.map((e) => e.name))
    }
    expect(() => parseWimXml(Buffer.from('\ufeff<WIM></WIM>', 'utf16le'))).toThrow(/lists no image/)
  })

  describe('the choice', () => {
    const win10 = (): WindowsEdition[] => wiminfo(wims.win10!)
    const win11 = (): WindowsEdition[] => wiminfo(wims.win11esd!)

    it('takes Pro when none is asked for, else the one named or numbered (any case)', () => {
      expect(chooseEdition(win10(), null, '10').name).toBe('Windows 10 Pro')
      expect(chooseEdition(win11(), null, '11').name).toBe('Windows 11 Pro')
      expect(chooseEdition(win10(), 'windows 10 education', '10').index).toBe(4)
      expect(chooseEdition(win10(), '1', '10').name).toBe('Windows 10 Home')
      expect(chooseEdition(win10(), 'Windows 10 Pro <N> & "Lab"', '10').index).toBe(2)
    })

    it('refuses an edition the ISO lacks, listing those it has', () => {
      expect(() => chooseEdition(win10(), 'Windows 10 Enterprise', '10')).toThrow(/edition: the ISO has no edition 'Windows 10 Enterprise' \(it has 1: Windows 10 Home; 2: .*4: Windows 10 Education\)/)
      expect(() => chooseEdition(win10(), '9', '10')).toThrow(WindowsSpecError)
      expect(() => chooseEdition(win10().filter((e) => e.editionId !== 'Professional'), null, '10')).toThrow(/none is Pro: choose one with --edition/)
    })

    it('refuses a Windows 11 image for --version 10 and the reverse, and a non-x64 image', () => {
      expect(() => chooseEdition(win11(), null, '10')).toThrow(/windows-version: 'Windows 11 Pro' is build 22631, Windows 11: give --windows-version 11/)
      expect(() => chooseEdition(win10(), null, '11')).toThrow(/windows-version: .* give --windows-version 10/)
      expect(() => chooseEdition([{ index: 1, name: 'x86 one', editionId: 'Professional', arch: 0, build: 19045 }], null, '10')).toThrow(/edition: 'x86 one' is not an x64 image/)
    })
  })
})
