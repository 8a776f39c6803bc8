// A real Linux analysis VM for the kvm driver's tests: a small guest under libvirtd's qemu driver
// (TCG), running a Cuckoo-protocol agent, with a *running* internal snapshot `clean` to revert to
// (Cuckoo's kvm machinery reverts and never boots), VNC for screenshots and a fixed tap the host
// captures on. The image comes from scripts/build-test-guest.mjs (cached in out/test-guest/ by a
// hash of its inputs); this file puts it under libvirt: network, domain, snapshot. Callers hold an
// exclusive lease on the guest until release(), so parallel test files take turns.
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { ensureLibvirtd } from '../fixtures/libvirtd'
import { acquireLease } from './kvm/guest-lease'
import { destroyIfRunning, domState, virsh, waitForState } from './kvm/virsh'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const KVM_DIR = path.join(ROOT, 'test/guests/kvm')
const OUT = path.join(ROOT, 'out/test-guest')
const BUILD_SCRIPT = path.join(ROOT, 'scripts/build-test-guest.mjs')

const URI = 'qemu:///system'
const AGENT_PORT = 8000

/**
 * The names and addresses of one test guest. `default` is the guest every kvm test shares;
 * `console` is the live console's (test/ui-e2e/console.e2e.test.ts): a root shell on its VGA
 * console (what is typed there runs), on its own domain and network, so it never redefines the
 * shared guest under another test that holds it.
 */
const INSTANCES = {
  default: { domain: 'avkvm-guest', network: 'avkvm', bridge: 'avkvm-br', tap: 'avkvm0', mac: '52:54:00:cd:00:02', hostIp: '10.205.0.1', guestIp: '10.205.0.2', consoleShell: false },
  console: { domain: 'avcon-guest', network: 'avcon', bridge: 'avcon-br', tap: 'avcon0', mac: '52:54:00:cd:09:02', hostIp: '10.209.0.1', guestIp: '10.209.0.2', consoleShell: true }
} as const
export type KvmInstance = keyof typeof INSTANCES
type Instance = (typeof INSTANCES)[KvmInstance]
const SNAPSHOT = 'clean'
/** Cold boot to the agent answering is ~10-15 s here; a loaded shared machine can take far longer. */
const BOOT_TIMEOUT_MS = 300_000

/** A host file put into the guest's root file system. */
export interface GuestFile {
  from: string
  /** Absolute path inside the guest. */
  to: string
  mode?: number
}

export interface KvmGuestOptions {
  /** The agent's command line inside the guest, e.g. ['/opt/aviary/aviary-agent', '0.0.0.0', '8000']. */
  agent: string[]
  /** Files the agent needs (its executable first of all); ELF files bring the libraries ldd lists. */
  files?: GuestFile[]
  /** Put the host's node binary (and its libraries) at /usr/bin/node. Default true (~100 MB of disk, no boot cost). */
  node?: boolean
  /** Guest RAM. Default 512 MiB. */
  memoryMiB?: number
  /** How long to wait for another process's lease on the guest. Default 20 min. */
  leaseTimeoutMs?: number
  /** Which test guest (INSTANCES). Default `default`. */
  instance?: KvmInstance
}

export interface KvmGuest {
  uri: string
  domain: string
  ip: string
  agentPort: number
  snapshot: string
  /** The guest NIC's host side: exists while the domain runs; capture here. */
  tap: string
  bridge: string
  network: string
  hostIp: string
  mac: string
  /** The serial console (kernel, init, agent output), appended across boots. */
  consoleLog: string
  image: { key: string; cached: boolean; kernel: string; initrd: string; disk: string }
  /**
   * What ensureKvmGuest spent, in ms: lease wait, libvirtd, build (cached or not), network, define,
   * and when it (re)took the snapshot: snapshot = boot to agent + snapshot-create + power off.
   */
  timings: Record<string, number>
  /** Ends this caller's lease; the domain is left as it is. */
  release(): void
}

interface Manifest {
  key: string
  cached: boolean
  kernel: string
  initrd: string
  disk: string
  cmdline: string
}

