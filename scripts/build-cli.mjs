// Bundles the headless service (the `aviary` command) and its worker threads with esbuild.
// Dependencies stay external: they are resolved from node_modules at run time, which keeps
// native modules (better-sqlite3) and wasm assets (wasmagic) where they expect to be.
import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
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
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
  define: { 'process.env.AVIARY_BUNDLED': '"1"' }
})
