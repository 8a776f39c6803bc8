// The tar reader on archives from the writers that matter: Aviary's own `all` archive (tar-stream:
// ustar prefixes for names of 101-255 bytes, PAX past that) and GNU/POSIX tar from Debian.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startHarness } from '../../../../test/service-harness'
import { readTar, TarFormatError } from './tar'

let dir: string
const mid = `files/${'m'.repeat(60)}/${'n'.repeat(60)}_dropped.bin` // 130 bytes: ustar prefix
const long = `files/${'p'.repeat(100)}/${'q'.repeat(100)}/${'r'.repeat(80)}.exe` // > 255: PAX
const unicode = 'files/0123456789abcdef_invoice\u202Egpj.exe'

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-tar-'))
  for (const [rel, content] of [[mid, 'mid'], [long, 'long'], [unicode, 'uni'], ['reports/report.json', '{}']] as const) {
    mkdirSync(path.dirname(path.join(dir, 'a', rel)), { recursive: true })
    writeFileSync(path.join(dir, 'a', rel), content)
  }
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const contents = (files: { name: string; data: Uint8Array }[]) =>
  Object.fromEntries(files.map((f) => [f.name, Buffer.from(f.data).toString()]))

describe('readTar', () => {
  it("reads Aviary's own `all` archive (tar-stream) with long and unicode names intact", async () => {
    const h = await startHarness()
    try {
      const id = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com' }))).body.task_id as number
      execFileSync('cp', ['-r', `${path.join(dir, 'a')}/.`, h.analysisDir(id)])
      const res = await h.get(`/tasks/report/${id}/all?tar=tar`)
      expect(res.status).toBe(200)
      const files = contents(readTar(new Uint8Array(await res.arrayBuffer())))
      expect(files).toMatchObject({ [mid]: 'mid', [long]: 'long', [unicode]: 'uni', 'reports/report.json': '{}' })
    } finally {
      await h.stop()
    }
  })

  it('reads GNU and POSIX (pax) archives made by tar', () => {
    for (const format of ['gnu', 'posix', 'ustar']) {
      const file = path.join(dir, `${format}.tar`)
      try {
        execFileSync('tar', [`--format=${format}`, '-cf', file, '-C', path.join(dir, 'a'), 'files', 'reports'], { stdio: 'pipe' })
      } catch (err) {
        // ustar cannot hold the > 255-byte name: GNU tar refuses it, which is the point of pax.
        expect(format).toBe('ustar')
        expect(String((err as { stderr: Buffer }).stderr)).toMatch(/too long|file name is too long/i)
        continue
      }
      expect(contents(readTar(new Uint8Array(readFileSync(file)))), format).toEqual({ [mid]: 'mid', [long]: 'long', [unicode]: 'uni', 'reports/report.json': '{}' })
    }
  })

  it('rejects an archive cut inside a file and a header with a garbage size', () => {
    const tar = new Uint8Array(execFileSync('tar', ['-cf', '-', '-C', path.join(dir, 'a'), 'reports']))
    expect(() => readTar(tar.subarray(0, 1024))).toThrow(TarFormatError)
    expect(() => readTar(tar.subarray(0, 512 + 100))).toThrow(TarFormatError)
    const bad = tar.slice()
    bad.set(new TextEncoder().encode('zzzzzzzzzzz'), 124)
    expect(() => readTar(bad)).toThrow(TarFormatError)
  })
})
