#!/usr/bin/env node
// What routes cost (figures, not a test), in a routed lab (test/guests/routed-lab.ts, netns index
// 6): the built `aviary rooter` as root in the lab's host namespace, one guest on its bridge.
//   overhead    what a route adds to a task's host overhead: the run's two calls to the rooter
//               (enable before the machine starts, disable after it stopped), made with the
//               service's own client; per route kind, N rounds
//   throughput  HTTPS from the upstream to the guest (curl, 256 MiB of a 1 GiB-capable server),
//               direct on the internet route against through the decrypting proxy (mitmdump, as
//               a task with mitm=1 runs it); best of 3 each
// As root. Usage: node bench/routes.bench.mjs [--rounds N] [--mib M] [--quick (3 rounds, 8 MiB)]
import { build } from 'esbuild'
import { execFileSync, spawn } from 'node:child_process'
import path from 'node:path'
import { cleanup, made, numArg, own, stopChild, tempDir, track } from './cleanup.mjs'
import { root } from './netns-serve.mjs'

const ROUNDS = numArg('--rounds', 30, 3)
const MIB = numArg('--mib', 256, 8)

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
  const overhead = {}
  for (const [kind, extra] of [['none', {}], ['internet', { interface: 'up0' }], ['inetsim', { inetsim: lab.bridgeIp }]]) {
    const ms = []
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now()
      await rooter.enable(sock, { guest: g.ip, route: kind, resultserver: rs, ...extra })
      await rooter.disable(sock, g.ip)
      ms.push(performance.now() - t0)
    }
    overhead[kind] = { median_ms: +pick(ms, 0.5).toFixed(1), p90_ms: +pick(ms, 0.9).toFixed(1), max_ms: +Math.max(...ms).toFixed(1) }
  }

  const url = `https://upstream.example/big?bytes=${MIB * 1024 * 1024}`
  const curl = () => Number(execFileSync('ip', ['netns', 'exec', g.ns, 'curl', '-sk', '-o', '/dev/null', '-w', '%{speed_download}', url], { encoding: 'utf8' }))
  const best = () => Math.max(curl(), curl(), curl()) / 1024 / 1024
  await rooter.enable(sock, { guest: g.ip, route: 'internet', interface: 'up0', resultserver: rs })
  const direct = best()
  await rooter.disable(sock, g.ip)
  const mitmProc = await startMitmInHost(lab)
  await rooter.enable(sock, { guest: g.ip, route: 'internet', interface: 'up0', resultserver: rs, mitm: { ip: lab.bridgeIp, port: mitmProc.port, ports: [443] } })
  const proxied = best()
  await rooter.disable(sock, g.ip)
  await mitmProc.stop()
  console.log(JSON.stringify({
    bench: 'routes', rounds: ROUNDS, overhead_per_task: overhead,
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
