// `aviary machines create windows`: from the user's Windows 10 or 11 ISO to a registered machine
// with a live snapshot whose agent answers. The steps, each announced through `progress`:
//   check     the input (options.ts), the ISO, the tools, the name and address not taken yet
//   edition   the ISO's editions, and the one to install (editions.ts)
//   medium    the answer medium (answer-medium.ts) in the machine's folder
//   disk      a qcow2 disk (internal snapshots need qcow2)
//   define    the libvirt domain (domain-xml.ts)
//   install   boot; on UEFI, a key for the "Press any key to boot from CD" prompt; Windows Setup
//             runs from the answer file and its first logon starts the agent; wait for the agent
//   eject     both CDs out (the answer medium holds the password in clear), live and in the config
//   snapshot  a live snapshot, the agent running: every analysis reverts to it
//   register  the machine in machines.json
// The ISO is never written to. A failure after `define` leaves the domain and its folder for a
// look at the screen (the message says how to remove them); nothing is left before it.
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { probeAgent } from '../../guest/agent-identity'
import { parseFleetConfig } from '../../machinery/machines-config'
import { buildAnswerMedium } from './answer-medium'
import { autounattendXml } from './autounattend'
import { CDROM_TARGETS, OVMF_ROM, windowsDomainXml } from './domain-xml'
import { chooseEdition, isoEditions, IsoReadError, type WindowsEdition } from './editions'
import { firstLogonScript } from './first-logon'
import { checkWindowsInput, WindowsSpecError, type WindowsMachineInput, type WindowsMachineSpec } from './options'

const run = promisify(execFile)

export type WindowsStep = 'check' | 'edition' | 'medium' | 'disk' | 'define' | 'install' | 'eject' | 'snapshot' | 'register'
export interface WindowsProgress { step: WindowsStep; message: string }

export interface CreateWindowsOptions {
  input: WindowsMachineInput
  /** The user's Windows ISO; read, never written. */
  iso: string
  /** The machine's folder (disk, answer medium, domain XML); made here, must not hold files yet. */
  dir: string
  machinesFile: string
  /** libvirt connection: machines.json's `kvm.uri`, so the kvm driver finds the domain. */
  uri: string
  /** The Windows agent, `out/agent/aviary-agent-win-x64.exe`. */
  agentExe: string
  /** Default: `kvm` where /dev/kvm works, else `qemu` (TCG). */
  virtType?: 'kvm' | 'qemu'
  /** How long Windows may take to install and start the agent (default 4 h: TCG is slow). */
  installTimeoutMs?: number
  /** How often the agent is asked during the install (default 10 s). */
  pollMs?: number
  snapshot?: string
  tools?: { virsh?: string; qemuImg?: string; xorriso?: string; sevenZip?: string }
  signal?: AbortSignal
}

export interface CreatedWindowsMachine {
  name: string
  ip: string
  edition: string
  snapshot: string
  dir: string
}

/** What `prepareWindowsMachine` made: the later steps work on it. */
export interface WindowsMachinePlan {
  spec: WindowsMachineSpec
  edition: WindowsEdition
  files: { disk: string; answerIso: string; domainXml: string }
}

export class WindowsBuildError extends Error {}

/** Reads the raw machines.json (or the empty fleet), for checks and for adding the machine. */
function readMachinesFile(file: string): { raw: Record<string, unknown>; machines: Record<string, unknown>[] } {
  if (!existsSync(file)) return { raw: { driver: 'kvm', routing: { default: 'none' }, machines: [] }, machines: [] }
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
  parseFleetConfig(raw)
  return { raw, machines: raw.machines as Record<string, unknown>[] }
}

/** KVM when /dev/kvm opens and the CPU has VT-x or AMD-V; else TCG, which works anywhere, slowly. */
export function detectVirtType(): 'kvm' | 'qemu' {
  try {
    if (!existsSync('/dev/kvm')) return 'qemu'
    return /\b(vmx|svm)\b/.test(readFileSync('/proc/cpuinfo', 'utf8')) ? 'kvm' : 'qemu'
  } catch {
    return 'qemu'
  }
}

async function onPath(tool: string): Promise<boolean> {
  if (tool.includes('/')) return existsSync(tool)
  return run('sh', ['-c', 'command -v "$0"', tool]).then(() => true, () => false)
}

function virsh(o: CreateWindowsOptions, args: string[], what: string, timeoutMs = 120_000): Promise<string> {
  return run(o.tools?.virsh ?? 'virsh', ['-q', '-c', o.uri, ...args], { timeout: timeoutMs, signal: o.signal })
    .then((r) => r.stdout, (err: { stderr?: string; message: string }) => {
      const said = (err.stderr ?? err.message).split('\n').map((l) => l.replace(/^error: /, '').trim()).filter(Boolean).slice(-1)[0]
      throw new WindowsBuildError(`${what}: ${said ?? 'virsh failed'}`)
    })
}

