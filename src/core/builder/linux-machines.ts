// `aviary machines create linux`: Debian machines made, snapshotted and registered, K at a time,
// as overlays of one image. The steps (build-progress.ts), each announced to the listener:
//   check     the request (linux-plan.ts), the tools, libvirt and the network `aviary setup` made,
//             KVM or TCG (machinery/accel.ts), the names free in machines.json, libvirt and
//             the data folder, the addresses
//   image     the Debian image (debian-image.ts): built, or the built one of the same inputs
//   per machine:
//     disk      a qcow2 overlay of the image (a linked clone: only what the machine writes)
//     define    its domain (libvirt-xml.ts): direct kernel boot with its address on the command
//               line, its MAC, its tap, VNC on 127.0.0.1, the serial console to a file
//     boot      start; wait until its agent answers
//     settle    ask systemd, through the agent, to finish booting, so the snapshot holds no job
//               in flight (a half-started unit would run in every analysis)
//     snapshot  the live internal snapshot `clean`, the agent running; then power off
//   register  the machines in machines.json (kvm driver, snapshot, interface, result server)
//   doctor    `aviary doctor --deep` on them: revert, agent, capture, routes
// A failure anywhere removes what this build made (domains, disks, folders, machines.json
// entries; a built image stays: it is a cache) and says what happened, and what it could not remove.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { hostAccel, type HostAccel } from '../machinery/accel'
import { probeAgent } from '../guest/agent-identity'
import { agentRequest, jsonObject } from '../guest/agent-http'
import { AGENT_PORT } from '../../guest-protocol/agent-api'
import type { DoctorReport } from '../doctor/doctor'
import type { StorageLayout } from '../storage/layout'
import { Progress, type BuildListener } from './build-progress'
import { DEFAULT_IMAGE, ensureImage, ImageBuildError, type DebianImageSpec, type ImageFiles } from './debian-image'
import { domainXml } from './libvirt-xml'
import { Libvirt, parseNetworkXml, type NetworkInfo } from './libvirt-host'
import { kernelCmdline } from './linux-guest'
import { BuildInputError, checkLinuxRequest, planMachines, type LinuxMachinesRequest, type PlannedMachine } from './linux-plan'
import { addMachines, readFleet, removeMachines } from './machines-file'

const run = promisify(execFile)
export const SNAPSHOT = 'clean'

export interface LinuxBuildContext {
  layout: StorageLayout
  /** Aviary's Linux agent executable (out/agent/aviary-agent-linux-x64). */
  agentFile: string
  /** libvirt's URI (default machines.json's kvm.uri). */
  uri?: string
  /** Overrides of the image (tests, benches: another mirror). */
  image?: Partial<Omit<DebianImageSpec, 'agentFile'>>
  /** How long a machine may take from start to its agent answering (default 10 min: TCG on a loaded host). */
  bootTimeoutMs?: number
  /** Run the deep doctor on the new machines (default true). */
  doctor?: boolean
  signal?: AbortSignal
}

export interface CreatedLinuxMachine extends PlannedMachine {
  disk: string
  consoleLog: string
  /** Start to agent answering, ms. */
  bootMs: number
  snapshotMs: number
}

export interface LinuxBuildResult {
  machines: CreatedLinuxMachine[]
  image: { key: string; cached: boolean; diskBytes: number; buildMs: number }
  accel: HostAccel
  /** machines.json got `routing: {default: none}` (it had no routing section). */
  addedRouting: boolean
  /** The deep doctor's report on the new machines (null when not asked for). */
  doctor: DoctorReport | null
}

export class BuildError extends Error {
  constructor(message: string, readonly step: string, readonly leftBehind: string[] = []) {
    super(message)
  }
}

/** What this build has made so far, undone in reverse on failure. */
class Undo {
  private readonly steps: { what: string; undo: () => Promise<void> | void }[] = []
  add(what: string, undo: () => Promise<void> | void): void {
    this.steps.push({ what, undo })
  }
  async run(): Promise<{ removed: string[]; left: string[] }> {
    const removed: string[] = []
    const left: string[] = []
    for (const s of this.steps.reverse()) {
      try {
        await s.undo()
        removed.push(s.what)
      } catch (err) {
        left.push(`${s.what} (${(err as Error).message})`)
      }
    }
    return { removed, left }
  }
}

const tail = (file: string, n = 15): string => {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-n).join('\n')
  } catch {
    return '(no console output)'
  }
}

