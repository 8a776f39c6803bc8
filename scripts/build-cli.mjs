// Bundles the headless service (the `aviary` command) and its worker threads with esbuild.
// Dependencies stay external (resolved from node_modules at run time, which keeps native
// modules and wasm assets where they expect to be), except typebox: we use only its schema
// builders, and tree-shaken into the bundle it costs ~1 MB instead of ~20 MB of memory.
import { build } from 'esbuild'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8'))
const BUNDLED = new Set(['typebox', '@fastify/type-provider-typebox'])
const external = Object.keys(pkg.dependencies).filter((d) => !BUNDLED.has(d)).flatMap((d) => [d, `${d}/*`])
const outdir = process.env.AVIARY_CLI_OUTDIR ?? `${root}/out/cli`

await build({
  absWorkingDir: root,
  entryPoints: {
    aviary: 'src/core/cli.ts',
    'hash.worker': 'src/core/hashing/hash.worker.ts'
  },
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
})

// Aviary's analyzer, uploaded to guests with every task, lives next to the bundle (out/cli/analyzer).
const { buildAnalyzer } = await import('./build-agent.mjs')
await buildAnalyzer(`${outdir}/analyzer`)
