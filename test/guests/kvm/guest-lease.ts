// An exclusive lease on the test guest across processes: Vitest runs test files in parallel
// worker processes, and two of them reverting, dumping and destroying one domain at once would
// break each other. The lease is a file holding the owner's pid (taken with O_EXCL; a stale one,
// whose process is gone, is taken over); other callers wait. Node has no flock(), and the
// data-directory lock of src/core/storage/data-lock.ts works the same way but fails instead of
// waiting. Re-entrant within one process.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { alive } from '../../../src/core/storage/data-lock'

let held: { file: string; count: number } | undefined
let exitHook = false

function tryTake(file: string): boolean {
  try {
    const fd = openSync(file, 'wx', 0o644)
    writeSync(fd, String(process.pid))
    closeSync(fd)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  let pid: number
  try {
    pid = Number(readFileSync(file, 'utf8').trim())
  } catch {
    return false // released between our open and read: try again
  }
  if (pid && alive(pid)) return false
  try {
    unlinkSync(file) // stale
  } catch {
    /* someone else took it over first */
  }
  return false
}

function drop(file: string): void {
  try {
    if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file)
  } catch {
    /* already gone */
  }
}

/** Waits for the lease (up to `timeoutMs`) and returns its release function (idempotent). */
export async function acquireLease(file: string, timeoutMs: number): Promise<() => void> {
  if (held?.file === file) {
    held.count++
  } else {
    const deadline = Date.now() + timeoutMs
    while (!tryTake(file)) {
      if (Date.now() > deadline) throw new Error(`the test guest is still leased (${file}) after ${timeoutMs} ms`)
      await new Promise((r) => setTimeout(r, 500))
    }
    held = { file, count: 1 }
    if (!exitHook) {
      exitHook = true
      process.on('exit', () => held && drop(held.file))
    }
  }
  let released = false
  return () => {
    if (released || held?.file !== file) return
    released = true
    if (--held.count === 0) {
      held = undefined
      drop(file)
    }
  }
}
