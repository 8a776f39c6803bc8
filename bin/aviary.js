#!/usr/bin/env -S node --max-semi-space-size=2
// --max-semi-space-size=2 (MiB): a small young generation is collected often, so the socket
// buffers of a streaming upload are freed at once instead of piling up (a 1 GiB upload peaks
// ~15 MB lower) at no measured cost to request throughput. npm start passes the same flag.
// The `aviary` command: the headless service, the dispatcher and the submit client.
// `npm install` builds out/cli (the package's prepare script); run `npm run build:cli` after edits.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const entry = new URL('../out/cli/aviary.mjs', import.meta.url)
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('aviary: out/cli is missing; run `npm run build:cli` in the aviary folder first\n')
  process.exit(1)
}
const { main } = await import(entry.href)
process.exitCode = await main(process.argv.slice(2))
