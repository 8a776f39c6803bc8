#!/usr/bin/env node
// Guest-agent upload throughput: `AVIARY_CUCKOO_AGENT=<agent.py> [AVIARY_CAPE_AGENT=<agent.py>]
// node bench/guest.bench.mjs [MiB] [rounds]` (default 256 MiB, 3 rounds), as root. The real
// agent.py runs in the network namespace `avgs` behind a veth pair (10.206.0.1 host ↔ 10.206.0.2
// guest), as in src/core/guest/guest-session.live.test.ts. Each round times a whole
// GuestSession.start() of a file task with a sample of that size (src/core/guest bundled with
// esbuild; the sample is streamed from disk), and as the baseline `curl -F` posting the same file
// to the same agent's /store. Prints one JSON line per agent: MB/s (10^6 bytes/s, best round) of
// both, their ratio, and this process's peak RSS (it must stay far below the sample size: the
// sample is never held in memory). Cleans up the namespace, the agents and the files, also when
// interrupted (bench/cleanup.mjs).
// --quick: 8 MiB, 1 round. Without either agent.py (CI has neither: they come from Cuckoo's and
// CAPE's repositories), --quick measures the same way against Aviary's own agent (`aviary agent`,
// which speaks the same protocol), so the harness still runs, and says which agents it skipped.
import { build } from 'esbuild'
import { execFileSync, spawn } from 'node:child_process'
import { rmSync, openSync, writeSync, closeSync, existsSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { homedir } from 'node:os'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { cleanup, made, onCleanup, positional, quick, stopChild, tempDir, track } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const MIB = Number(positional()[0] ?? (quick ? 8 : 256))
const ROUNDS = Number(positional()[1] ?? (quick ? 1 : 3))
const NS = 'avgs'
const HOST_IF = 'avgs-h'
const GUEST_IF = 'avgs-g'
const GUEST_IP = '10.206.0.2'
const pyAgents = [
  { name: 'cuckoo-2.0.7', env: 'AVIARY_CUCKOO_AGENT', file: process.env.AVIARY_CUCKOO_AGENT, python: process.env.AVIARY_PYTHON2 ?? path.join(homedir(), '.pyenv/versions/2.7.18/bin/python'), port: 8000 },
  { name: 'capev2', env: 'AVIARY_CAPE_AGENT', file: process.env.AVIARY_CAPE_AGENT, python: process.env.AVIARY_PYTHON3 ?? path.join(homedir(), '.pyenv/versions/3.11.7/bin/python3.11'), port: 8010 }
]
const agents = pyAgents.filter((a) => a.file && existsSync(a.file)).map((a) => ({ ...a, cmd: [a.python, a.file, '0.0.0.0', String(a.port)] }))
for (const a of pyAgents.filter((p) => !agents.some((x) => x.name === p.name))) {
  console.error(`bench: ${a.name} skipped: ${a.env} does not name a fetched agent.py (see src/core/guest/guest-session.live.test.ts)`)
}
if (agents.length === 0) {
  if (!quick) {
    console.error('bench: set AVIARY_CUCKOO_AGENT and/or AVIARY_CAPE_AGENT to a fetched agent.py')
    process.exit(1)
  }
  console.error("bench: --quick without either agent.py: measuring against Aviary's own agent (aviary agent) instead")
  agents.push({ name: 'aviary (stand-in)', cmd: [process.execPath, path.join(root, 'bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000'], port: 8000 })
}

const ip = (...args) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })
const quietly = (fn) => { try { fn() } catch { /* already gone */ } }
function netnsDown() {
  quietly(() => ip('link', 'del', HOST_IF))
  quietly(() => ip('netns', 'del', NS))
}
function netnsUp() {
  netnsDown()
  ip('netns', 'add', NS)
  ip('link', 'add', HOST_IF, 'type', 'veth', 'peer', 'name', GUEST_IF)
  ip('link', 'set', GUEST_IF, 'netns', NS)
  ip('addr', 'add', '10.206.0.1/24', 'dev', HOST_IF)
  ip('link', 'set', HOST_IF, 'up')
  ip('-n', NS, 'addr', 'add', `${GUEST_IP}/24`, 'dev', GUEST_IF)
  ip('-n', NS, 'link', 'set', GUEST_IF, 'up')
  ip('-n', NS, 'link', 'set', 'lo', 'up')
}

