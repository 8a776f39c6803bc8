// The quick pass (`npm run bench -- --quick`, run by CI): every bench once at its smallest size, so
// a bench that no longer ends, breaks, or leaves something behind fails here rather than when
// someone next needs its figures. The figures are printed, never judged.
//
// - Every bench/*.bench.mjs is run (a new one is picked up by its name), plus bench/run.mjs's
//   own two parts (`ingest`, `http`), one at a time, with `--quick --no-build` (`npm run bench`
//   has built the CLI; the UI benches use out/renderer as `npm run build` left it, and build it
//   only when it is missing).
// - Each runs in its own process group under a timeout (TIMEOUT_S). A timeout sends SIGTERM to
//   the group (the bench cleans up, bench/cleanup.mjs), then SIGKILL after GRACE_S.
// - Each gets AVIARY_BENCH_RUN=<mark> in its environment, which its children inherit: after it
//   ends, a process still carrying the mark is a leftover (killed, and the bench fails). Each
//   folder and network namespace it noted as made (bench/cleanup.mjs's made(): tempDir() and the
//   guests do, in the file AVIARY_BENCH_MANIFEST names) must be gone.
// - What appeared while it ran and is still there: a network namespace, an nftables table, a temp
//   folder with "bench" in its name (in the temp dir, out/ or node_modules/.cache) or one under
//   <tmp>/aviary-netns. Another program on the same machine (another engineer's tests) may have
//   made it, so it is a note, unless --strict (CI, where nothing else runs): then a failure.
// - A non-zero exit, a timeout or a leftover fails the bench; the pass exits 1 naming them.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { onCleanup } from './cleanup.mjs'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(benchDir, '..')

/** Seconds a bench's quick run may take before it counts as hung; the rest get DEFAULT_TIMEOUT_S. */
const DEFAULT_TIMEOUT_S = 120
const TIMEOUT_S = {
  // a Wine prefix template is made once per machine (wineboot) before the first guest
  'windows-overhead': 420,
  // each task waits out its 10 s timeout and 10 s critical timeout
  'hostile-agent': 180,
  // Chromium, and the UI built first when out/renderer is missing
  'ui-calls': 300,
  'ui-compare': 300,
  'ui-tasks': 300,
  // a PostgreSQL cluster is made (initdb)
  dist: 180,
  // a Debian machine under TCG: boot, snapshot, deep doctor, a task; and the image built first
  // when out/linux-guest/ has none (the tests build it there)
  machines: 900,
  // the console test guest under TCG (built and snapshotted first when out/test-guest/ has none),
  // a task, 2 typed rounds, 10 s busy and 10 s idle
  console: 600
}
/** After SIGTERM, how long a bench has to clean up before SIGKILL (its cleanup is bounded at 60 s). */
const GRACE_S = 70
/** A quick run longer than this is reported as slow (the whole pass aims at under 8 minutes). */
const SLOW_S = 60
/** Shared system daemons a bench may start when they are not running (as the tests do), and leaves. */
const DAEMONS = new Set(['libvirtd', 'virtlogd'])

export function quickBenches() {
  const files = readdirSync(benchDir).filter((f) => f.endsWith('.bench.mjs')).sort()
  return [
    { name: 'ingest', argv: ['run.mjs', '--quick', '--only', 'ingest'] },
    { name: 'http', argv: ['run.mjs', '--quick', '--only', 'http'] },
    ...files.map((f) => ({ name: f.slice(0, -'.bench.mjs'.length), argv: [f, '--quick', '--no-build'] }))
  ]
}

const quiet = (cmd, argv) => {
  try {
    return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  } catch {
    return ''
  }
}
const lines = (text) => text.split('\n').map((l) => l.trim()).filter(Boolean)
const list = (dir, keep = () => true) => (existsSync(dir) ? readdirSync(dir).filter(keep).map((e) => path.join(dir, e)) : [])

/** What a bench could leave behind, by kind. */
function snapshot() {
  const bench = (e) => /bench/i.test(e)
  return {
    'network namespace': lines(quiet('ip', ['netns', 'list'])).map((l) => l.split(' ')[0]),
    'nftables table': lines(quiet('nft', ['list', 'tables'])),
    'temp folder': [
      ...list(tmpdir(), bench), ...list(path.join(tmpdir(), 'aviary-netns')),
      ...list(path.join(root, 'out'), bench), ...list(path.join(root, 'node_modules/.cache'), bench)
    ]
  }
}

/** Live processes whose environment carries `mark`, but for the shared daemons. */
function marked(mark) {
  const needle = Buffer.from(`AVIARY_BENCH_RUN=${mark}\0`)
  const found = []
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      if (/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))) continue
      if (!readFileSync(`/proc/${pid}/environ`).includes(needle)) continue
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
      if (DAEMONS.has(comm)) continue
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
      found.push({ pid: Number(pid), cmd: cmd.slice(0, 160) })
    } catch { /* gone, or not ours to read */ }
  }
  return found
}

const killGroup = (pid, sig) => { try { process.kill(-pid, sig) } catch { /* gone */ } }
/** Set once the pass itself is interrupted: no further bench starts. */
let interrupted = false

