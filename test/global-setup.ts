// Builds the bundled CLI (with Aviary's analyzer), the renderer and the Linux agent executable once per test
// run, so tests that spawn `aviary`, start the hashing worker, upload the analyzer or boot a guest
// with the agent use the same artifacts as a user would. The UI's build runs beside the other two.
//
// A run whose sources are those of the last build does not build again: the builds' inputs (every
// file git lists, tracked or new, outside the tests, the docs and the benches, plus Node's version)
// are hashed, and the hash is written to out/ once all three builds have succeeded, with the times
// the outputs were written (a build from other sources since then does not count). Editing a test
// and running it again then starts at once instead of after 12–40 s of builds.
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { useTestTmpfs } from './fixtures/test-tmpfs'

const STAMP = 'out/.test-build-key'
/** What the three builds write; all must be there for the stamp to count. */
const OUTPUTS = ['out/main/index.js', 'out/preload/index.cjs', 'out/renderer/index.html', 'out/cli/aviary.mjs', 'out/cli/analyzer/analyzer.cjs', 'out/agent/aviary-agent-linux-x64']

/** Runs `node args`; rejects with what it said when it fails. `quiet` keeps its output unless it fails. */
function node(what: string, args: string[], quiet = false): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'] })
    let said = ''
    child.stdout?.on('data', (b: Buffer) => { said = (said + b.toString()).slice(-8000) })
    child.stderr?.on('data', (b: Buffer) => { said = (said + b.toString()).slice(-8000) })
    child.once('error', reject)
    child.once('exit', (code, signal) => code === 0 ? resolve() : reject(new Error(`${what} failed (${signal ?? code}): ${said}`)))
  })
}

/** A file the builds do not read: a test, a document, a bench, CI's script, the test and lint settings. */
const notBuilt = (f: string): boolean => /^(test|docs|bench|e2e|\.ci|\.githooks)\//.test(f) || /\.test\.tsx?$/.test(f) || f.endsWith('.md') ||
  ['vitest.config.ts', 'eslint.config.js'].includes(f)

/** The hash of the builds' inputs; null outside a git checkout (then every run builds). */
export function buildKey(): string | null {
  let files: string[]
  try {
    files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8', maxBuffer: 64 << 20 })
      .split('\0').filter((f) => f !== '' && !notBuilt(f)).sort()
  } catch {
    return null
  }
  const h = createHash('sha256').update(`${process.version}\0`)
  for (const f of files) {
    let data: Buffer
    try {
      data = readFileSync(f)
    } catch {
      continue // listed by the index, deleted in the work tree
    }
    h.update(`${f}\0${data.length}\0`).update(data)
  }
  return h.digest('hex')
}

/**
 * What the stamp holds: the inputs' hash, and when each output was last written, so that outputs a
 * build outside the tests rewrote (`npm run build` on other sources, say) do not count as this build.
 */
function stampOf(key: string): string | null {
  if (!OUTPUTS.every((o) => existsSync(o))) return null
  return [key, ...OUTPUTS.map((o) => `${o} ${statSync(o).mtimeMs}`)].join('\n')
}

export default async function setup(): Promise<(() => void) | undefined> {
  // The run's temporary files in memory (test/fixtures/test-tmpfs.ts); the workers inherit TMPDIR.
  const teardown = useTestTmpfs() ?? undefined
  try {
    await build()
  } catch (err) {
    teardown?.()
    throw err
  }
  return teardown
}

/** The three builds, unless the stamp says their sources are those of the last one. */
async function build(): Promise<void> {
  const key = buildKey()
  if (key !== null && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === stampOf(key)) return
  rmSync(STAMP, { force: true })
  await Promise.all([
    // The UI the service serves at / (the UI and Electron launch tests load it).
    node('building the UI', ['node_modules/electron-vite/bin/electron-vite.js', 'build', '--logLevel', 'warn']),
    // Both write the analyzer to out/cli/analyzer, so one after the other. postject warns about
    // every ELF note it does not know; only a failure is worth showing.
    node('building the CLI', ['scripts/build-cli.mjs']).then(() => node('building the agent', ['scripts/build-agent.mjs', '--linux-only'], true))
  ])
  const stamp = key === null ? null : stampOf(key)
  if (stamp !== null) writeFileSync(STAMP, stamp)
}