/** check, edition, medium, disk, define. */
export async function prepareWindowsMachine(o: CreateWindowsOptions, progress: (p: WindowsProgress) => void): Promise<WindowsMachinePlan> {
  const spec = checkWindowsInput(o.input)
  progress({ step: 'check', message: `checking ${spec.name} (Windows ${spec.version}, ${spec.firmware}, ${spec.ip}/${spec.prefix})` })
  if (!existsSync(o.iso) || !statSync(o.iso).isFile()) throw new WindowsSpecError('iso', `${o.iso} is not a file`)
  const missing: string[] = []
  for (const [tool, pkg] of [[o.tools?.virsh ?? 'virsh', 'libvirt-clients'], [o.tools?.qemuImg ?? 'qemu-img', 'qemu-utils'],
    [o.tools?.xorriso ?? 'xorriso', 'xorriso'], [o.tools?.sevenZip ?? '7z', 'p7zip-full']] as const) {
    if (!(await onPath(tool))) missing.push(`${tool} (${pkg})`)
  }
  if (spec.firmware === 'uefi' && !existsSync(OVMF_ROM)) missing.push(`${OVMF_ROM} (ovmf)`)
  if (spec.version === '11' && !(await onPath('swtpm'))) missing.push('swtpm (swtpm, swtpm-tools)')
  if (missing.length > 0) throw new WindowsBuildError(`missing: ${missing.join(', ')}; scripts/install-debian-deps.sh installs them`)
  const { machines } = readMachinesFile(o.machinesFile)
  if (machines.some((m) => m.name === spec.name)) throw new WindowsSpecError('name', `machines.json already has a machine '${spec.name}'`)
  const sameIp = machines.find((m) => m.ip === spec.ip)
  if (sameIp) throw new WindowsSpecError('ip', `${spec.ip} is already the address of '${String(sameIp.name)}' in machines.json`)
  if (await virsh(o, ['dominfo', spec.name], 'looking for the domain').then(() => true, () => false)) {
    throw new WindowsSpecError('name', `libvirt (${o.uri}) already has a domain '${spec.name}'`)
  }
  if (existsSync(o.dir) && readdirSync(o.dir).length > 0) throw new WindowsSpecError('name', `the machine's folder ${o.dir} is not empty`)

  progress({ step: 'edition', message: `reading the editions of ${path.basename(o.iso)}` })
  const editions = await isoEditions(o.iso, { sevenZip: o.tools?.sevenZip }).catch((err: unknown) => {
    throw err instanceof IsoReadError ? new WindowsSpecError('iso', err.message) : err
  })
  const edition = chooseEdition(editions, spec.edition, spec.version)
  progress({ step: 'edition', message: `installing ${edition.name} (image ${edition.index} of ${editions.length})` })

  mkdirSync(o.dir, { recursive: true })
  const files = { disk: path.join(o.dir, 'disk.qcow2'), answerIso: path.join(o.dir, 'answer.iso'), domainXml: path.join(o.dir, 'domain.xml') }
  progress({ step: 'medium', message: 'writing the answer medium (Autounattend.xml, the agent, the first-logon script)' })
  await buildAnswerMedium({ unattend: autounattendXml(spec, edition.name), script: firstLogonScript({ agentPort: spec.agentPort }), agentExe: o.agentExe, out: files.answerIso, xorriso: o.tools?.xorriso })

  progress({ step: 'disk', message: `creating a ${spec.diskGiB} GiB disk (grows as Windows fills it)` })
  await run(o.tools?.qemuImg ?? 'qemu-img', ['create', '-q', '-f', 'qcow2', files.disk, `${spec.diskGiB}G`], { timeout: 60_000 })

  const virtType = o.virtType ?? detectVirtType()
  progress({ step: 'define', message: `defining the domain on ${o.uri} (${virtType === 'kvm' ? 'KVM' : 'TCG, no KVM here: the install takes hours'})` })
  writeFileSync(files.domainXml, windowsDomainXml({ spec, virtType, disk: path.resolve(files.disk), windowsIso: path.resolve(o.iso), answerIso: path.resolve(files.answerIso) }))
  await virsh(o, ['define', files.domainXml], 'defining the domain')
  return { spec, edition, files }
}

const left = (o: CreateWindowsOptions, name: string): string =>
  `; the domain and ${o.dir} are left as they are: look at its screen (virt-viewer -c ${o.uri} ${name}), ` +
  `remove both with: virsh -c ${o.uri} undefine ${name} && rm -r ${o.dir}`

