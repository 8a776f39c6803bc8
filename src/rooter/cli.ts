// `aviary rooter` runs the root helper; `aviary rooter install` writes its configuration and a
// systemd unit, makes the group that may use its socket, and starts it: the one command the README
// gives. Loaded only for these commands (src/core/cli.ts).
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command } from 'commander'
import { loadRooterConfig, parseRooterConfig, RooterConfigError, type RooterConfig, type RooterFile } from './rooter-config'
import { removeRooterRules, Rooter } from './rooter'
import { DEFAULT_ROOTER_SOCKET, LEASE_MS } from './protocol'

export const CONFIG_FILE = '/etc/aviary/rooter.json'
export const UNIT_FILE = '/etc/systemd/system/aviary-rooter.service'

interface Flags {
  config?: string
  socket?: string
  group?: string
  guestNetwork?: string[]
  interface?: string[]
  vpn?: string[]
  inetsim?: string
}

const collect = (v: string, prev: string[] = []): string[] => [...prev, v]

function withFlags(cmd: Command): Command {
  return cmd
    .option('--config <file>', `configuration file (default ${CONFIG_FILE} when no network is given)`)
    .option('--socket <path>', 'UNIX socket the service talks to (default /run/aviary/rooter.sock)')
    .option('--group <group>', 'group allowed to use the socket')
    .option('--guest-network <cidr>', 'a network the guests are on (repeatable)', collect)
    .option('--interface <name>', 'an interface the internet route may leave through (repeatable)', collect)
    .option('--vpn <name:table>', 'a VPN interface and the routing table of its default route (repeatable)', collect)
    .option('--inetsim <ip>', 'run INetSim on this address of the guest network')
}

/** The configuration file's content from flags. */
export function fileFromFlags(f: Flags): RooterFile {
  const vpn = Object.fromEntries((f.vpn ?? []).map((v) => {
    const [name, table] = v.split(':')
    return [name ?? '', Number(table)]
  }))
  return {
    ...(f.socket ? { socket: f.socket } : {}),
    ...(f.group ? { group: f.group } : {}),
    guest_networks: f.guestNetwork ?? [],
    ...(f.interface ? { interfaces: f.interface } : {}),
    ...(f.vpn ? { vpn } : {}),
    ...(f.inetsim ? { inetsim: { address: f.inetsim } } : {})
  }
}

function configOf(f: Flags): RooterConfig {
  if (f.guestNetwork?.length) return parseRooterConfig(fileFromFlags(f))
  return loadRooterConfig(f.config ?? CONFIG_FILE)
}

/** Where the rooter's state is, also without a readable configuration (for `remove`). */
function stateOf(f: Flags): string {
  try {
    return configOf(f).state
  } catch {
    return path.join(path.dirname(f.socket ?? DEFAULT_ROOTER_SOCKET), 'rooter-state.json')
  }
}

/** The systemd unit that keeps the rooter running. */
export function unitText(node: string, cli: string, config: string): string {
  return `[Unit]
Description=Aviary rooter: the firewall rules of analysis routes (root helper of the Aviary service)
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=${node} ${cli} rooter --config ${config}
Restart=on-failure
RuntimeDirectory=aviary
RuntimeDirectoryPreserve=yes

[Install]
WantedBy=multi-user.target
`
}

export async function runRooterCli(argv: string[]): Promise<number> {
  let code = 0
  // Positional options: `rooter install --guest-network …` gives the options to install, not to
  // the `rooter` command that defines the same ones (which took them, and install saw none).
  const program = new Command('aviary').exitOverride().enablePositionalOptions().configureOutput({ writeErr: (s) => process.stderr.write(s) })
  const rooter = withFlags(program.command('rooter').description('run the root helper that sets up the routes of analyses (as root)'))
    .enablePositionalOptions()
    .action(async (f: Flags) => {
      const log = (m: string): void => { process.stderr.write(`aviary rooter: ${m}\n`) }
      // Tests may shorten a grant's lease (never lengthen it) to see one lapse.
      const lease = Number(process.env.AVIARY_ROOTER_LEASE_MS)
      const r = new Rooter({ config: configOf(f), log, ...(lease > 0 && lease < LEASE_MS ? { leaseMs: lease } : {}) })
      // Listened for before the start: a stop asked for as soon as "listening" is logged is a
      // clean stop, not the default death by signal.
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve)
        process.once('SIGINT', resolve)
      })
      await r.start()
      await stopped
      await r.stop()
    })
  withFlags(rooter.command('install').description('write the configuration and a systemd unit, make the socket group, start the rooter'))
    .option('--user <user>', 'the user the Aviary service runs as: added to the group')
    .option('--print', 'print what would be written and run, do nothing')
    .action((f: Flags & { user?: string; print?: boolean }) => {
      const file = { ...fileFromFlags(f), group: f.group ?? 'aviary' }
      parseRooterConfig(file) // refuses a bad network or address before anything is written
      const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/aviary.js')
      const unit = unitText(process.execPath, existsSync(cli) ? cli : process.argv[1] ?? 'aviary', f.config ?? CONFIG_FILE)
      const steps: string[][] = [
        ['groupadd', '--system', '--force', file.group],
        ...(f.user ? [['usermod', '--append', '--groups', file.group, f.user]] : []),
        ['systemctl', 'daemon-reload'],
        ['systemctl', 'enable', '--now', 'aviary-rooter.service']
      ]
      const config = f.config ?? CONFIG_FILE
      if (f.print) {
        process.stdout.write(`# ${config}\n${JSON.stringify(file, null, 2)}\n# ${UNIT_FILE}\n${unit}# then\n${steps.map((s) => s.join(' ')).join('\n')}\n`)
        return
      }
      mkdirSync(path.dirname(config), { recursive: true, mode: 0o755 })
      writeFileSync(config, JSON.stringify(file, null, 2) + '\n', { mode: 0o644 })
      writeFileSync(UNIT_FILE, unit, { mode: 0o644 })
      for (const s of steps) execFileSync(s[0]!, s.slice(1), { stdio: 'inherit' })
      process.stdout.write(`the rooter runs; the service finds it at ${file.socket ?? '/run/aviary/rooter.sock'}` +
        `${f.user ? ` (log ${f.user} in again to be in group ${file.group})` : ''}\n`)
    })
  withFlags(rooter.command('remove').description('remove the rooter\'s firewall table, policy rules and state (after stopping it): guest networks are then no longer denied by default'))
    .action((f: Flags) => removeRooterRules(stateOf(f)).then(() => {
      process.stdout.write('removed the table inet aviary, Aviary\'s policy rules and the rooter\'s state\n')
    }))
  try {
    await program.parseAsync(['node', 'aviary', ...argv])
  } catch (err) {
    const e = err as { code?: string; exitCode?: number; message?: string }
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return 0
    if (e.code?.startsWith('commander.')) return e.exitCode ?? 1
    process.stderr.write(`aviary rooter: ${err instanceof RooterConfigError ? err.message : e.message ?? String(err)}\n`)
    code = 1
  }
  return code
}