async function onPath(tool: string): Promise<boolean> {
  return run('sh', ['-c', 'command -v "$0"', tool]).then(() => true, () => false)
}

/** The one build of a data folder at a time: a lock file holding the builder's pid. */
function lock(layout: StorageLayout): () => void {
  mkdirSync(layout.machinesDir, { recursive: true })
  const file = `${layout.machinesDir}/.create.lock`
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o644)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return () => rmSync(file, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const pid = Number(readFileSync(file, 'utf8'))
      let alive: boolean
      try {
        process.kill(pid, 0)
        alive = pid > 0
      } catch {
        alive = false
      }
      if (alive) throw new BuildInputError('name', `another machine build (pid ${pid}) is running on this data folder; wait for it`)
      rmSync(file, { force: true })
    }
  }
  throw new BuildInputError('name', 'cannot take the build lock')
}

async function checkHost(ctx: LinuxBuildContext, network: string, lv: Libvirt, p: Progress): Promise<{ net: NetworkInfo; accel: HostAccel }> {
  const missing: string[] = []
  for (const [tool, pkg] of [['virsh', 'libvirt-clients'], ['qemu-img', 'qemu-utils'], ['debvm-create', 'debvm'], ['mmdebstrap', 'mmdebstrap']] as const) {
    if (!(await onPath(tool))) missing.push(`${tool} (${pkg})`)
  }
  if (missing.length > 0) throw new BuildError(`missing: ${missing.join(', ')}; install them with apt (scripts/install-debian-deps.sh lists them)`, 'check')
  if (!existsSync(ctx.agentFile)) throw new BuildError(`the Linux agent ${ctx.agentFile} is not built: run \`npm run build:agent\``, 'check')
  const xml = await lv.netXml(network).catch((err: Error) => {
    throw new BuildError(`libvirt does not answer at ${lv.uri}: ${err.message} (is libvirtd running, and are you in group libvirt? \`sudo aviary setup --user $USER\` adds you)`, 'check')
  })
  const net = xml === null ? null : parseNetworkXml(xml)
  if (net === null) throw new BuildError(`libvirt has no network '${network}' with an address: make it with \`sudo aviary setup --user $USER\` (docs/machines.md)`, 'check')
  if (!(await lv.netActive(network))) throw new BuildError(`the network '${network}' is not active: virsh -c ${lv.uri} net-start ${network}`, 'check')
  if (net.forward !== 'open') p.note('check', `the network '${network}' forwards in mode ${net.forward ?? 'none'}, not 'open': libvirt adds firewall rules of its own beside the rooter's`)
  const accel = await hostAccel(lv.uri)
  p.note('check', accel.reason)
  return { net, accel }
}

async function waitForAgent(lv: Libvirt, m: PlannedMachine, consoleLog: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (signal?.aborted) throw new BuildError('interrupted', 'boot')
    if (await probeAgent(m.ip, AGENT_PORT, 3000).then(() => true, () => false)) return
    const state = await lv.domState(m.label)
    if (state !== 'running') throw new BuildError(`${m.name} stopped (${state ?? 'gone'}) before its agent answered; its console:\n${tail(consoleLog)}`, 'boot')
    if (Date.now() > deadline) throw new BuildError(`${m.name}'s agent did not answer on ${m.ip}:${AGENT_PORT} within ${Math.round(timeoutMs / 1000)} s; its console:\n${tail(consoleLog)}`, 'boot')
    await new Promise((r) => setTimeout(r, 1000))
  }
}

/** systemd's own "booted": `systemctl is-system-running --wait`, run by the agent. */
async function settle(m: PlannedMachine, p: Progress, signal?: AbortSignal): Promise<void> {
  const exec = async (command: string, timeoutMs: number): Promise<string> => {
    const res = await agentRequest({ ip: m.ip, port: AGENT_PORT, method: 'POST', path: '/execute', body: { kind: 'urlencoded', fields: { command } }, timeoutMs, deadlineMs: timeoutMs, signal, step: `asking ${m.name} to run ${command}` })
    const body = res.status === 200 ? jsonObject(res.body) : null
    return typeof body?.stdout === 'string' ? body.stdout.trim() : ''
  }
  const state = await exec('systemctl is-system-running --wait', 300_000)
  if (state === 'running') return
  const failed = state === 'degraded' ? await exec('systemctl --failed --no-legend --plain', 30_000) : ''
  p.note('settle', `systemd says ${state || 'nothing'}${failed ? `; failed: ${failed.split('\n').map((l) => l.split(/\s+/)[0]).join(', ')}` : ''}`, m.name)
}

