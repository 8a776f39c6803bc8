#!/usr/bin/env node
// Machines bench (figures, not a test): what `aviary machines create linux` and its machines cost
// on this host, through the builder's own code (bundled from src/ with esbuild), on a libvirt
// network of its own (avlxb, 10.218.0.0/24, made by setup's code; removed afterwards). As root.
//   create, cold cache   an empty package cache and no image: download, build, boot, snapshot, doctor
//   create, warm cache   the package cache kept, the image gone: built again offline-capable
//   create, image built  the image reused: overlay, boot, snapshot, doctor
//   per create: the image step, boot to the agent, settle, the snapshot, the doctor, from its events
//   image                the compressed qcow2 base; a machine's overlay with its snapshot
//   revert to agent      snapshot-revert --running until the agent answers GET /, N times
//   memory dump          virsh dump --memory-only of a running machine
//   task                 the built `aviary serve` running short tasks (sleep 1) on one machine, unrouted
//                        (no rooter here): per task, machine_locked → completed minus the analyzer's
//                        own analyzer_started → finished, and the revert's part of it
// --quick (CI's quick pass): one create reusing out/linux-guest/ (the images and package cache the
// tests keep; built there first if missing), 2 reverts, 1 task. Prints one JSON line.
// Usage: node bench/machines.bench.mjs [--quick] [--reverts N] [--tasks N] [--no-cold]
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { args, cleanup, numArg, onCleanup, quick, tempDir } from './cleanup.mjs'
import { root, serve, waitForRun } from './netns-serve.mjs'

const REVERTS = numArg('--reverts', 10, 2)
const TASKS = numArg('--tasks', 5, 1)
const URI = 'qemu:///system'
const AGENT = path.join(root, 'out/agent/aviary-agent-linux-x64')
const PERSISTENT = path.join(root, 'out/linux-guest')
const s = (ms) => +(ms / 1000).toFixed(1)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

