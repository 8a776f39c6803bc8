#!/usr/bin/env node
// What routes cost (figures, not a test), in a routed lab (test/guests/routed-lab.ts, netns index
// 6): the built `aviary rooter` as root in the lab's host namespace, one guest on its bridge.
//   overhead    what a route adds to a task's host overhead: the run's two calls to the rooter
//               (enable before the machine starts, disable after it stopped), made with the
//               service's own client; per route kind, N rounds
//   mitm        what mitm=1 adds to a task's wall time beyond its analysis window: real tasks
//               through `aviary serve` (as nobody) on the guest running the real agent, on the
//               internet route, alternately without and with mitm=1, the same Python sample
//               fetching HTTPS from the upstream, enforce_timeout so the window is the timeout;
//               wall = machine_locked to completed on the timeline, beyond = wall - timeout
//   throughput  HTTPS from the upstream to the guest (curl, 256 MiB of a 1 GiB-capable server),
//               direct on the internet route against through the decrypting proxy (mitmdump, as
//               a task with mitm=1 runs it); best of 3 each
// As root. Usage: node bench/routes.bench.mjs [--rounds N] [--tasks T] [--mib M] [--quick (3 rounds, 1 task each, 8 MiB)]
import { build } from 'esbuild'
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { cleanup, made, numArg, own, stopChild, tempDir, track } from './cleanup.mjs'
import { root, waitForRun } from './netns-serve.mjs'

const ROUNDS = numArg('--rounds', 30, 3)
const MIB = numArg('--mib', 256, 8)
const TASKS = numArg('--tasks', 4, 1)
const WINDOW_S = 10

const pick = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]
try {
  const work = tempDir('routes-bench-', path.join(root, 'out'))
  await build({
    absWorkingDir: root, outdir: work, outExtension: { '.js': '.mjs' }, bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'warning',
    entryPoints: { lab: 'test/guests/routed-lab.ts', client: 'src/core/network/rooter-client.ts' }
  })
  const { createRoutedLab } = await import(path.join(work, 'lab.mjs'))
  const { rooter } = await import(path.join(work, 'client.mjs'))
  process.chdir(root)
  for (const ns of ['avrl6h', 'avrl6u', 'avrl6l', 'avrl6v', 'avrl6g0']) made('netns', ns) // test/guests/routed-lab.ts's names for index 6
  const lab = await own(createRoutedLab({ index: 6, guests: 1 }), (l) => l.close(), 'close the routed lab')
  await lab.startRooter()
  const sock = path.join(lab.dir, 'rooter.sock')
  const g = lab.guests[0]
  const rs = { ip: lab.bridgeIp, port: 2042 }
  // The bench's own owner id at the rooter, as a service's (rooterOwner of a data folder).
  const owner = 'b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0'
  const overhead = {}
  for (const [kind, extra] of [['none', {}], ['internet', { interface: 'up0' }], ['inetsim', { inetsim: lab.bridgeIp }]]) {
    const ms = []
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now()
      await rooter.enable(sock, { owner, guest: g.ip, route: kind, resultserver: rs, ...extra })
      await rooter.disable(sock, owner, g.ip)
      ms.push(performance.now() - t0)
    }
    overhead[kind] = { median_ms: +pick(ms, 0.5).toFixed(1), p90_ms: +pick(ms, 0.9).toFixed(1), max_ms: +Math.max(...ms).toFixed(1) }
  }

  const mitm = await mitmTasks(lab, g, sock)

  const url = `https://upstream.example/big?bytes=${MIB * 1024 * 1024}`
  const curl = () => Number(execFileSync('ip', ['netns', 'exec', g.ns, 'curl', '-sk', '-o', '/dev/null', '-w', '%{speed_download}', url], { encoding: 'utf8' }))
  const best = () => Math.max(curl(), curl(), curl()) / 1024 / 1024
  await rooter.enable(sock, { owner, guest: g.ip, route: 'internet', interface: 'up0', resultserver: rs })
  const direct = best()
  await rooter.disable(sock, owner, g.ip)
  const mitmProc = await startMitmInHost(lab)
  await rooter.enable(sock, { owner, guest: g.ip, route: 'internet', interface: 'up0', resultserver: rs, mitm: { ip: lab.bridgeIp, port: mitmProc.port, ports: [443] } })
  const proxied = best()
  await rooter.disable(sock, owner, g.ip)
  await mitmProc.stop()
  console.log(JSON.stringify({
    bench: 'routes', rounds: ROUNDS, overhead_per_task: overhead, mitm_wall_beyond_window: mitm,
    https_mib_per_s: { direct: +direct.toFixed(1), through_proxy: +proxied.toFixed(1), ratio: +(proxied / direct).toFixed(2), mib: MIB }
  }, null, 1))
} finally {
  await cleanup()
}

