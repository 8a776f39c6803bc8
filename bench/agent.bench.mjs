#!/usr/bin/env node
// Guest agent benchmark (not a test: figures depend on the machine). Starts the bundled agent
// (the same esbuild bundle the SEA embeds) in its own process and measures, with curl as client:
//   store     POST /store of a 256 MiB file (multipart, the way the host sends samples), MiB/s
//   retrieve  POST /retrieve of the same file, MiB/s
//   rss       the agent's peak RSS during both (the body must stream, not sit in memory)
// Usage: node bench/agent.bench.mjs [--size-mib N] [--quick (8 MiB)]
import { build } from 'esbuild'
import { execFileSync, spawn } from 'node:child_process'
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, numArg, tempDir, track } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const sizeMiB = numArg('--size-mib', 256, 8)
try {
  const dir = tempDir('aviary-agent-bench-')
  const bundle = path.join(dir, 'agent.cjs')
  await build({ absWorkingDir: root, entryPoints: ['src/agent/agent-main.ts'], outfile: bundle, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'error', define: { 'import.meta.url': 'undefined' } })
  const sample = path.join(dir, 'sample.bin')
  const fd = openSync(sample, 'w')
  const chunk = randomBytes(1024 * 1024)
  for (let i = 0; i < sizeMiB; i++) writeSync(fd, chunk)
  closeSync(fd)
  const agent = track(spawn(process.execPath, [bundle, '-H', '127.0.0.1', '-p', '0'], { stdio: ['ignore', 'pipe', 'inherit'] }), { label: 'stop the agent' })
  const port = await new Promise((ok, fail) => {
    agent.once('exit', (code) => fail(new Error(`the agent exited (${code}) before it listened`)))
    let out = ''
    agent.stdout.on('data', (d) => {
      out += d
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out)
      if (m) ok(Number(m[1]))
    })
  })
  let peak = 0
  const rss = () => {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${agent.pid}/status`, 'utf8'))
    peak = Math.max(peak, Number(m?.[1] ?? 0))
  }
  const curl = (argv) => {
    const t = process.hrtime.bigint()
    execFileSync('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', ...argv])
    return Number(process.hrtime.bigint() - t) / 1e9
  }
  const stored = path.join(dir, 'stored.bin')
  const tStore = curl(['-F', `filepath=${stored}`, '-F', `file=@${sample}`, `http://127.0.0.1:${port}/store`])
  rss()
  const tGet = curl(['-d', `filepath=${stored}`, `http://127.0.0.1:${port}/retrieve`])
  rss()
  console.log(`agent store    ${sizeMiB} MiB: ${(sizeMiB / tStore).toFixed(0)} MiB/s (${tStore.toFixed(2)} s)`)
  console.log(`agent retrieve ${sizeMiB} MiB: ${(sizeMiB / tGet).toFixed(0)} MiB/s (${tGet.toFixed(2)} s)`)
  console.log(`agent peak RSS: ${(peak / 1024).toFixed(0)} MiB`)
} finally {
  await cleanup()
}
