// No cycle between the folders of src/ (ARCHITECTURE.md, "Layers and what each may import"): the
// script that lists them finds none here, and does find one it is given.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const script = path.resolve('scripts/folder-cycles.mjs')
const run = (dir: string): { code: number; out: string } => {
  try {
    return { code: 0, out: execFileSync(process.execPath, [script, dir], { encoding: 'utf8' }) }
  } catch (err) {
    const e = err as { status: number; stdout: string }
    return { code: e.status, out: e.stdout }
  }
}

describe('folder cycles', () => {
  it('finds none in src/', () => {
    const r = run(path.resolve('src'))
    expect(r.out).toContain('no cycle')
    expect(r.code).toBe(0)
  })

  it('finds a cycle through a type-only import and names the files', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'aviary-cycles-'))
    try {
      mkdirSync(path.join(dir, 'core/db'), { recursive: true })
      mkdirSync(path.join(dir, 'core/scheduler'), { recursive: true })
      writeFileSync(path.join(dir, 'core/db/moves.ts'), "import { canMove } from '../scheduler/transitions'\nexport const m = canMove\n")
      writeFileSync(path.join(dir, 'core/scheduler/transitions.ts'), "import type { Db } from '../db/moves'\nexport const canMove = (d: Db) => d\n")
      const r = run(dir)
      expect(r.code).toBe(1)
      expect(r.out).toContain('core/db/moves.ts -> ../scheduler/transitions')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
