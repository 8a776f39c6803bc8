// For bench/suite.bench.mjs only: when AVIARY_TEST_CPU_MAP names a folder, each worker writes there
// which test file it runs now (a file named after its pid), so that the bench can charge the CPU
// time of the worker and everything it starts to that file. Without the variable it does nothing.
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from 'vitest'

const dir = process.env.AVIARY_TEST_CPU_MAP
const file = expect.getState().testPath
if (dir && file) {
  mkdirSync(dir, { recursive: true })
  writeFileSync(path.join(dir, String(process.pid)), file)
}