/** Runs one bench; resolves with { name, seconds, failure } (failure: null when it passed). */
async function runOne(b, mark, { timeoutOverride, strict, passDir }) {
  const before = snapshot()
  const manifest = path.join(passDir, `${b.name}.made`)
  const timeoutS = timeoutOverride ?? TIMEOUT_S[b.name] ?? DEFAULT_TIMEOUT_S
  console.log(`\n### ${b.name}: node bench/${b.argv.join(' ')} (timeout ${timeoutS} s)\n`)
  const t0 = performance.now()
  const child = spawn(process.execPath, [path.join(benchDir, b.argv[0]), ...b.argv.slice(1)], {
    cwd: root, stdio: ['ignore', 'inherit', 'inherit'], detached: true, env: { ...process.env, AVIARY_BENCH_RUN: mark, AVIARY_BENCH_MANIFEST: manifest }
  })
  let timedOut = false
  let killTimer
  const timer = setTimeout(() => {
    timedOut = true
    console.error(`quick pass: ${b.name} still running after ${timeoutS} s: SIGTERM to its process group`)
    killGroup(child.pid, 'SIGTERM')
    killTimer = setTimeout(() => {
      console.error(`quick pass: ${b.name} still running ${GRACE_S} s after SIGTERM: SIGKILL`)
      killGroup(child.pid, 'SIGKILL')
    }, GRACE_S * 1000)
  }, timeoutS * 1000)
  // Interrupted, the pass stops the bench first (it cleans up), then exits.
  const stopBench = onCleanup(() => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    interrupted = true
    child.once('exit', resolve)
    killGroup(child.pid, 'SIGTERM')
    setTimeout(() => killGroup(child.pid, 'SIGKILL'), 25_000).unref()
  }), `stop the ${b.name} bench`)
  const { code, signal } = await new Promise((resolve) => child.once('exit', (c, s) => resolve({ code: c, signal: s })))
  clearTimeout(timer)
  clearTimeout(killTimer)
  await stopBench()
  const seconds = (performance.now() - t0) / 1000

  const problems = []
  if (timedOut) problems.push(`timed out after ${timeoutS} s`)
  else if (code !== 0) problems.push(signal ? `killed by ${signal}` : `exit code ${code}`)
  // Processes a bench stopped may take a moment to be gone.
  let left = marked(mark)
  for (let i = 0; i < 20 && left.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100))
    left = marked(mark)
  }
  killGroup(child.pid, 'SIGKILL')
  for (const p of left) {
    try { process.kill(p.pid, 'SIGKILL') } catch { /* gone */ }
  }
  if (left.length > 0) problems.push(`left ${left.length} process(es) running (killed now): ${left.map((p) => `${p.pid} ${p.cmd}`).join('; ')}`)
  const made = (existsSync(manifest) ? lines(readFileSync(manifest, 'utf8')) : []).map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)])
  const after = snapshot()
  const kept = made.filter(([kind, name]) => (kind === 'netns' ? after['network namespace'].includes(name) : existsSync(name))).map(([, name]) => name)
  if (kept.length > 0) problems.push(`left what it made: ${kept.join(', ')}`)
  const notes = []
  for (const [kind, names] of Object.entries(after)) {
    const added = names.filter((n) => !before[kind].includes(n) && !made.some(([, name]) => name === n))
    if (added.length > 0) (strict ? problems : notes).push(`new ${kind}s while it ran: ${added.join(', ')}`)
  }
  const failure = problems.length > 0 ? problems.join('; ') : null
  const note = notes.length > 0 ? `${notes.join('; ')} (made by it or by another program: --strict counts them as its own)` : null
  console.log(`\n${failure ? 'FAILED' : 'ok'}: ${b.name} in ${seconds.toFixed(1)} s${failure ? ` (${failure})` : ''}${note ? `\nnote: ${note}` : ''}`)
  return { name: b.name, seconds, failure, note }
}

/**
 * Runs the quick pass (or the benches named in `only`, comma-separated); `timeoutS` replaces every
 * bench's timeout; `strict` counts whatever appeared meanwhile as the bench's. Resolves with the exit code.
 */
export async function runQuickPass({ only = null, timeoutS = null, strict = false } = {}) {
  const all = quickBenches()
  const wanted = only ? only.split(',').map((s) => s.trim()).filter(Boolean) : null
  const unknown = (wanted ?? []).filter((n) => !all.some((b) => b.name === n))
  if (unknown.length > 0) {
    console.error(`quick pass: no bench named ${unknown.join(', ')} (there are: ${all.map((b) => b.name).join(', ')})`)
    return 2
  }
  const benches = wanted ? all.filter((b) => wanted.includes(b.name)) : all
  console.log(`Aviary quick pass: ${benches.length} bench${benches.length === 1 ? '' : 'es'} at the smallest size, one at a time; figures not judged`)
  const t0 = performance.now()
  const results = []
  const passDir = mkdtempSync(path.join(tmpdir(), 'aviary-quick-pass-'))
  onCleanup(() => rmSync(passDir, { recursive: true, force: true }), 'remove the pass folder')
  for (const b of benches) {
    if (interrupted) return 130
    results.push(await runOne(b, `${b.name}-${process.pid}-${Date.now()}`, { timeoutOverride: timeoutS, strict, passDir }))
  }
  rmSync(passDir, { recursive: true, force: true })
  if (interrupted) return 130
  const total = (performance.now() - t0) / 1000
  console.log(`\n## Quick pass: ${results.length} bench${results.length === 1 ? '' : 'es'} in ${(total / 60).toFixed(1)} min\n`)
  console.log('| bench | result | seconds |\n|---|---|---|')
  for (const r of results) {
    const result = `${r.failure ? `**FAILED**: ${r.failure}` : `ok${r.seconds > SLOW_S ? ` (slow: over ${SLOW_S} s)` : ''}`}${r.note ? `; note: ${r.note}` : ''}`
    console.log(`| ${r.name} | ${result} | ${r.seconds.toFixed(1)} |`)
  }
  const failed = results.filter((r) => r.failure)
  if (failed.length > 0) {
    console.error(`\nquick pass FAILED: ${failed.map((r) => `${r.name} (${r.failure})`).join('; ')}`)
    return 1
  }
  return 0
}