/** The stand-in agent (node + a few-line Cuckoo-protocol server), until Aviary's agent binary exists. */
export function standInAgent(): Pick<KvmGuestOptions, 'agent' | 'files'> {
  return {
    agent: ['/usr/bin/node', '/opt/aviary/stand-in-agent.mjs', '0.0.0.0', String(AGENT_PORT)],
    files: [{ from: path.join(KVM_DIR, 'stand-in-agent.mjs'), to: '/opt/aviary/stand-in-agent.mjs' }]
  }
}

/** Aviary's single-executable agent (`npm run build:agent`) as the guest's agent. */
export function aviaryAgent(binary = path.join(ROOT, 'out/agent/aviary-agent-linux-x64'), args: string[] = []): Pick<KvmGuestOptions, 'agent' | 'files'> {
  return { agent: ['/opt/aviary/aviary-agent', ...args], files: [{ from: binary, to: '/opt/aviary/aviary-agent', mode: 0o755 }] }
}

async function buildImage(opts: KvmGuestOptions): Promise<Manifest> {
  mkdirSync(OUT, { recursive: true })
  const specFile = path.join(OUT, `.spec-${process.pid}.json`)
  const inst = INSTANCES[opts.instance ?? 'default']
  // The default guest's spec is left as it was, so its image (and its cache key) does not change.
  const net = opts.instance === undefined || opts.instance === 'default' ? {}
    : { ip: `${inst.guestIp}/24`, gateway: inst.hostIp, dns: inst.hostIp, consoleShell: inst.consoleShell }
  writeFileSync(specFile, JSON.stringify({ out: OUT, agent: opts.agent, files: opts.files ?? [], node: opts.node ?? true, ...net }))
  try {
    const { stdout } = await run(process.execPath, [BUILD_SCRIPT, '--spec', specFile], { timeout: 900_000, maxBuffer: 2 ** 20 })
    return JSON.parse(stdout.trim().split('\n').pop() ?? '') as Manifest
  } catch (err) {
    const e = err as { stderr?: string; message: string }
    throw new Error(`building the test guest failed: ${e.stderr || e.message}`, { cause: err })
  } finally {
    rmSync(specFile, { force: true })
  }
}

function render(name: string, vars: Record<string, string | number>): string {
  return readFileSync(path.join(KVM_DIR, name), 'utf8').replace(/@([A-Z_]+)@/g, (_, k: string) => {
    if (!(k in vars)) throw new Error(`${name}: no value for @${k}@`)
    return String(vars[k])
  })
}

async function defineFromText(kind: 'net-define' | 'define', xml: string): Promise<void> {
  const file = path.join(OUT, `.${kind}-${process.pid}.xml`)
  writeFileSync(file, xml)
  try {
    await virsh(URI, [kind, file])
  } finally {
    rmSync(file, { force: true })
  }
}

/** The isolated network `avkvm` (bridge avkvm-br, 10.205.0.1/24), defined and started. */
async function ensureNetwork(inst: Instance): Promise<void> {
  const { network: NETWORK, bridge: BRIDGE, hostIp: HOST_IP } = inst
  let xml: string | undefined
  try {
    xml = await virsh(URI, ['net-dumpxml', NETWORK])
  } catch {
    xml = undefined
  }
  const ours = xml !== undefined && xml.includes(`name='${BRIDGE}'`) && xml.includes(`address='${HOST_IP}'`)
  if (xml !== undefined && !ours) {
    await virsh(URI, ['net-destroy', NETWORK]).catch(() => undefined)
    await virsh(URI, ['net-undefine', NETWORK])
  }
  if (!ours) await defineFromText('net-define', render('network.xml', { NETWORK, BRIDGE, HOST_IP }))
  // libvirt records each guest's MAC in its dnsmasq state folder, which it creates only when it
  // runs dnsmasq; with DNS and DHCP off it never does, and `virsh start` then fails.
  mkdirSync('/var/lib/libvirt/dnsmasq', { recursive: true })
  const info = await virsh(URI, ['net-info', NETWORK])
  if (!/^Active:\s+yes/m.test(info)) await virsh(URI, ['net-start', NETWORK])
}

