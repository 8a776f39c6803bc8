// `npm test`'s second step: one `vitest run` (two files at a time, vitest.config.ts), or, with
// AVIARY_TEST_SIDE_BY_SIDE=1, the two Vitest projects as two runs side by side:
//
// - The files under test/ (guests, routed labs, browsers, the built programs; Vitest project
//   `isolated`) run two at a time, as in the one run. They wait on guests, task time limits and
//   child processes, and left about a fifth of the two cores idle while they ran.
// - The unit and component files under src/ (project `unit`) run beside them in a second Vitest at
//   the lowest CPU priority (nice 19), taking the CPU the guests and browsers leave, instead of
//   running alone after the files under test/ for the last six minutes.
//
// Side by side took 18 min 18 s and 19 min 50 s here against 22 min 27 s, but it is not the
// default: at nice 19 a unit file gets almost no CPU while both cores are busy, and unit tests
// that wait a few seconds of wall time on a real process then fail (rooter.test's curl to INetSim,
// analyzer.test's upload, hostile.test's and json-writer's before they were given more); at
// nice 10 the files under test/ ended 80 s later and the console replay missed its limit
// (docs/benchmarks.md, "The unit files beside the guests"). It is for whoever works on making
// the unit files hold at that priority.
//
// Side by side, the unit run's output is printed whole when it ends, so the two never interleave,
// and the builds the tests need (test/global-setup.ts) are made once before both start: each
// Vitest runs the global setup, and two builds at once would write the same files. With
// arguments (`npm test -- FILE`) or AVIARY_TEST_WORKERS=1 (CI) it is always the one run.
import { spawn } from 'node:child_process'
import { stripVTControlCharacters } from 'node:util'

const vitest = ['node_modules/vitest/vitest.mjs', 'run']
const args = process.argv.slice(2)

/** Runs `node argv` with `opts`; resolves with its exit code (1 for a signal). */
function node(argv, opts = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, argv, { stdio: 'inherit', ...opts })
    child.once('error', (err) => {
      process.stderr.write(`${err.message}\n`)
      resolve(1)
    })
    child.once('exit', (code) => resolve(code ?? 1))
  })
}

if (args.length > 0 || process.env.AVIARY_TEST_WORKERS === '1' || process.env.AVIARY_TEST_SIDE_BY_SIDE !== '1') {
  process.exitCode = await node([...vitest, ...args])
} else {
  const built = await node(['--import', 'tsx', '--input-type=module', '-e', "await (await import('./test/global-setup.ts')).default()"])
  if (built !== 0) {
    process.exitCode = built
  } else {
    // nice (coreutils): the priority passes to every worker and every process a test starts.
    // Lowering one's own priority needs no privilege.
    const unit = spawn('nice', ['-n', '19', process.execPath, ...vitest, '--project', 'unit'], {
      stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: process.stdout.isTTY ? '1' : '0' }
    })
    let unitOut = ''
    unit.stdout.on('data', (b) => { unitOut += b })
    unit.stderr.on('data', (b) => { unitOut += b })
    const unitDone = new Promise((resolve) => {
      unit.once('error', (err) => { unitOut += `${err.message}\n`; resolve(1) })
      unit.once('exit', (code) => resolve(code ?? 1))
    })
    process.stdout.write('The unit files (src/) run beside these at the lowest priority (nice 19); their output follows when they end.\n')
    const isolated = await node([...vitest, '--project', 'isolated'])
    const unitCode = await unitDone
    process.stdout.write(`\n── the unit files (Vitest project unit) ──\n${unitOut}`)
    const summary = (out) => stripVTControlCharacters(out).split('\n').filter((l) => /^\s*(Test Files|Tests)\s/.test(l)).map((l) => l.trim())
    process.stdout.write(`\nunit: ${summary(unitOut).join('; ') || `exit ${unitCode}`}\nisolated: exit ${isolated}\n`)
    process.exitCode = isolated !== 0 || unitCode !== 0 ? 1 : 0
  }
}
