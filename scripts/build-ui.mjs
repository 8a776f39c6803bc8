// Builds the web UI (out/renderer, with the desktop shell's out/main and out/preload) that
// `aviary serve` serves at /. Run by `npm install` (the package's prepare script, after the CLI),
// so the UI is there after an install and not only after `npm start`; the service finds it next
// to its own bundle (out/cli/../renderer), wherever it is started from.
// An install without the dev dependencies (npm install --omit=dev) cannot build it: a UI already
// built is kept, and the service says how to build one when there is none.
// AVIARY_UI_OUTDIR builds elsewhere than out/ (the install test does).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const outDir = process.env.AVIARY_UI_OUTDIR ?? path.join(root, 'out')
let electronVite = null
try {
  electronVite = path.join(path.dirname(createRequire(import.meta.url).resolve('electron-vite/package.json')), 'bin', 'electron-vite.js')
} catch {
  // no dev dependencies
}
if (electronVite === null || !existsSync(electronVite)) {
  const built = existsSync(path.join(outDir, 'renderer', 'index.html'))
  process.stderr.write(`aviary: the web UI cannot be built here (electron-vite is not installed: an install without dev dependencies)${built ? '; the UI built before is kept' : '; `aviary serve` runs without it until `npm install` with dev dependencies, then `npm run build`'}\n`)
  process.exit(0)
}
const r = spawnSync(process.execPath, [electronVite, 'build', '--logLevel', 'warn', '--outDir', outDir], { cwd: root, stdio: 'inherit' })
process.exit(r.status ?? 1)