async function startAgent(a, out) {
  const marker = process.env.AVIARY_BENCH_RUN ? { AVIARY_BENCH_RUN: process.env.AVIARY_BENCH_RUN } : {} // the quick pass's leftover check
  const proc = track(spawn('ip', ['netns', 'exec', NS, ...a.cmd], {
    stdio: 'ignore', env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root', AVIARY_TEST_OUT: out, AVIARY_AGENT_PORT: String(a.port), ...marker }
  }), { graceMs: 2000, label: `stop the ${a.name} agent` })
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((resolve) => {
      const s = net.connect({ host: GUEST_IP, port: a.port }, () => { s.destroy(); resolve(true) })
      s.on('error', () => resolve(false))
    })
    if (ok) return proc
    await sleep(100)
  }
  await stopChild(proc, { signal: 'SIGKILL' })
  throw new Error(`${a.name}: the agent did not start`)
}

const work = tempDir('aviary-guest-bench-')
const guestDirs = new Set() // analyzer folders the agents created, from GuestSession's log
let sampleName = null
onCleanup(() => {
  if (sampleName) rmSync(`/tmp/${sampleName}`, { force: true })
  for (const d of guestDirs) rmSync(d, { recursive: true, force: true })
}, 'remove what the agents stored')
try {
  onCleanup(netnsDown, `remove netns ${NS}`)
  made('netns', NS)
  netnsUp()
  const bundle = path.join(work, 'guest.cjs')
  await build({ entryPoints: [path.join(root, 'src/core/guest/guest-session.ts')], bundle: true, platform: 'node', format: 'cjs', outfile: bundle, logLevel: 'error' })
  const { GuestSession } = createRequire(import.meta.url)(bundle)
  sampleName = `aviary-bench-${randomBytes(4).toString('hex')}.bin`
  const sample = path.join(work, sampleName)
  const fd = openSync(sample, 'w')
  const block = randomBytes(1024 * 1024)
  for (let i = 0; i < MIB; i++) writeSync(fd, block)
  closeSync(fd)
  const bytes = MIB * 1024 * 1024

  for (const a of agents) {
    const proc = await startAgent(a, work)
    const session = new GuestSession({
      ip: GUEST_IP, port: a.port, log: (m) => { const d = / to (\/tmp\/[a-z]{5,10})$/.exec(m)?.[1]; if (d) guestDirs.add(d) }
    })
    const spec = {
      taskId: 1, category: 'file', target: sample, package: null, options: null, timeout: 30, enforceTimeout: false,
      terminateProcesses: false, clock: new Date(), file: { name: sampleName, type: 'data', peExports: [], localPath: sample },
      resultserver: { ip: '10.206.0.1', port: 2042 }, analyzer: { dir: path.join(root, 'test/fixtures/agents/analyzer-py'), monitor: null },
      pushFiles: [], platform: 'linux'
    }
    let bestSession = Infinity
    let bestCurl = Infinity
    for (let r = 0; r < ROUNDS; r++) {
      execFileSync('sync')
      let t = process.hrtime.bigint()
      await session.start(spec)
      bestSession = Math.min(bestSession, Number(process.hrtime.bigint() - t) / 1e9)
      await session.waitForCompletion({ timeoutMs: 30_000 })
      execFileSync('sync')
      t = process.hrtime.bigint()
      execFileSync('curl', ['-sS', '-o', '/dev/null', '-H', 'Expect:', '-F', `filepath=/tmp/${sampleName}`, '-F', `file=@${sample}`, `http://${GUEST_IP}:${a.port}/store`])
      bestCurl = Math.min(bestCurl, Number(process.hrtime.bigint() - t) / 1e9)
    }
    await stopChild(proc, { graceMs: 2000 })
    rmSync(`/tmp/${sampleName}`, { force: true })
    const mbps = (s) => Math.round((bytes / 1e6 / s) * 10) / 10
    console.log(JSON.stringify({
      agent: a.name, sampleMiB: MIB, rounds: ROUNDS,
      guestSessionStartMBps: mbps(bestSession), curlStoreMBps: mbps(bestCurl),
      ratio: Math.round((bestCurl / bestSession) * 100) / 100,
      peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024)
    }))
  }
} finally {
  await cleanup()
}