try {
  execFileSync('sh', ['-c', 'virsh -c qemu:///system version >/dev/null 2>&1 || { pgrep -x virtlogd >/dev/null || virtlogd -d; pgrep -x libvirtd >/dev/null || libvirtd -d; for i in $(seq 90); do virsh -c qemu:///system version >/dev/null 2>&1 && break; sleep 1; done; }'])
  try { execFileSync('sh', ['-c', `test -x ${AGENT} || node scripts/build-agent.mjs --linux-only`], { cwd: root, stdio: 'ignore' }) } catch { /* create says so */ }
  const work = tempDir('aviary-machines-bench-', path.join(root, 'out'))
  const entry = path.join(work, 'builder.mjs')
  await build({
    absWorkingDir: root, stdin: { resolveDir: root, loader: 'ts', contents: `
      export { createLinuxMachines } from './src/core/builder/linux-machines'
      export { ensureGuestNetwork, guestNetwork, qemuAccessSteps } from './src/core/builder/setup'
      export { Libvirt } from './src/core/builder/libvirt-host'
      export { createLayout } from './src/core/storage/layout'
      export { probeAgent } from './src/core/guest/agent-identity'` },
    outfile: entry, bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'warning'
  })
  const b = await import(pathToFileURL(entry).href)
  const net = b.guestNetwork('avlxb', '10.218.0.0/24')
  const lv = new b.Libvirt(URI)
  const ours = async () => (await lv.domainNames()).filter((d) => d.startsWith('avlxb-'))
  for (const d of await ours()) await lv.remove(d)
  onCleanup(async () => {
    for (const d of await ours()) await lv.remove(d)
    await lv.run(['net-destroy', net.name], 'stop').catch(() => undefined)
    await lv.run(['net-undefine', net.name], 'undefine').catch(() => undefined)
  }, 'remove the avlxb domains and network')
  // libvirt turns IPv4 forwarding on for the whole host when it starts a forwarding network; put
  // back at once (other tests expect the host as it was; nothing here is forwarded) and at the end.
  const forwarding = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim()
  const restoreForwarding = () => { if (readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim() !== forwarding) execFileSync('sysctl', ['-qw', `net.ipv4.ip_forward=${forwarding}`]) }
  onCleanup(restoreForwarding, 'put net.ipv4.ip_forward back')
  await b.ensureGuestNetwork(lv, net)
  restoreForwarding()

  const data = path.join(work, 'data')
  for (const sub of ['machines', 'images']) mkdirSync(path.join(data, sub), { recursive: true })
  const layout = b.createLayout(data)
  const fresh = (sub) => { rmSync(path.join(data, sub), { recursive: true, force: true }); mkdirSync(path.join(data, sub), { recursive: true }) }
  const shared = (sub) => { rmSync(path.join(data, sub), { recursive: true, force: true }); mkdirSync(path.join(PERSISTENT, sub), { recursive: true }); symlinkSync(path.join(PERSISTENT, sub), path.join(data, sub)) }
  for (const st of b.qemuAccessSteps(data)) execFileSync(st.cmd[0], st.cmd.slice(1))

  /** One create of one machine, with the durations of its steps from its events. */
  const create = async (name, o = {}) => {
    const events = []
    const t = Date.now()
    const r = await b.createLinuxMachines({ name, network: net.name, ...o }, { layout, agentFile: AGENT, uri: URI }, (e) => events.push(e))
    const total = Date.now() - t
    const startOf = (step) => events.find((e) => e.kind === 'step' && e.step === step)?.elapsedMs
    const next = (step) => {
      const i = events.findIndex((e) => e.kind === 'step' && e.step === step)
      return events.slice(i + 1).find((e) => e.kind === 'step')?.elapsedMs ?? total
    }
    const part = (step) => s(next(step) - startOf(step))
    const m = r.machines[0]
    return {
      r, m,
      figures: {
        total_s: s(total), image_s: part('image'), image: r.image.cached ? 'reused' : 'built', boot_to_agent_s: s(m.bootMs),
        settle_s: part('settle'), snapshot_s: s(m.snapshotMs), doctor_s: part('doctor')
      }
    }
  }

  const out = { bench: 'linux machines', accel: null, create: {}, image_mib: null, overlay_mib: null }
  let last
  if (quick) {
    shared('images')
    shared('cache')
    last = await create('q1')
    out.create.reused_cache = last.figures
  } else {
    if (!args.includes('--no-cold')) {
      fresh('images')
      fresh('cache')
      out.create.cold_cache = (await create('cold')).figures
    } else {
      shared('cache')
    }
    rmSync(path.join(data, 'images'), { recursive: true, force: true })
    mkdirSync(path.join(data, 'images'))
    out.create.warm_cache = (await create('warm')).figures
    last = await create('built')
    out.create.image_built = last.figures
  }
  out.accel = last.r.accel.type
  out.image_mib = +(last.r.image.diskBytes / 2 ** 20).toFixed(1)
  out.overlay_mib = +(Number(execFileSync('du', ['-sb', last.m.disk], { encoding: 'utf8' }).split('\t')[0]) / 2 ** 20).toFixed(1)

  const reverts = []
  for (let i = 0; i < REVERTS; i++) {
    await lv.destroyIfRunning(last.m.label)
    const t = Date.now()
    await lv.run(['snapshot-revert', last.m.label, 'clean', '--running'], 'revert', 300_000)
    for (;;) {
      if (await b.probeAgent(last.m.ip, 8000, 2000).then(() => true, () => false)) break
      if (Date.now() - t > 300_000) throw new Error('the agent did not answer within 300 s of a revert')
      await new Promise((r) => setTimeout(r, 100))
    }
    reverts.push(Date.now() - t)
  }
  out.revert_to_agent_s = { median: s(median(reverts)), max: s(Math.max(...reverts)), runs: REVERTS }
  const dump = path.join(work, 'memory.dmp')
  const td = Date.now()
  await lv.run(['dump', last.m.label, dump, '--memory-only', '--format', 'elf'], 'dump', 600_000)
  out.memory_dump = { s: s(Date.now() - td), mib: +(Number(execFileSync('du', ['-sb', dump], { encoding: 'utf8' }).split('\t')[0]) / 2 ** 20).toFixed(0) }
  rmSync(dump)
  await lv.destroyIfRunning(last.m.label)

  // Tasks on the last machine, through the built service; no rooter here, so nothing is routed.
  const fleet = JSON.parse(readFileSync(layout.machinesConfig, 'utf8'))
  delete fleet.routing
  writeFileSync(layout.machinesConfig, JSON.stringify({ ...fleet, resultserver: { ip: net.hostIp, port: 0 }, machines: fleet.machines.filter((m) => m.name === last.m.name) }))
  const { url } = await serve(data)
  const rows = []
  for (let n = 0; n < TASKS; n++) {
    const form = new FormData()
    form.set('file', new Blob([`#!/bin/sh\nsleep 1\necho ${n} > /tmp/out-${n}.txt\n`]), `short-${n}.sh`)
    form.set('timeout', '30')
    form.set('machine', last.m.name)
    const id = (await (await fetch(`${url}/tasks/create/file`, { method: 'POST', body: form })).json()).task_id
    const row = await waitForRun(url, id, 250, 900_000)
    const { timeline } = await (await fetch(`${url}/tasks/timeline/${id}`)).json()
    const at = (stage) => timeline.find((e) => e.stage === stage)?.time
    const gaps = {}
    for (let i = 1; i < timeline.length; i++) gaps[`${timeline[i - 1].stage}→${timeline[i].stage}`] = timeline[i].time - timeline[i - 1].time
    rows.push({ ...row, revert: at('agent_answered') - at('reverting'), gaps })
  }
  const ok = rows.filter((r) => r.status !== 'failed_analysis' && Number.isFinite(r.analysis))
  out.task = {
    tasks: TASKS, failed: TASKS - ok.length,
    host_overhead_s_median: ok.length ? s(median(ok.map((r) => r.wall - r.analysis))) : null,
    of_which_revert_to_agent_s_median: ok.length ? s(median(ok.map((r) => r.revert))) : null,
    whole_run_s_median: ok.length ? s(median(ok.map((r) => r.wall))) : null,
    // where the run's time goes, stage to stage (the timeline's own order), medians in s
    stages_s_median: Object.fromEntries(Object.keys(ok[0]?.gaps ?? {}).map((k) => [k, s(median(ok.map((r) => r.gaps[k] ?? 0)))]))
  }
  console.log(JSON.stringify(out))
} finally {
  await cleanup()
}