/** install: boot, press a key for the UEFI CD prompt, wait until the agent answers. */
export async function installWindows(plan: WindowsMachinePlan, o: CreateWindowsOptions, progress: (p: WindowsProgress) => void): Promise<void> {
  const { spec } = plan
  progress({ step: 'install', message: 'starting the machine: Windows Setup reads the answer medium' })
  await virsh(o, ['start', spec.name], 'starting the domain')
  const started = Date.now()
  const deadline = started + (o.installTimeoutMs ?? 4 * 3600_000)
  // OVMF shows Windows' "Press any key to boot from CD or DVD" for a few seconds; nothing is on
  // the disk yet, so without a key the machine finds nothing to boot. Keys after the prompt fall
  // on Setup's progress pages, which take none.
  const keys = spec.firmware === 'uefi' ? 45 : 0
  let lastNote = 0
  for (let i = 0; ; i++) {
    if (o.signal?.aborted) throw new WindowsBuildError(`interrupted${left(o, spec.name)}`)
    if (i < keys) await virsh(o, ['send-key', spec.name, 'KEY_SPACE'], 'pressing a key').catch(() => undefined)
    const answered = await probeAgent(spec.ip, spec.agentPort, 5000).then(() => true, () => false)
    if (answered) break
    const state = (await virsh(o, ['domstate', spec.name], 'reading the domain state').catch(() => 'unknown')).trim()
    if (state === 'shut off' || state === 'crashed') throw new WindowsBuildError(`the machine ${state === 'crashed' ? 'crashed' : 'turned off'} before its agent answered${left(o, spec.name)}`)
    if (Date.now() > deadline) throw new WindowsBuildError(`the agent did not answer on ${spec.ip}:${spec.agentPort} within ${Math.round((deadline - started) / 60_000)} min${left(o, spec.name)}`)
    if (Date.now() - lastNote >= 60_000) {
      lastNote = Date.now()
      progress({ step: 'install', message: `installing: ${Math.round((Date.now() - started) / 60_000)} min, waiting for the agent on ${spec.ip}:${spec.agentPort} (the machine is ${state})` })
    }
    await new Promise((r) => setTimeout(r, i < keys ? 1000 : (o.pollMs ?? 10_000)))
  }
  progress({ step: 'install', message: `the agent answers on ${spec.ip}:${spec.agentPort} after ${Math.round((Date.now() - started) / 60_000)} min` })
}

/** eject: both CDs, from the running machine and from its configuration. */
export async function ejectMedia(plan: WindowsMachinePlan, o: CreateWindowsOptions, progress: (p: WindowsProgress) => void): Promise<void> {
  progress({ step: 'eject', message: 'ejecting the Windows ISO and the answer medium' })
  for (const [what, target] of [['the Windows ISO', CDROM_TARGETS.windows], ['the answer medium', CDROM_TARGETS.answer]] as const) {
    // Without the eject the snapshot would keep the answer medium, password and all, for every sample to read.
    await virsh(o, ['change-media', plan.spec.name, target, '--eject', '--live', '--config', '--force'], `ejecting ${what}`)
      .catch((err: Error) => { throw new WindowsBuildError(`${err.message}${left(o, plan.spec.name)}`) })
  }
}

/** snapshot, register. */
export async function snapshotAndRegister(plan: WindowsMachinePlan, o: CreateWindowsOptions, progress: (p: WindowsProgress) => void): Promise<CreatedWindowsMachine> {
  const { spec } = plan
  const snapshot = o.snapshot ?? 'clean'
  progress({ step: 'snapshot', message: `taking the live snapshot '${snapshot}'` })
  await virsh(o, ['snapshot-create-as', spec.name, snapshot, '--atomic'], 'taking the snapshot', 600_000)

  progress({ step: 'register', message: `adding ${spec.name} to ${o.machinesFile}` })
  const { raw, machines } = readMachinesFile(o.machinesFile)
  if (machines.some((m) => m.name === spec.name)) throw new WindowsSpecError('name', `machines.json got a machine '${spec.name}' meanwhile`)
  const next = { ...raw, machines: [...machines, { name: spec.name, label: spec.name, platform: 'windows', ip: spec.ip, snapshot, tags: [`win${spec.version}`] }] }
  parseFleetConfig(next)
  // Written whole and renamed over: a running service reads the file when it changes.
  const tmp = `${o.machinesFile}.${process.pid}.tmp`
  writeFileSync(tmp, JSON.stringify(next, null, 2) + '\n', { mode: 0o644 })
  renameSync(tmp, o.machinesFile)
  return { name: spec.name, ip: spec.ip, edition: plan.edition.name, snapshot, dir: o.dir }
}

export async function createWindowsMachine(o: CreateWindowsOptions, progress: (p: WindowsProgress) => void): Promise<CreatedWindowsMachine> {
  const plan = await prepareWindowsMachine(o, progress)
  await installWindows(plan, o, progress)
  await ejectMedia(plan, o, progress)
  return snapshotAndRegister(plan, o, progress)
}
