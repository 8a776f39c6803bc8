// One image build per images folder at a time, across processes (debian-image.ts, withImagesLock):
// a real second process holds the lock; the build waits, says so, and goes on once that process is
// gone (a lock left by a killed builder is taken over).
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { withImagesLock } from './debian-image'

const dir = mkdtempSync(path.join(tmpdir(), 'aviary-images-lock-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('withImagesLock', () => {
  it('waits while another live process holds the lock, then takes it over when that process dies', async () => {
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
    await new Promise((resolve) => holder.once('spawn', resolve))
    writeFileSync(path.join(dir, '.lock'), String(holder.pid))
    const notes: string[] = []
    let ran = false
    const p = withImagesLock(dir, { note: (m) => notes.push(m) }, async () => { ran = true; return 42 })
    await new Promise((resolve) => setTimeout(resolve, 2500))
    expect(ran).toBe(false)
    expect(notes.join('\n')).toContain(`process ${holder.pid}`)
    holder.kill('SIGKILL')
    expect(await p).toBe(42)
    expect(ran).toBe(true)
    expect(existsSync(path.join(dir, '.lock'))).toBe(false)
  }, 20_000)

  it('runs one build after the other within one folder', async () => {
    const order: string[] = []
    const build = (name: string) => withImagesLock(dir, {}, async () => {
      order.push(`${name} start`)
      await new Promise((resolve) => setTimeout(resolve, 300))
      order.push(`${name} end`)
    })
    await Promise.all([build('a'), build('b')])
    expect(order).toEqual(['a start', 'a end', 'b start', 'b end'])
  }, 20_000)
})