/** mitmdump in the lab's host namespace, with the options src/core/network/mitm.ts gives it. */
async function startMitmInHost(lab) {
  const port = 18081
  const child = spawn('ip', ['netns', 'exec', lab.host, 'mitmdump', '--mode', 'transparent', '--listen-host', lab.bridgeIp, '--listen-port', String(port),
    '--set', `confdir=${path.join(lab.dir, 'mitm-conf')}`, '--set', 'ssl_insecure=true', '--set', 'stream_large_bodies=4m', '-q',
    '-s', path.join(root, 'resources/mitm/aviary_flows.py')], { stdio: 'ignore', detached: true, env: { ...process.env, AVIARY_FLOWS: path.join(lab.dir, 'flows.jsonl') } })
  track(child, { group: true, label: 'stop mitmdump' })
  for (let i = 0; i < 100; i++) {
    const up = await lab.inHost(['ss', '-Hltn', `sport = :${port}`]).then((o) => o.includes(String(port)), () => false)
    if (up) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return { port, stop: () => stopChild(child, { group: true }) }
}

/**
 * Tasks through the real service, alternately without and with mitm=1, TASKS of each: the run's
 * wall time beyond its analysis window, and what mitm=1 adds (median against median). The service
 * is stopped afterwards, so the throughput part has the rooter to itself.
 */
async function mitmTasks(lab, g, sock) {
  const med = (xs) => pick(xs, 0.5)
  const dataDir = lab.dataDir({
    driver: 'physical', tcpdump: lab.tcpdump, resultserver: { port: 0 }, screenshots: { interval: 0 },
    routing: { default: 'none', rooter: sock, internet: { interface: 'up0' } },
    machines: [{ name: 'bench0', ip: g.ip, platform: 'linux', interface: g.hostIf, resultserver_ip: lab.bridgeIp }]
  })
  await g.startAgent()
  const { proc, url } = await lab.serve(dataDir)
  const sample = "import ssl, urllib.request\n" +
    "urllib.request.urlopen('https://upstream.example/bench', context=ssl._create_unverified_context(), timeout=10).read()\n"
  const beyond = { plain: [], mitm: [] }
  const parts = { plain: [], mitm: [] }
  let decrypted = 0
  const trustMs = []
  try {
    for (let i = 0; i < TASKS; i++) {
      for (const kind of ['plain', 'mitm']) {
        const form = new FormData()
        form.set('file', new Blob([sample]), `bench-${kind}-${i}.py`)
        form.set('machine', 'bench0')
        form.set('timeout', String(WINDOW_S))
        form.set('enforce_timeout', '1')
        form.set('options', `route=internet,mitm=${kind === 'mitm' ? 1 : 0}`)
        const { task_id: id } = await (await fetch(`${url}/tasks/create/file`, { method: 'POST', body: form })).json()
        const run = await waitForRun(url, id)
        if (run.status !== 'completed' && run.status !== 'reported' && run.status !== 'processing') throw new Error(`task ${id} ended ${run.status}`)
        beyond[kind].push(run.wall - WINDOW_S * 1000)
        // Where the time goes: before the machine starts (route, proxy), the guest's part beyond the window, after it stopped.
        const { timeline } = await (await fetch(`${url}/tasks/timeline/${id}`)).json()
        const at = (stage) => timeline.find((e) => e.stage === stage)?.time
        parts[kind].push({ before_start: at('reverting') - at('machine_locked'), guest: at('finished') - at('agent_answered') - WINDOW_S * 1000,
          after_stop: at('completed') - at('machine_stopped') })
        if (kind === 'mitm') {
          for (let w = 0; w < 600; w++) {
            const { task } = await (await fetch(`${url}/tasks/view/${id}`)).json()
            if (task.status === 'reported' || task.status.startsWith('failed')) break
            await new Promise((r) => setTimeout(r, 100))
          }
          const report = await (await fetch(`${url}/tasks/report/${id}/json`)).json()
          if ((report.network?.https_ex ?? []).some((e) => e.uri === 'https://upstream.example/bench')) decrypted++
          // What the analyzer says trusting and untrusting the CA took in the guest.
          const log = readFileSync(path.join(dataDir, 'storage', 'analyses', String(id), 'analysis.log'), 'utf8')
          for (const m of log.matchAll(/the proxy's CA (?:\(.*\) is trusted for this run|is no longer trusted): .* \((\d+) ms\)/g)) trustMs.push(Number(m[1]))
        }
      }
    }
  } finally {
    proc.kill('SIGTERM')
    await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)))
  }
  const part = (kind, k) => +med(parts[kind].map((p) => p[k])).toFixed(0)
  return {
    tasks_each: TASKS, window_s: WINDOW_S, decrypted: `${decrypted}/${TASKS}`,
    plain_median_ms: +med(beyond.plain).toFixed(0), mitm_median_ms: +med(beyond.mitm).toFixed(0),
    mitm_adds_ms: +(med(beyond.mitm) - med(beyond.plain)).toFixed(0),
    mitm_max_ms: +Math.max(...beyond.mitm).toFixed(0),
    guest_trust_ms: trustMs.length > 0 ? { median: med(trustMs), max: Math.max(...trustMs), of: trustMs.length } : null,
    where_median_ms: Object.fromEntries(['plain', 'mitm'].map((kind) => [kind, { before_start: part(kind, 'before_start'), guest: part(kind, 'guest'), after_stop: part(kind, 'after_stop') }]))
  }
}
