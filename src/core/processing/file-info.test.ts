// The URLs written in a file (target.file.urls, dropped[].urls, as Cuckoo 2's File.get_urls()):
// found in ASCII and in UTF-16LE at either alignment, whole when a chunk boundary cuts one at any
// byte, cut free of the punctuation around them, capped, and only in the first URL_SCAN_BYTES.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { fileInfo, MAX_FILE_URLS, URL_SCAN_BYTES, UrlScanner } from './file-info'
import { createFileTypeDetector } from '../hashing/magic'

const dir = mkdtempSync(path.join(tmpdir(), 'aviary-file-info-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function scanInChunks(data: Buffer, size: number): string[] {
  const s = new UrlScanner()
  for (let i = 0; i < data.length; i += size) s.update(data.subarray(i, i + size))
  return s.result().sort()
}

describe('URLs in a file', () => {
  const ascii = 'GET (see "http://c2.evil.example:8080/gate.php?id=7&x=%20y"), then https://203.0.113.5/a.exe.'
  const wide = Buffer.from('\0cmd /c start https://wide.example/path/x.ps1\0', 'utf16le')
  const data = Buffer.concat([Buffer.from(`\x7fELF\0\0${ascii}\0http://\0https://-bad.example/\0`, 'latin1'), Buffer.from([0x90]), wide, Buffer.from([1, 2, 3])])
  const expected = ['http://c2.evil.example:8080/gate.php?id=7&x=%20y', 'https://203.0.113.5/a.exe', 'https://wide.example/path/x.ps1']

  it('finds ASCII and UTF-16LE URLs (at an odd offset too), without the punctuation around them', async () => {
    expect(data.indexOf(Buffer.from('h\0t\0t\0p\0s\0:\0/\0/\0w', 'latin1')) % 2).toBe(1) // the wide URL sits at an odd offset
    const file = path.join(dir, 'sample.bin')
    writeFileSync(file, data)
    expect((await fileInfo(file, 'sample.bin', createFileTypeDetector())).urls.sort()).toEqual(expected)
  })

  it('finds every URL whole wherever chunk boundaries cut it', () => {
    for (let size = 1; size <= 97; size++) expect(scanInChunks(data, size), `chunks of ${size}`).toEqual(expected)
    expect(scanInChunks(data, 1 << 20)).toEqual(expected)
  })

  it('keeps the first MAX_FILE_URLS, and reads no further than URL_SCAN_BYTES', () => {
    const many = Buffer.from(Array.from({ length: MAX_FILE_URLS + 500 }, (_, i) => `http://h${i}.example/ `).join(''))
    const found = scanInChunks(many, 4096)
    expect(found).toHaveLength(MAX_FILE_URLS)
    expect(found).toContain('http://h0.example/')
    const late = Buffer.concat([Buffer.alloc(URL_SCAN_BYTES - 10, 0x41), Buffer.from(' http://late.example/ ')])
    expect(scanInChunks(late, 1 << 20)).toEqual([])
  })

  it('bounds a hostile run of URL characters: no URL over 2048 characters, and a linear pass', () => {
    const run = Buffer.from(`http://x.example/${'a'.repeat(3 << 20)} http://ok.example/`)
    expect(scanInChunks(run, 1 << 16)).toEqual(['http://ok.example/'])
  })
})
