// The analyzer zip (Cuckoo 2.0.7's guest.py analyzer_zipfile): relative forward-slash names, STORED entries, the
// monitor's files under bin/ (through Cuckoo's `latest` pointer file), and the cache.
import { afterEach, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { BlobWriter, Uint8ArrayReader, ZipReader } from '@zip.js/zip.js'
import { buildAnalyzerZip } from './analyzer-zip'

let dir = ''
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = ''
})

async function entries(zip: Buffer): Promise<Map<string, { stored: boolean; text: string }>> {
  const reader = new ZipReader(new Uint8ArrayReader(new Uint8Array(zip)))
  const out = new Map<string, { stored: boolean; text: string }>()
  for (const e of await reader.getEntries()) {
    if (e.directory) continue
    const blob = await e.getData!(new BlobWriter())
    out.set(e.filename, { stored: e.compressedSize === e.uncompressedSize, text: await blob.text() })
  }
  await reader.close()
  return out
}

function tree(): { analyzer: string; monitorRoot: string } {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-zip-'))
  const analyzer = path.join(dir, 'analyzer', 'windows')
  mkdirSync(path.join(analyzer, 'lib', 'core'), { recursive: true })
  mkdirSync(path.join(analyzer, 'bin'), { recursive: true })
  writeFileSync(path.join(analyzer, 'analyzer.py'), 'print("analyzer")\n'.repeat(50))
  writeFileSync(path.join(analyzer, 'lib', 'core', 'config.py'), 'CONFIG = 1\n')
  writeFileSync(path.join(analyzer, 'bin', 'rules.yarac'), 'yara')
  writeFileSync(path.join(analyzer, 'bin', 'inject-x86.exe'), 'old inject')
  const monitorRoot = path.join(dir, 'monitor')
  mkdirSync(path.join(monitorRoot, 'a1b2c3', 'nested'), { recursive: true })
  writeFileSync(path.join(monitorRoot, 'a1b2c3', 'monitor-x86.dll'), 'dll32')
  writeFileSync(path.join(monitorRoot, 'a1b2c3', 'inject-x86.exe'), 'new inject')
  writeFileSync(path.join(monitorRoot, 'a1b2c3', 'nested', 'skip.txt'), 'not copied')
  writeFileSync(path.join(monitorRoot, 'latest'), 'a1b2c3\n')
  return { analyzer, monitorRoot }
}

describe('buildAnalyzerZip', () => {
  it('stores the folder under relative forward-slash names, uncompressed', async () => {
    const { analyzer } = tree()
    const e = await entries(await buildAnalyzerZip(analyzer, null))
    expect([...e.keys()].sort()).toEqual(['analyzer.py', 'bin/inject-x86.exe', 'bin/rules.yarac', 'lib/core/config.py'])
    expect([...e.values()].every((x) => x.stored)).toBe(true)
    expect(e.get('lib/core/config.py')?.text).toBe('CONFIG = 1\n')
  })

  it('adds the monitor files under bin/, following Cuckoo\'s "latest" pointer, monitor winning on clashes', async () => {
    const { analyzer, monitorRoot } = tree()
    for (const monitor of [path.join(monitorRoot, 'latest'), path.join(monitorRoot, 'a1b2c3')]) {
      const e = await entries(await buildAnalyzerZip(analyzer, monitor))
      expect(e.get('bin/monitor-x86.dll')?.text).toBe('dll32')
      expect(e.get('bin/inject-x86.exe')?.text).toBe('new inject')
      expect(e.has('bin/skip.txt') || e.has('bin/nested/skip.txt')).toBe(false)
    }
  })

  it('reuses the zip while the folder is unchanged and rebuilds it when a file changes', async () => {
    const { analyzer } = tree()
    const a = await buildAnalyzerZip(analyzer, null)
    expect(await buildAnalyzerZip(analyzer, null)).toBe(a)
    writeFileSync(path.join(analyzer, 'lib', 'core', 'config.py'), 'CONFIG = 22\n')
    const b = await buildAnalyzerZip(analyzer, null)
    expect(b).not.toBe(a)
    expect((await entries(b)).get('lib/core/config.py')?.text).toBe('CONFIG = 22\n')
  })

  it('refuses a missing folder and a bad "latest" pointer with a clear message', async () => {
    await expect(buildAnalyzerZip('/nonexistent/analyzer', null)).rejects.toThrow(/nonexistent/)
    const { analyzer, monitorRoot } = tree()
    writeFileSync(path.join(monitorRoot, 'latest'), '../../etc\n')
    await expect(buildAnalyzerZip(analyzer, path.join(monitorRoot, 'latest'))).rejects.toThrow(/does not name a monitor folder/)
  })
})