/** Defines the domain from `xml` unless it is defined from it already; true when it (re)defined. */
async function ensureDomain(DOMAIN: string, xml: string, description: string): Promise<boolean> {
  if ((await domState(URI, DOMAIN)) !== undefined) {
    const current = (await virsh(URI, ['desc', DOMAIN])).trim()
    if (current === description) return false
    await destroyIfRunning(URI, DOMAIN)
    await virsh(URI, ['undefine', DOMAIN, '--snapshots-metadata'])
  }
  await defineFromText('define', xml)
  return true
}

/** The working disk holds `clean` (libvirt's metadata alone would not revert a disk without it). */
async function hasCleanSnapshot(DOMAIN: string, disk: string): Promise<boolean> {
  if (!existsSync(disk)) return false
  const names = (await virsh(URI, ['snapshot-list', DOMAIN, '--name'])).split('\n').map((s) => s.trim())
  if (!names.includes(SNAPSHOT)) return false
  if (!/^State:\s+running/m.test(await virsh(URI, ['snapshot-info', DOMAIN, SNAPSHOT]))) return false
  const { stdout } = await run('qemu-img', ['info', '-U', '--output=json', disk])
  const info = JSON.parse(stdout) as { snapshots?: { name: string }[] }
  return (info.snapshots ?? []).some((s) => s.name === SNAPSHOT)
}

/** GETs the agent's `/` until it answers as an agent of Cuckoo's protocol (Cuckoo's, Aviary's); false after `timeoutMs`. */
export async function waitForAgent(ip: string, port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://${ip}:${port}/`, { signal: AbortSignal.timeout(3000) })
      const body = (await res.json()) as { message?: string; version?: string }
      if (typeof body.message === 'string' && /agent/i.test(body.message) && typeof body.version === 'string') return true
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 250))
  }
  return false
}

/** The first `n` bytes of a file (a dump's or an image's magic). */
export function head(file: string, n: number): Buffer {
  const fd = openSync(file, 'r')
  try {
    const buf = Buffer.alloc(n)
    return buf.subarray(0, readSync(fd, buf, 0, n, 0))
  } finally {
    closeSync(fd)
  }
}

export function consoleTail(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n')
  } catch {
    return '(no console log)'
  }
}

/** Boots a fresh copy of the built disk, waits for the agent, takes the running snapshot, powers off. */
type Timed = <T>(name: string, f: () => Promise<T>) => Promise<T>

async function takeSnapshot(inst: Instance, pristine: string, disk: string, consoleLog: string, timed: Timed): Promise<void> {
  const { domain: DOMAIN, guestIp: GUEST_IP } = inst
  await destroyIfRunning(URI, DOMAIN)
  for (const name of (await virsh(URI, ['snapshot-list', DOMAIN, '--name'])).split('\n').filter(Boolean)) {
    await virsh(URI, ['snapshot-delete', DOMAIN, name.trim(), '--metadata'])
  }
  copyFileSync(pristine, disk)
  writeFileSync(consoleLog, '')
  const up = await timed('boot to agent', async () => {
    await virsh(URI, ['start', DOMAIN])
    return waitForAgent(GUEST_IP, AGENT_PORT, BOOT_TIMEOUT_MS)
  })
  if (!up) {
    await destroyIfRunning(URI, DOMAIN)
    throw new Error(`the test guest's agent did not answer on ${GUEST_IP}:${AGENT_PORT}; console:\n${consoleTail(consoleLog)}`)
  }
  await timed('snapshot-create', () => virsh(URI, ['snapshot-create-as', DOMAIN, SNAPSHOT, '--description', 'agent up, taken by test/guests/kvm-guest.ts']))
  await timed('power off', async () => {
    await virsh(URI, ['destroy', DOMAIN])
    await waitForState(URI, DOMAIN, 'shut off', 30_000)
  })
}

