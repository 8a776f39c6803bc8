#!/usr/bin/env node
// Process memory and memory-dump triage: `node bench/procmem.bench.mjs [--gib N] [--exits N]`
// (--quick: 64 MiB and 5 exits, figures meaningless). Prints one JSON line.
//
// 1. Dumping's cost to a run (the analyzer's procmem.ts, bundled with esbuild):
//    - exits: a shell that starts --exits short processes (`/bin/true`), under strace with the
//      analyzer's options, without and with the exit hold (inject=exit_group:delay_enter): the
//      wall time added per exiting process;
//    - reading: a process with 64 MiB of written heap read through /proc/<pid>/mem at the default
//      per-process cap (64 MiB), best of 3.
// 2. Triage of a --gib GiB dump (default 1) at flat memory: memory-triage.ts's scanIndicators in
//    a fresh Node process, against `strings -a` and `yara` (one rule) over the same file; wall,
//    CPU and peak RSS of each (/usr/bin/time). The dump: 8 MiB pieces of real content (Debian's
//    copyright files and programs), random bytes and zeros, in turn, as memory looks.
import { build } from 'esbuild'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, numArg, quick, tempDir, track } from './cleanup.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const work = tempDir('procmem-bench-')
const GIB = numArg('--gib', 1, 1 / 16)
const EXITS = numArg('--exits', 40, 5)

async function bundle(entry, name) {
  const out = path.join(work, `${name}.mjs`)
  await build({ entryPoints: [path.join(root, entry)], bundle: true, platform: 'node', format: 'esm', outfile: out, logLevel: 'error' })
  return out
}

function wall(cmd, args) {
  const t0 = process.hrtime.bigint()
  const r = spawnSync(cmd, args, { stdio: 'ignore' })
  if (r.status !== 0) throw new Error(`${cmd} exited with ${r.status}`)
  return Number(process.hrtime.bigint() - t0) / 1e6
}

/** wall s, cpu s, peak RSS MiB of one command (/usr/bin/time). */
function timed(cmd, args) {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %U %S %M', cmd, ...args], { encoding: 'latin1', maxBuffer: 1 << 30, stdio: ['ignore', 'ignore', 'pipe'] })
  const [e, u, s, m] = r.stderr.trim().split('\n').pop().split(' ').map(Number)
  return { wall_s: e, cpu_s: Math.round((u + s) * 100) / 100, peak_mib: Math.round(m / 1024), status: r.status }
}

async function dumpingCost(procmem) {
  const { straceArgs } = await import(await bundle('src/agent/analyzer/strace-run.ts', 'strace-run'))
  const script = path.join(work, 'exits.sh')
  writeFileSync(script, `#!/bin/sh\ni=0\nwhile [ $i -lt ${EXITS} ]; do /bin/true; i=$((i+1)); done\n`, { mode: 0o755 })
  const base = straceArgs({ seccomp: true, io: false })
  const held = straceArgs({ seccomp: true, io: false, holdExitUs: procmem.EXIT_HOLD_US })
  const run = (args) => Math.min(...[0, 1].map(() => wall('strace', [...args, '-o', '/dev/null', '--', script])))
  const without = run(base)
  const withHold = run(held)
  // reading: a process that wrote 64 MiB of heap
  const c = path.join(work, 'heap.c')
  writeFileSync(c, '#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\nint main(){char*p=malloc(64<<20);memset(p,7,64<<20);sleep(30);return p[5];}\n')
  execFileSync('gcc', ['-O0', '-o', path.join(work, 'heap'), c])
  const child = track(spawn(path.join(work, 'heap'), { stdio: 'ignore' }))
  await new Promise((r) => setTimeout(r, 500))
  const reads = [0, 1, 2].map(() => {
    const t0 = process.hrtime.bigint()
    const { bytes } = procmem.readProcess(child.pid, 64 * 1024 * 1024)
    return { ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes }
  })
  child.kill('SIGKILL')
  const best = reads.sort((a, b) => a.ms - b.ms)[0]
  return {
    exits: EXITS, hold_ms: procmem.EXIT_HOLD_US / 1000,
    without_hold_ms: Math.round(without), with_hold_ms: Math.round(withHold),
    added_per_exit_ms: Math.round((withHold - without) / (EXITS + 1)),
    read_64mib_ms: Math.round(best.ms), read_bytes: best.bytes
  }
}

function realContent(limit) {
  const parts = []
  let n = 0
  for (const d of readdirSync('/usr/share/doc')) {
    if (n >= limit) break
    try {
      const b = readFileSync(path.join('/usr/share/doc', d, 'copyright'))
      parts.push(b)
      n += b.length
    } catch { /* none */ }
  }
  for (const f of ['/usr/bin/curl', '/usr/bin/wget', '/usr/bin/ssh', '/usr/bin/openssl']) {
    try { parts.push(readFileSync(f)) } catch { /* none */ }
  }
  return Buffer.concat(parts).subarray(0, limit)
}

async function triageCost() {
  const file = path.join(work, 'dump.raw')
  const total = Math.round(GIB * 1024 * 1024 * 1024)
  const real = realContent(8 * 1024 * 1024)
  const zeros = Buffer.alloc(8 * 1024 * 1024)
  const fd = openSync(file, 'w')
  for (let at = 0, k = 0; at < total; k++) {
    const piece = k % 3 === 0 ? real : k % 3 === 1 ? randomBytes(8 * 1024 * 1024) : zeros
    const take = piece.subarray(0, Math.min(piece.length, total - at))
    writeSync(fd, take)
    at += take.length
  }
  closeSync(fd)
  const entry = path.join(work, 'triage-entry.ts')
  writeFileSync(entry, `import { scanIndicators } from ${JSON.stringify(path.join(root, 'src/core/processing/memory-triage.ts'))}\n` +
    'const r = await scanIndicators(process.argv[2]!)\nconsole.log(JSON.stringify({ urls: r.urls.length, domains: r.domains.length, ips: r.ips.length, bytes: r.bytes, complete: r.complete }))\n')
  const scan = path.join(work, 'triage.mjs')
  await build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', outfile: scan, logLevel: 'error' })
  const rule = path.join(work, 'r.yar')
  writeFileSync(rule, 'rule url { strings: $a = /https?:\\/\\/[a-z0-9.-]{4,60}\\// condition: $a }\n')
  const found = JSON.parse(execFileSync(process.execPath, [scan, file], { encoding: 'utf8' }))
  return {
    bytes: statSync(file).size,
    found,
    triage: timed(process.execPath, [scan, file]),
    strings: timed('strings', ['-a', file]),
    yara: timed('yara', ['-w', rule, file])
  }
}

try {
  const procmem = await import(await bundle('src/agent/analyzer/procmem.ts', 'procmem'))
  const dumping = await dumpingCost(procmem)
  const triage = await triageCost()
  console.log(JSON.stringify({ bench: 'procmem', quick, dumping, triage }))
} finally {
  await cleanup()
}
