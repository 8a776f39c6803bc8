// `aviary machines create linux` and `aviary setup`: the flags, and the progress printed as the
// steps go. Registering the commands loads nothing but commander; the builder is imported when
// a command runs.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { InvalidArgumentError, type Command } from 'commander'
import { defaultDataDir } from '../config'
import { createLayout } from '../storage/layout'
import type { BuildEvent } from './build-progress'

const whole = (name: string) => (v: string): number => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError(`${name} must be a whole number`)
  return Number(v)
}

/** Builds the agent when this is a source checkout without it (a fresh `npm install` builds the command, not the agent). */
function ensureAgent(file: string): void {
  if (existsSync(file)) return
  const script = path.join(path.dirname(path.dirname(file)), '..', 'scripts', 'build-agent.mjs')
  if (!existsSync(script)) return
  process.stderr.write(`check: the Linux agent is not built yet: node ${path.relative(process.cwd(), script)} --linux-only\n`)
  execFileSync(process.execPath, [script, '--linux-only'], { stdio: ['ignore', 'ignore', 'inherit'] })
}

interface CreateFlags {
  name?: string
  count?: number
  memory?: number
  vcpus?: number
  network?: string
  rebuild?: boolean
  refresh?: boolean
  data?: string
  uri?: string
  agent?: string
  verbose?: boolean
  json?: boolean
}

/** Adds `linux` under `aviary machines create`. */
export function registerCreateLinux(create: Command, setExit: (code: number) => void): void {
  create
    .command('linux')
    .description('make Debian 12 analysis machines (overlays of one image built from Debian packages), snapshot them and add them to machines.json')
    .option('--name <name>', 'machine name; with --count, <name>-1 … <name>-K (default linux)')
    .option('--count <K>', 'how many machines (default 1)', whole('count'))
    .option('--memory <MiB>', 'memory of each machine in MiB (default 1024)', whole('memory'))
    .option('--vcpus <n>', 'processors of each machine (default: 2 with KVM, 1 under TCG)', whole('vcpus'))
    .option('--network <name>', "the libvirt network `aviary setup` made (default aviary)")
    .option('--rebuild', 'build the image again, from the package cache')
    .option('--refresh', "fetch new package lists from Debian's archive (security updates) and build the image again")
    .option('--data <dir>', 'data directory (default: $AVIARY_DATA or the per-user data directory)')
    .option('--uri <uri>', 'libvirt connection (default: kvm.uri of machines.json)')
    .option('--agent <path>', 'the Linux agent (default: out/agent/aviary-agent-linux-x64)')
    .option('--verbose', "print the image builder's own output too")
    .option('--json', 'print every progress event and the result as JSON lines')
    .action(async (f: CreateFlags) => setExit(await runCreateLinux(f)))
}

function printer(f: CreateFlags): (e: BuildEvent) => void {
  return (e) => {
    if (f.json) {
      process.stdout.write(JSON.stringify({ event: e }) + '\n')
      return
    }
    if (e.kind === 'output' && !f.verbose) return
    const t = `${String(Math.floor(e.elapsedMs / 60_000)).padStart(2)}:${String(Math.floor(e.elapsedMs / 1000) % 60).padStart(2, '0')}`
    const who = e.machine ? ` ${e.machine}` : ''
    process.stderr.write(e.kind === 'step' ? `[${t}] ${e.step}${who}: ${e.message}\n` : `[${t}]   ${e.message}\n`)
  }
}

async function runCreateLinux(f: CreateFlags): Promise<number> {
  const { createLinuxMachines, BuildError } = await import('./linux-machines')
  const { BuildInputError } = await import('./linux-plan')
  const { defaultLinuxAgent } = await import('./machine-builds')
  const layout = createLayout(f.data ?? defaultDataDir())
  layout.ensure()
  const agentFile = f.agent ?? defaultLinuxAgent()
  const abort = new AbortController()
  const stop = (): void => abort.abort()
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  try {
    if (!f.agent) ensureAgent(agentFile)
    const r = await createLinuxMachines({ name: f.name, count: f.count, memoryMiB: f.memory, vcpus: f.vcpus, network: f.network, rebuild: f.rebuild, refresh: f.refresh },
      { layout, agentFile, uri: f.uri, signal: abort.signal }, printer(f))
    if (f.json) {
      process.stdout.write(JSON.stringify({ result: r }) + '\n')
    } else {
      for (const m of r.machines) process.stdout.write(`created ${m.name}: ${m.ip}, domain ${m.label}, snapshot 'clean', capture on ${m.tap}\n`)
      process.stdout.write(r.doctor && !r.doctor.ok
        ? 'the machines work; some checks of `aviary doctor` failed, see the fixes above\n'
        : 'ready: start the service (aviary serve) and submit a sample (aviary submit FILE)\n')
    }
    return r.doctor && !r.doctor.ok ? 1 : 0
  } catch (err) {
    if (err instanceof BuildInputError) process.stderr.write(`aviary: --${err.message}\n`)
    else if (err instanceof BuildError) process.stderr.write(`aviary: ${err.message}\n`)
    else process.stderr.write(`aviary: cannot create the machines: ${(err as Error).message}\n`)
    return 1
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  }
}

/** `aviary setup --user U`: what the builder needs root for (setup.ts). */
export function registerSetup(program: Command, setExit: (code: number) => void): void {
  program
    .command('setup')
    .description("as root: what the machines need root for, in one go (libvirt group, the guests' network, the rooter, the data folder, tcpdump); --print shows it")
    .requiredOption('--user <user>', 'the user the service runs as')
    .option('--data <dir>', "that user's data directory (default ~user/.local/share/aviary)")
    .option('--network <name>', "the guests' libvirt network (default aviary)")
    .option('--subnet <cidr>', 'its addresses (default 10.80.0.0/24; the host takes the first)')
    .option('--print', 'print the steps and do nothing')
    .action(async (o: { user: string; data?: string; network?: string; subnet?: string; print?: boolean }) => {
      const { runSetup } = await import('./setup')
      const { BuildInputError } = await import('./linux-plan')
      if (!o.print && process.getuid?.() !== 0) {
        process.stderr.write('aviary: setup changes the system: run it as root (sudo), or with --print to see what it does\n')
        setExit(1)
        return
      }
      try {
        const lines = await runSetup({ ...o, log: (l) => process.stderr.write(`${l}\n`) })
        process.stdout.write(lines.join('\n') + '\n')
      } catch (err) {
        process.stderr.write(`aviary: ${err instanceof BuildInputError ? `--${err.message}` : (err as Error).message}\n`)
        setExit(1)
      }
    })
}
