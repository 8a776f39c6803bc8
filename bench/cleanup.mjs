// What every bench shares so that none leaves anything behind and each can run small:
//
//   onCleanup(fn)   registers a step (sync or async) that undoes something the bench made: a
//                   network namespace and its agents, a server, a browser, a PostgreSQL cluster, a
//                   Wine prefix, a temp folder. Returns a function that runs the step now and
//                   forgets it (for what a bench stops on its own midway).
//   cleanup()       runs every registered step once, the last registered first, each bounded in
//                   time and its errors reported, not thrown. Benches call it in their `finally`.
//   own(promise, undo)  something being made (a guest, a browser), undone at cleanup once made,
//                   even when the signal comes while it is being made.
//   tempDir(prefix, parent)  mkdtemp + a step that removes it.
//   track(child)    a spawned process, stopped at cleanup (SIGTERM, SIGKILL after a grace period;
//                   its whole process group when it leads one); forgotten once it exits.
//   quick           true with --quick: the bench runs at its smallest meaningful size, its figures
//                   are printed but mean nothing (bench/run.mjs --quick runs every bench so).
//
// On SIGINT, SIGTERM or SIGHUP, and on an uncaught error or unhandled rejection, the steps run and
// the process exits with 128 + the signal's number (1 for an error). A second signal while the
// steps run says so; a third exits at once. Cleanup is given 60 s in all, then the process exits.
// Synchronous work (execFileSync of wrk, tshark, curl) delays the handler until it returns: the
// quick pass signals the bench's whole process group, so those children end first.
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

export const args = process.argv.slice(2)
export const quick = args.includes('--quick')

/** The number after `--name`, or `dflt` (`quickDflt` with --quick when given). */
export function numArg(name, dflt, quickDflt = dflt) {
  const i = args.indexOf(name)
  if (i < 0) return quick ? quickDflt : dflt
  const n = Number(args[i + 1])
  if (!Number.isFinite(n)) {
    console.error(`bench: ${name} needs a number, got ${args[i + 1]}`)
    process.exit(2)
  }
  return n
}

/** The arguments that are neither flags nor a flag's value (`--name value`), for benches taking `[MiB] [rounds]`. */
export function positional(flagsWithValue = []) {
  const out = []
  for (let i = 0; i < args.length; i++) {
    if (flagsWithValue.includes(args[i])) i++
    else if (!args[i].startsWith('--')) out.push(args[i])
  }
  return out
}

const STEP_MS = 30_000
const TOTAL_MS = 60_000
const steps = []
let running = null

export function onCleanup(fn, label = fn.name || 'cleanup step') {
  const step = { fn, label }
  steps.push(step)
  return async () => {
    const i = steps.indexOf(step)
    if (i < 0) return
    steps.splice(i, 1)
    await runStep(step)
  }
}

async function runStep(step) {
  let timer
  try {
    await Promise.race([
      Promise.resolve().then(step.fn),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`still running after ${STEP_MS / 1000} s`)), STEP_MS) })
    ])
  } catch (err) {
    console.error(`bench cleanup (${step.label}): ${err?.message ?? err}`)
  } finally {
    clearTimeout(timer)
  }
}

/** Runs every registered step, last first; steps registered meanwhile run too. */
export function cleanup() {
  running ??= (async () => {
    while (steps.length > 0) await runStep(steps.pop())
    running = null
  })()
  return running
}

/**
 * `making` (a promise of something being made: a guest, a browser, a database cluster) is undone
 * with `undo(it)` at cleanup, also when the signal comes while it is still being made: the step
 * waits for it first. Returns `making`.
 */
export function own(making, undo, label = 'undo') {
  const forget = onCleanup(async () => {
    const it = await making.catch(() => undefined)
    if (it !== undefined) await undo(it)
  }, label)
  return Object.assign(making, { release: forget })
}

/**
 * Notes a folder or network namespace the bench made (and undoes at cleanup) in the file
 * AVIARY_BENCH_MANIFEST names, if set: the quick pass checks that each is gone once the bench ended.
 */
export function made(kind, name) {
  if (process.env.AVIARY_BENCH_MANIFEST) appendFileSync(process.env.AVIARY_BENCH_MANIFEST, `${kind} ${name}\n`)
}

export function tempDir(prefix, parent = tmpdir()) {
  mkdirSync(parent, { recursive: true })
  const dir = mkdtempSync(path.join(parent, prefix))
  made('folder', dir)
  onCleanup(() => rmSync(dir, { recursive: true, force: true }), `remove ${dir}`)
  return dir
}

/**
 * Stops `child`: `signal` (SIGTERM), then SIGKILL after `graceMs`; with `group`, to its whole
 * process group (it was spawned `detached`, so it leads one). Resolves once it has exited.
 */
export function stopChild(child, { graceMs = 10_000, signal = 'SIGTERM', group = false } = {}) {
  const send = (sig) => {
    try {
      if (group) process.kill(-child.pid, sig)
      else child.kill(sig)
    } catch { /* gone */ }
  }
  if (!child || child.pid === undefined) return Promise.resolve()
  if (child.exitCode !== null || child.signalCode !== null) {
    if (group) send('SIGKILL') // what it left in its group
    return Promise.resolve()
  }
  return new Promise((resolve) => {
    const kill = setTimeout(() => send('SIGKILL'), graceMs)
    child.once('exit', () => {
      clearTimeout(kill)
      if (group) send('SIGKILL')
      resolve()
    })
    send(signal)
  })
}

/** Registers `child` to be stopped at cleanup (see stopChild); dropped once it exits on its own. */
export function track(child, { group = false, graceMs = 10_000, label } = {}) {
  const name = label ?? `stop ${path.basename(String(child.spawnargs?.[1] ?? child.spawnfile))} (pid ${child.pid})`
  const forget = onCleanup(() => stopChild(child, { graceMs, group }), name)
  child.once('exit', () => void forget())
  return child
}

let exiting = false
let signals = 0
function exitAfterCleanup(code, why, { signal = false } = {}) {
  if (exiting) {
    // An error while the steps run (what they stopped failing in the bench's own code) changes
    // nothing; a third signal exits at once.
    if (!signal) return
    if (++signals === 2) console.error('bench: still cleaning up (send the signal again to exit at once)')
    else process.exit(code)
    return
  }
  exiting = true
  if (signal) signals++
  if (why) console.error(why)
  setTimeout(() => {
    console.error(`bench: cleanup took over ${TOTAL_MS / 1000} s; exiting`)
    process.exit(code)
  }, TOTAL_MS).unref()
  void cleanup().finally(() => process.exit(code))
}

for (const [sig, n] of [['SIGHUP', 1], ['SIGINT', 2], ['SIGTERM', 15]]) {
  process.on(sig, () => exitAfterCleanup(128 + n, `bench: ${sig}, cleaning up`, { signal: true }))
}
process.on('uncaughtException', (err) => exitAfterCleanup(1, err?.stack ?? String(err)))
process.on('unhandledRejection', (err) => exitAfterCleanup(1, err?.stack ?? String(err)))
// A bench that ends without calling cleanup() still gets its steps run.
process.on('beforeExit', () => { if (steps.length > 0) void cleanup() })