async function makeMachine(ctx: LinuxBuildContext, lv: Libvirt, m: PlannedMachine, img: ImageFiles, net: NetworkInfo, accel: HostAccel,
  memoryMiB: number, vcpus: number, p: Progress, undo: Undo): Promise<CreatedLinuxMachine> {
  const dir = ctx.layout.machineDir(m.name)
  const disk = `${dir}/disk.qcow2`
  const consoleLog = `${dir}/console.log`
  p.step('disk', `an overlay of ${img.key} for ${m.name}`, m.name)
  mkdirSync(dir, { recursive: true })
  undo.add(`the folder ${ctx.layout.relative(dir)}`, () => rmSync(dir, { recursive: true, force: true }))
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', img.disk, disk], { timeout: 60_000 })
  // Made here, so it stays the user's and readable while libvirt writes it.
  closeSync(openSync(consoleLog, 'a', 0o644))

  p.step('define', `domain ${m.label} (${accel.type === 'kvm' ? 'KVM' : 'TCG'}, ${memoryMiB} MiB, ${vcpus} vCPU, ${m.ip}, tap ${m.tap})`, m.name)
  await lv.define('define', domainXml({
    name: m.label, type: accel.type, memoryMiB, vcpus, clock: 'utc',
    description: `Analysis machine '${m.name}' made by aviary machines create linux (image ${img.key})`,
    boot: { kind: 'kernel', kernel: img.kernel, initrd: img.initrd, cmdline: kernelCmdline({ ip: m.ip, gateway: net.hostIp, prefix: net.prefix }) },
    disks: [{ file: disk, format: 'qcow2', bus: 'virtio', target: 'vda' }],
    nics: [{ network: net.name, mac: m.mac, tap: m.tap, model: 'virtio' }],
    serialLog: consoleLog
  }), `defining ${m.label}`)
  undo.add(`the domain ${m.label}`, () => lv.remove(m.label))

  p.step('boot', `starting ${m.label}; waiting for its agent on ${m.ip}:${AGENT_PORT}`, m.name)
  const t0 = Date.now()
  await lv.run(['start', m.label], `starting ${m.label}`, 120_000, ctx.signal).catch((err: Error) => {
    throw new BuildError(/Permission denied/i.test(err.message)
      ? `${err.message}: libvirt's QEMU cannot read the data folder; \`sudo aviary setup --user $USER --data ${ctx.layout.root}\` lets it in`
      : err.message, 'boot')
  })
  await waitForAgent(lv, m, consoleLog, ctx.bootTimeoutMs ?? 600_000, ctx.signal)
  const bootMs = Date.now() - t0
  p.note('boot', `${m.name}'s agent answers after ${(bootMs / 1000).toFixed(1)} s`, m.name)

  p.step('settle', 'waiting for systemd to finish booting', m.name)
  await settle(m, p, ctx.signal)

  p.step('snapshot', `live snapshot '${SNAPSHOT}' of ${m.label}, then power off`, m.name)
  const t1 = Date.now()
  await lv.run(['snapshot-create-as', m.label, SNAPSHOT, '--description', 'agent running: every analysis reverts here', '--atomic'], `snapshotting ${m.label}`, 600_000)
  const snapshotMs = Date.now() - t1
  await lv.destroyIfRunning(m.label)
  return { ...m, disk, consoleLog, bootMs, snapshotMs }
}

