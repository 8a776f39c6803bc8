// `aviary machines create windows`: the flags, and the progress printed as the steps go. Kept
// apart from create.ts so that registering the command loads nothing but commander: the builder
// is imported when the command runs.
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { InvalidArgumentError, Option, type Command } from 'commander'
import { defaultDataDir } from '../../config'
import { createLayout } from '../../storage/layout'

interface Flags {
  iso: string
  name?: string
  windowsVersion: string
  firmware?: string
  edition?: string
  user: string
  password?: string
  computerName?: string
  productKey?: string
  ip: string
  prefix?: number
  gateway?: string
  dns?: string[]
  mac?: string
  network: string
  memory?: number
  cpus?: number
  disk?: number
  timeZone?: string
  locale?: string
  data?: string
  uri?: string
  agent?: string
  installTimeout: number
}

const whole = (name: string) => (v: string): number => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError(`${name} must be a whole number`)
  return Number(v)
}

/** The Windows agent `npm run build:agent` makes, next to the bundle (out/agent) or under the current folder. */
export function defaultWindowsAgent(): string {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const candidates = [path.join(here, '..', 'agent', 'aviary-agent-win-x64.exe'), path.resolve('out/agent/aviary-agent-win-x64.exe')]
  return candidates.find((p) => existsSync(p)) ?? candidates[0]!
}

/** A password nobody has to type (auto-logon types it): 16 letters and digits, printed once at the end. */
function randomPassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'
  return [...randomBytes(16)].map((b) => alphabet[b % alphabet.length]).join('')
}

/** Adds `windows` under `aviary machines create`. */
export function registerCreateWindows(create: Command, setExit: (code: number) => void): void {
  create
    .command('windows')
    .description('install Windows 10 or 11 from your ISO into a new analysis machine, snapshot it and add it to machines.json')
    .requiredOption('--iso <path>', 'your Windows 10 or 11 installation ISO (read, never changed)')
    .requiredOption('--ip <address>', "the machine's static IPv4 address on its libvirt network")
    .option('--name <name>', 'machine and libvirt domain name (default win10 or win11)')
    .addOption(new Option('--windows-version <version>', 'Windows version of the ISO (`--version` is the version of aviary)').choices(['10', '11']).default('10'))
    .addOption(new Option('--firmware <firmware>', 'bios or uefi (default: uefi for 11, bios for 10)').choices(['bios', 'uefi']))
    .option('--edition <name|index>', 'edition to install, as the ISO lists it (default: Pro)')
    .option('--user <name>', 'the local administrator that logs on automatically', 'user')
    .addOption(new Option('--password <password>', "that user's password (default: a random one, printed at the end)").env('AVIARY_GUEST_PASSWORD'))
    .option('--computer-name <name>', 'Windows computer name (default: DESKTOP- and 7 random letters and digits)')
    .option('--product-key <key>', 'product key, when your ISO asks for one')
    .option('--prefix <bits>', 'network prefix length', whole('prefix'))
    .option('--gateway <address>', "gateway (default: the network's first address)")
    .option('--dns <address...>', 'DNS servers (default: the gateway)')
    .option('--mac <address>', 'MAC address (default: a random 52:54:00 one)')
    .option('--network <name>', 'libvirt network', 'default')
    .option('--memory <MiB>', 'memory in MiB (default 4096)', whole('memory'))
    .option('--cpus <n>', 'processors (default 2)', whole('cpus'))
    .option('--disk <GiB>', 'disk size in GiB, allocated as used (default 64)', whole('disk'))
    .option('--time-zone <id>', 'Windows time zone id (default UTC)')
    .option('--locale <tag>', 'language and locale (default en-US)')
    .option('--data <dir>', 'data directory (default: $AVIARY_DATA or the per-user data directory)')
    .option('--uri <uri>', 'libvirt connection (default: kvm.uri of machines.json)')
    .option('--agent <path>', 'the Windows agent (default: out/agent/aviary-agent-win-x64.exe; npm run build:agent)')
    .option('--install-timeout <minutes>', 'how long the install may take', whole('install timeout'), 240)
    .action(async (f: Flags) => setExit(await runCreateWindows(f)))
}

async function runCreateWindows(f: Flags): Promise<number> {
  const { createWindowsMachine, WindowsBuildError } = await import('./create')
  const { WindowsSpecError } = await import('./options')
  const { loadFleetConfig } = await import('../../machinery/machines-config')
  const layout = createLayout(f.data ?? defaultDataDir())
  layout.ensure()
  const name = f.name ?? `win${f.windowsVersion}`
  const generated = f.password === undefined ? randomPassword() : null
  const started = Date.now()
  try {
    const uri = f.uri ?? loadFleetConfig(layout.machinesConfig).settings.kvm.uri
    // Machines live in <data>/machines/<name>/ (disk, answer medium, domain XML); the name is checked first.
    const input = {
      name, version: f.windowsVersion, firmware: f.firmware, edition: f.edition, user: f.user, password: f.password ?? generated!,
      computerName: f.computerName, productKey: f.productKey, ip: f.ip, prefix: f.prefix, gateway: f.gateway, dns: f.dns,
      mac: f.mac, network: f.network, memoryMiB: f.memory, cpus: f.cpus, diskGiB: f.disk, timeZone: f.timeZone, locale: f.locale
    }
    const created = await createWindowsMachine({
      input, iso: path.resolve(f.iso), dir: path.join(layout.root, 'machines', name), machinesFile: layout.machinesConfig,
      uri, agentExe: f.agent ?? defaultWindowsAgent(), installTimeoutMs: f.installTimeout * 60_000
    }, (p) => {
      const min = Math.floor((Date.now() - started) / 60_000)
      process.stderr.write(`[${String(min).padStart(3)} min] ${p.step}: ${p.message}\n`)
    })
    process.stdout.write(`created ${created.name} (${created.edition}) at ${created.ip}, snapshot '${created.snapshot}', in ${layout.relative(created.dir)}\n`)
    if (generated) process.stdout.write(`user '${f.user}', password: ${generated}\n`)
    process.stdout.write('check it with `aviary doctor --deep ' + created.name + '`\n')
    return 0
  } catch (err) {
    if (err instanceof WindowsSpecError) process.stderr.write(`aviary: --${err.message}\n`)
    else if (err instanceof WindowsBuildError) process.stderr.write(`aviary: ${err.message}\n`)
    else process.stderr.write(`aviary: cannot create ${name}: ${(err as Error).message}\n`)
    return 1
  }
}
