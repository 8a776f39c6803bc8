// Bundles the headless service (the `aviary` command) and its worker threads with esbuild.
// Dependencies stay external (resolved from node_modules at run time, which keeps native
// modules and wasm assets where they expect to be), except typebox: we use only its schema
// builders, and tree-shaken into the bundle it costs ~1 MB instead of ~20 MB of memory.
//
// The bundle is split where the code imports with import(): each command, the analysis run,
// processing, archive unpacking and the doctor are chunks (lazy-*.mjs) loaded when first needed,
// so `aviary serve` at rest carries only the API, the database and the scheduler
// (docs/benchmarks.md, ingest: the memory this saves and what a first use costs).
import { build } from 'esbuild'
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8'))
const BUNDLED = new Set(['typebox', '@fastify/type-provider-typebox'])
const external = Object.keys(pkg.dependencies).filter((d) => !BUNDLED.has(d)).flatMap((d) => [d, `${d}/*`])
const outdir = process.env.AVIARY_CLI_OUTDIR ?? `${root}/out/cli`

const common = {
  absWorkingDir: root,
  outdir,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external,
  sourcemap: true,
  logLevel: 'warning',
  define: { 'process.env.AVIARY_BUNDLED': '"1"' },
  // CommonJS code bundled into this ESM output (the agent's multipart parser) calls require() for
  // Node built-ins; give the bundle a real one.
  banner: { js: "import { createRequire as __aviaryRequire } from 'node:module'; const require = __aviaryRequire(import.meta.url);" }
}

const result = await build({
  ...common,
  entryPoints: { aviary: 'src/core/cli.ts' },
  // Chunks sit next to the entry (not in a folder) so that import.meta.url finds the analyzer and
  // the UI from any of them.
  splitting: true,
  chunkNames: 'lazy-[name]-[hash]',
  metafile: true
})
// The hashing worker stays one file (12 KB): it shares nothing worth a chunk with the service, and
// a worker started from it never needs a chunk another build has replaced.
await build({ ...common, entryPoints: { 'hash.worker': 'src/core/hashing/hash.worker.ts' } })

// Chunk names carry a hash of their content, so each build leaves the previous build's chunks
// behind. A service started from that build imports them when it first needs them (its first
// analysis, archive or screenshot, maybe days later), so they are not removed at once: only those
// no build has written for a day.
const written = new Set(Object.keys(result.metafile.outputs).map((f) => path.basename(f)))
const DAY_MS = 24 * 3600 * 1000
for (const name of readdirSync(outdir)) {
  if (!/^lazy-.+\.mjs(\.map)?$/.test(name) || written.has(name)) continue
  const file = path.join(outdir, name)
  if (Date.now() - statSync(file).mtimeMs > DAY_MS) rmSync(file, { force: true })
}

// Aviary's analyzer, uploaded to guests with every task, lives next to the bundle (out/cli/analyzer).
const { buildAnalyzer } = await import('./build-agent.mjs')
await buildAnalyzer(`${outdir}/analyzer`)