/**
 * Builds (or reuses) the guest image, makes sure libvirtd runs, the network exists, the domain is
 * defined (redefined when its XML changed) and has its running snapshot `clean`, and returns with
 * the domain shut off, holding the lease on the guest until `release()`.
 */
export async function ensureKvmGuest(opts: KvmGuestOptions): Promise<KvmGuest> {
  mkdirSync(OUT, { recursive: true })
  const timings: Record<string, number> = {}
  const timed: Timed = async (name, f) => {
    const t = performance.now()
    try {
      return await f()
    } finally {
      timings[name] = Math.round(performance.now() - t)
    }
  }
  const inst = INSTANCES[opts.instance ?? 'default']
  const { domain: DOMAIN, network: NETWORK, tap: TAP, mac: MAC, hostIp: HOST_IP, guestIp: GUEST_IP, bridge: BRIDGE } = inst
  const release = await timed('lease wait', () => acquireLease(path.join(OUT, inst === INSTANCES.default ? '.lease' : `.lease-${DOMAIN}`), opts.leaseTimeoutMs ?? 1_200_000))
  try {
    await timed('libvirtd', () => ensureLibvirtd(URI))
    const image = await timed('build', () => buildImage(opts))
    await timed('network', () => ensureNetwork(inst))
    const disk = path.join(OUT, `${DOMAIN}.qcow2`)
    const consoleLog = path.join(OUT, `${DOMAIN}.console.log`)
    const vars = {
      DOMAIN, NETWORK, MAC, TAP, KERNEL: image.kernel, INITRD: image.initrd, CMDLINE: image.cmdline, DISK: disk,
      CONSOLE_LOG: consoleLog, MEMORY_MIB: opts.memoryMiB ?? 512
    }
    const hash = createHash('sha256').update(render('domain.xml', { ...vars, DESCRIPTION: '' })).update(image.key)
    const description = `Aviary test guest (test/guests/kvm-guest.ts) ${hash.digest('hex').slice(0, 16)}`
    const defined = await timed('define', () => ensureDomain(DOMAIN, render('domain.xml', { ...vars, DESCRIPTION: description }), description))
    if (defined || !(await hasCleanSnapshot(DOMAIN, disk))) {
      await timed('snapshot', () => takeSnapshot(inst, image.disk, disk, consoleLog, timed))
    } else {
      await destroyIfRunning(URI, DOMAIN)
    }
    return {
      uri: URI, domain: DOMAIN, ip: GUEST_IP, agentPort: AGENT_PORT, snapshot: SNAPSHOT, tap: TAP, bridge: BRIDGE,
      network: NETWORK, hostIp: HOST_IP, mac: MAC, consoleLog,
      image: { key: image.key, cached: image.cached, kernel: image.kernel, initrd: image.initrd, disk: image.disk },
      timings,
      release
    }
  } catch (err) {
    release()
    throw err
  }
}

/** Undefines the domain (and its snapshots) and the network, and deletes the working disk. The built image stays cached. */
export async function removeKvmGuest(instance: KvmInstance = 'default'): Promise<void> {
  mkdirSync(OUT, { recursive: true })
  const inst = INSTANCES[instance]
  const { domain: DOMAIN, network: NETWORK } = inst
  const release = await acquireLease(path.join(OUT, inst === INSTANCES.default ? '.lease' : `.lease-${DOMAIN}`), 1_200_000)
  try {
    await ensureLibvirtd(URI)
    if ((await domState(URI, DOMAIN)) !== undefined) {
      await destroyIfRunning(URI, DOMAIN)
      await virsh(URI, ['undefine', DOMAIN, '--snapshots-metadata'])
    }
    await virsh(URI, ['net-destroy', NETWORK]).catch(() => undefined)
    await virsh(URI, ['net-undefine', NETWORK]).catch(() => undefined)
    rmSync(path.join(OUT, `${DOMAIN}.qcow2`), { force: true })
    rmSync(path.join(OUT, `${DOMAIN}.console.log`), { force: true })
  } finally {
    release()
  }
}