/** Makes the machines of `request`; resolves with them, or rejects (BuildInputError, BuildError) with nothing left behind. */
export async function createLinuxMachines(request: LinuxMachinesRequest, ctx: LinuxBuildContext, listener?: BuildListener): Promise<LinuxBuildResult> {
  const p = new Progress(listener)
  const spec = checkLinuxRequest(request)
  p.step('check', `checking: ${spec.names.join(', ')} on network ${spec.network}`)
  const fleet = readFleet(ctx.layout.machinesConfig)
  const lv = new Libvirt(ctx.uri ?? fleet.settings.kvm.uri)
  const unlock = lock(ctx.layout)
  const undo = new Undo()
  let step = 'check'
  try {
    const { net, accel } = await checkHost(ctx, spec.network, lv, p)
    const domains = new Set(await lv.domainNames())
    const used = new Set(fleet.machines.map((m) => m.ip))
    const plan = planMachines(spec, net, used)
    for (const m of plan) {
      const why = fleet.machines.some((f) => f.name === m.name) ? 'machines.json has a machine of that name'
        : domains.has(m.label) ? `libvirt has a domain ${m.label}`
          : existsSync(ctx.layout.machineDir(m.name)) ? `its folder ${ctx.layout.relative(ctx.layout.machineDir(m.name))} exists` : null
      if (why) throw new BuildInputError('name', `'${m.name}' exists already: ${why} (remove it first, or choose another --name)`)
    }

    step = 'image'
    p.step('image', spec.rebuild ? 'building the Debian image again' : 'the Debian image: built already, or built now')
    const t0 = Date.now()
    const img = await ensureImage({ ...DEFAULT_IMAGE, ...ctx.image, agentFile: ctx.agentFile }, { images: ctx.layout.imagesDir, cache: ctx.layout.aptCache(`${ctx.image?.suite ?? DEFAULT_IMAGE.suite}-amd64`) },
      { rebuild: spec.rebuild, refresh: spec.refresh, signal: ctx.signal, note: (m) => p.note('image', m), output: (l) => p.output('image', l) })
    const buildMs = Date.now() - t0
    p.note('image', `${img.cached ? 'built already' : `built in ${Math.round(buildMs / 1000)} s`}: ${img.key}, ${(img.manifest.diskBytes / 2 ** 20).toFixed(0)} MiB`)

    const vcpus = spec.vcpus ?? (accel.type === 'kvm' ? 2 : 1)
    const made: CreatedLinuxMachine[] = []
    for (const m of plan) {
      step = `machine ${m.name}`
      made.push(await makeMachine(ctx, lv, m, img, net, accel, spec.memoryMiB, vcpus, p, undo))
    }

    step = 'register'
    p.step('register', `adding ${made.map((m) => m.name).join(', ')} to machines.json`)
    const { addedRouting } = addMachines(ctx.layout.machinesConfig, made.map((m) => ({
      name: m.name, label: m.label, platform: 'linux', ip: m.ip, snapshot: SNAPSHOT, interface: m.tap, resultserver_ip: net.hostIp, driver: 'kvm', tags: ['debian']
    })))
    undo.add('their entries in machines.json', () => removeMachines(ctx.layout.machinesConfig, made.map((m) => m.name)))
    if (addedRouting) p.note('register', 'machines.json had no routing section: it now has {"default": "none"} (docs/network.md)')

    let doctor: DoctorReport | null = null
    if (ctx.doctor !== false) {
      step = 'doctor'
      p.step('doctor', 'aviary doctor --deep on the new machines')
      // Loaded when a build gets here, as the fleet service loads it (not at rest).
      const { runDoctor } = await import('../doctor/doctor')
      doctor = await runDoctor({ machinesFile: ctx.layout.machinesConfig, deep: true, only: made.map((m) => m.name) })
      const broken = doctor.machines.flatMap((r) => r.findings.filter((f) => !f.ok && /revert|agent/.test(f.check)).map((f) => `${r.name}: ${f.check}: ${f.detail}`))
      if (broken.length > 0) throw new BuildError(`the new machines do not work: ${broken.join('; ')}`, 'doctor')
      for (const r of doctor.machines) for (const f of r.findings.filter((x) => !x.ok)) p.note('doctor', `${r.name}: ${f.check}: ${f.detail}${f.fix ? ` (fix: ${f.fix})` : ''}`)
      for (const f of doctor.routes.filter((x) => !x.ok)) p.note('doctor', `routes: ${f.check}: ${f.detail}${f.fix ? ` (fix: ${f.fix})` : ''}`)
    }
    return { machines: made, image: { key: img.key, cached: img.cached, diskBytes: img.manifest.diskBytes, buildMs }, accel, addedRouting, doctor }
  } catch (err) {
    p.step('cleanup', `${step} failed: removing what this build made`)
    const { removed, left } = await undo.run()
    if (removed.length > 0) p.note('cleanup', `removed ${removed.join(', ')}`)
    if (err instanceof BuildInputError) throw err
    const msg = err instanceof ImageBuildError || err instanceof BuildError ? err.message : `${(err as Error).message}`
    throw new BuildError(`${step}: ${msg}${left.length > 0 ? `\nleft behind (remove by hand): ${left.join('; ')}` : ''}`, step, left)
  } finally {
    unlock()
  }
}
