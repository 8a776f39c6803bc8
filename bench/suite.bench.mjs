#!/usr/bin/env node
// Where the test suite's time goes: `node bench/suite.bench.mjs [FILE...]` runs `vitest run`
// (every file, or the ones named) and samples /proc every 500 ms meanwhile. Each process's CPU
// time is charged to the test file whose worker it descends from (the worker says which file it
// runs: test/setup-cpu-map.ts, when AVIARY_TEST_CPU_MAP names a folder), and to its program
// (its comm): QEMU, Chromium, node, tshark... Processes started by libvirtd (the guests' QEMU),
// by Vitest outside a file (its global setup) and by nothing of the run are charged apart. A process that starts and ends between
// two samples is charged to its parent as its "ended children", from the parent's children's time (/proc/PID/stat
// cutime, cstime), at most two cores' worth per interval. `--quick` (the bench quick pass) runs
// one small file.
// QEMU's processes, which libvirt detaches from its daemon, are charged to their guest by name
// ("(QEMU avlx-lx-1)"). Prints the wall time, Vitest's summary, the files and programs by CPU
// seconds, and a JSON line with all of it.
//
// Why a sampler of our own: the question is which test file used the machine's two cores, and
// no kept tool charges a process tree's CPU to the Vitest file that started it.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cpus } from 'node:os'
import { stripVTControlCharacters } from 'node:util'
import { cleanup, positional, quick, tempDir } from './cleanup.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const HZ = 100 // USER_HZ, the unit of /proc/PID/stat times on Linux
const INTERVAL_MS = 500
const VITEST = '(vitest itself and its global setup)'
const GUESTS = '(guests started by libvirtd)'
const OTHER = '(other programs on this machine)'
const files = quick ? ['src/shared/route-kinds.test.ts'] : positional()
const mapDir = tempDir('aviary-suite-bench-')

/** pid -> { ppid, comm, own, kids, start } from /proc/PID/stat; null when the process is gone. */
function stat(pid) {
  let s
  try {
    s = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return null
  }
  const close = s.lastIndexOf(')')
  const f = s.slice(close + 2).split(' ')
  return { ppid: Number(f[1]), comm: s.slice(s.indexOf('(') + 1, close), own: Number(f[11]) + Number(f[12]), kids: Number(f[13]) + Number(f[14]), start: f[19] }
}

function snapshot() {
  const procs = new Map()
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    const v = stat(d)
    if (v) procs.set(Number(d), v)
  }
  return procs
}

/** worker pid -> the test file it runs now. */
function fileMap() {
  const m = new Map()
  for (const p of readdirSync(mapDir)) {
    try {
      m.set(Number(p), readFileSync(path.join(mapDir, p), 'utf8').trim())
    } catch { /* being written */ }
  }
  return m
}

/** pid -> the libvirt domain a QEMU process runs (from its `-name guest=NAME`), read once. */
const qemuGuests = new Map()
function qemuGuest(pid) {
  if (!qemuGuests.has(pid)) {
    let name = '?'
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')
      const m = /guest=([^,]+)/.exec(argv[argv.indexOf('-name') + 1] ?? '')
      if (m) name = m[1]
    } catch { /* gone */ }
    qemuGuests.set(pid, name)
  }
  return qemuGuests.get(pid)
}

const byFile = new Map() // file -> Map(comm -> ticks)
const charge = (file, comm, ticks) => {
  if (ticks <= 0) return
  const m = byFile.get(file) ?? new Map()
  m.set(comm, (m.get(comm) ?? 0) + ticks)
  byFile.set(file, m)
}

const t0 = Date.now()
const child = spawn(process.execPath, [path.join(root, 'node_modules/vitest/vitest.mjs'), 'run', ...files], {
  cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, AVIARY_TEST_CPU_MAP: mapDir }
})
let out = ''
child.stdout.on('data', (b) => { out += b.toString() })
const ended = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
let last = snapshot() // the baseline: what ran before the suite is not charged
const cap = cpus().length * HZ * INTERVAL_MS / 1000
let done = false
void ended.then(() => { done = true })
while (!done) {
  await new Promise((r) => setTimeout(r, INTERVAL_MS))
  const now = snapshot()
  const map = fileMap()
  const all = new Map([...last, ...now])
  const owner = (pid) => {
    if (all.get(pid)?.comm.startsWith('qemu-system')) return `(QEMU ${qemuGuest(pid)})`
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
      if (map.has(p)) return path.relative(root, map.get(p))
      if (p === child.pid) return VITEST
      if (all.get(p)?.comm === 'libvirtd') return GUESTS
      p = all.get(p)?.ppid ?? 0
    }
    return OTHER
  }
  // What the processes that ended since the last sample had used by then, by their parent.
  const endedKids = new Map()
  for (const [pid, v] of last) {
    const n = now.get(pid)
    if (!n || n.start !== v.start) endedKids.set(v.ppid, (endedKids.get(v.ppid) ?? 0) + v.own + v.kids)
  }
  for (const [pid, v] of now) {
    const prev = last.get(pid)
    const same = prev && prev.start === v.start
    const file = owner(pid)
    charge(file, v.comm, same ? v.own - prev.own : v.own)
    if (same) charge(file, `${v.comm}'s ended children`, Math.min(cap, v.kids - prev.kids - (endedKids.get(pid) ?? 0)))
  }
  last = now
}
const code = await ended
const wall = (Date.now() - t0) / 1000

const seconds = (t) => Math.round(t / HZ * 10) / 10
const files$ = [...byFile].filter(([file]) => file !== OTHER).map(([file, m]) => ({ file, cpu: seconds([...m.values()].reduce((a, b) => a + b, 0)), top: [...m].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([c, t]) => `${c} ${seconds(t)}`) }))
  .sort((a, b) => b.cpu - a.cpu)
const programs = new Map()
for (const [file, m] of byFile) if (file !== OTHER) for (const [c, t] of m) programs.set(c, (programs.get(c) ?? 0) + t)
const programs$ = [...programs].map(([program, t]) => ({ program, cpu: seconds(t) })).filter((p) => p.cpu > 0).sort((a, b) => b.cpu - a.cpu)
const total = seconds([...programs.values()].reduce((a, b) => a + b, 0))
const otherTicks = [...(byFile.get(OTHER)?.values() ?? [])].reduce((a, b) => a + b, 0)
const summary = out.split('\n').filter((l) => /Test Files|Tests |Duration| FAIL /.test(l)).map((l) => stripVTControlCharacters(l).trim())

console.log(`vitest ${files.length ? files.join(' ') : '(every file)'}: exit ${code}, ${wall.toFixed(0)} s wall, ${total} CPU-seconds ` +
  `for the run (${cpus().length} cores: ${(total / wall).toFixed(2)} busy on average), ${seconds(otherTicks)} for other programs`)
for (const l of summary) console.log(`  ${l}`)
console.log('by file (CPU s, then its largest programs):')
for (const f of files$.slice(0, 40)) console.log(`  ${String(f.cpu).padStart(7)}  ${f.file}  [${f.top.join(', ')}]`)
console.log('by program (CPU s):')
for (const p of programs$.slice(0, 25)) console.log(`  ${String(p.cpu).padStart(7)}  ${p.program}`)
console.log(JSON.stringify({ bench: 'suite', files: files.length ? files : 'all', exit: code, wall_s: Math.round(wall), cpu_s: total, by_file: files$, by_program: programs$ }))
await cleanup()
if (code !== 0) process.exitCode = 1
