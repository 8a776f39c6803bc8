// A sample that cannot start for want of its interpreter, run for real under the analyzer's strace:
// the trace gives ENOENT only, and the analyzer names the missing interpreter or loader, as shells
// say it ("bad interpreter: /nonexistent/interp").
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parseStrace } from './strace-log.js'
import { straceArgs } from './strace-run.js'
import { elfInterpreter, explainStartError } from './start-error.js'
import { compileC } from '../../../test/fixtures/compiled'

const work = mkdtempSync(join(tmpdir(), 'aviary-start-error-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

/** What the analyzer says of `file` run under its strace: startError, explained. */
function startErrorOf(file: string): string | null {
  const log = join(work, 'trace.log')
  spawnSync('strace', [...straceArgs({ seccomp: false, io: false }), '-o', log, '--', file], { stdio: 'ignore' })
  const error = parseStrace(readFileSync(log, 'latin1')).startError
  return error === null ? null : explainStartError(file, error)
}

describe('a sample whose interpreter is missing', () => {
  it('names the #! interpreter, as shells do', () => {
    const script = join(work, 'runme')
    writeFileSync(script, '#!/nonexistent/interp -x\necho hi\n', { mode: 0o755 })
    expect(startErrorOf(script)).toBe('bad interpreter: /nonexistent/interp: No such file or directory (ENOENT)')
  })

  it('names an ELF program\'s missing loader (PT_INTERP)', () => {
    const exe = compileC({ compiler: 'cc', source: 'int main(void) { return 0; }\n', libs: ['-Wl,--dynamic-linker=/lib/ld-nonexistent-x86_64.so.1'], out: join(work, 'musl-like') })
    expect(elfInterpreter(exe)).toBe('/lib/ld-nonexistent-x86_64.so.1')
    expect(startErrorOf(exe)).toBe('missing ELF interpreter /lib/ld-nonexistent-x86_64.so.1: No such file or directory (ENOENT)')
  })

  it('leaves other reasons as the OS gave them', () => {
    const blob = join(work, 'blob')
    writeFileSync(blob, Buffer.from([0, 0x13, 0x37, 0xfe]), { mode: 0o755 })
    expect(startErrorOf(blob)).toBe('Exec format error (ENOEXEC)')
    // A script whose interpreter exists runs: no error at all.
    const ok = join(work, 'fine')
    writeFileSync(ok, '#!/bin/sh\nexit 0\n', { mode: 0o755 })
    expect(startErrorOf(ok)).toBeNull()
    expect(explainStartError(join(work, 'gone'), 'No such file or directory (ENOENT)')).toBe('No such file or directory (ENOENT)')
  })
})
