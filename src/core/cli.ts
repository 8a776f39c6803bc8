// The `aviary` command: `serve` runs the headless analysis service, `submit` sends samples and
// URLs to it (or to any Cuckoo-compatible instance) the way `cuckoo submit` did, `agent` runs the
// guest agent, `doctor` checks the machines, `machines import` moves a Cuckoo setup over,
// `machines create linux` makes Debian machines and `setup` does what they need root for,
// `machines create windows` installs a Windows machine from the user's ISO, and
// `retention` lists, previews and runs the rules that delete old analyses.
import { existsSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import type { AviaryService } from './service'
import { createLayout } from './storage/layout'
import { DEFAULT_HOST, DEFAULT_PORT, VERSION, defaultDataDir, parseSize } from './config'
import { retentionCommand } from './retention/retention-cli'
import { rulesCommand } from './processing/suricata/rules-cli'
import { registerCreateWindows } from './builder/windows/windows-cli'
import { registerCreateLinux, registerSetup } from './builder/linux-cli'
import { AGENT_PORT } from '../guest-protocol/agent-api'
import { registerFleetCommands } from './builder/fleet-cli'

// Each command loads what it runs when it runs (the bundle splits there): the service does not
// carry the guest agent, the doctor or the Cuckoo importer, and `aviary submit` not the service.

const int = (name: string, min: number, max: number) => (v: string): number => {
  const n = Number(v)
  if (!/^\d+$/.test(v) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`)
  return n
}

const size = (v: string): number => {
  const n = parseSize(v)
  if (n === null) throw new InvalidArgumentError('a size such as 1073741824, 512M or 2G')
  return n
}

export async function main(argv: string[]): Promise<number> {
  // The dispatcher shares nothing with the service: loaded only when asked for.
  if (argv[0] === 'dist' || argv[0] === 'dist-worker') return (await import('../dispatcher/cli')).runDistCli(argv)
  // The root helper imports nothing of the service: loaded only when asked for.
  if (argv[0] === 'rooter') return (await import('../rooter/cli')).runRooterCli(argv)
  let exitCode = 0
  const program = new Command('aviary')
    .description('Aviary: a malware-analysis sandbox with a Cuckoo-compatible API')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .addHelpText('after', '\nThe distributed dispatcher: aviary dist --help, aviary dist-worker --help\n' +
      'The root helper for routes: aviary rooter --help, aviary rooter install --help')

  program
    .command('serve')
    .description('run the analysis service (REST API) without a window')
    .option('-H, --host <host>', 'address to bind', DEFAULT_HOST)
    .option('-p, --port <port>', 'port to bind', int('port', 0, 65535), DEFAULT_PORT)
    .option('--data <dir>', 'data directory (default: $AVIARY_DATA or the per-user data directory)')
    .addOption(new Option('--api-token <token>', 'require "Authorization: Bearer <token>"').env('AVIARY_API_TOKEN'))
    .option('--max-upload-size <size>', 'largest accepted sample, e.g. 512M or 2G', size)
    .option('--max-machines <n>', 'analyses running at once (default: max_machines of machines.json, 0 = no limit)', int('max machines', 0, 1000))
    .option('--console-remote', 'serve the live console (a running guest\'s keyboard and screen) to other hosts too; default: this host only')
    .option('--debug', 'verbose logging; enables GET /exit')
    .action(async (o: ServeOptions) => {
      exitCode = await serve(o)
    })

  program
    .command('agent')
    .description('run the guest agent (Cuckoo 2 agent protocol) inside an analysis VM')
    .option('-H, --host <host>', 'address to bind', '0.0.0.0')
    .option('-p, --port <port>', 'port to bind', int('port', 0, 65535), AGENT_PORT)
    .action(async (o: { host: string; port: number }) => {
      exitCode = await agent(o)
    })

  program
    .command('doctor')
    .description('check every machine of machines.json before the first analysis; prints a fix for each failure')
    .argument('[machine...]', 'only these machines')
    .option('--data <dir>', 'data directory (default: $AVIARY_DATA or the per-user data directory)')
    .option('--deep', 'also revert, start and stop each machine and wait for its agent')
    .option('--json', 'print the findings as JSON')
    .action(async (only: string[], o: { data?: string; deep?: boolean; json?: boolean }) => {
      const { formatDoctorReport, runDoctor } = await import('./doctor/doctor')
      const layout = createLayout(o.data ?? defaultDataDir())
      const { leftoversFinding } = await import('./builder/upkeep')
      const report = await runDoctor({ machinesFile: layout.machinesConfig, deep: o.deep ?? false, only, leftovers: () => leftoversFinding(layout) })
      report.ids = await (await import('./processing/suricata/ids-check')).checkIds(layout.suricata)
      process.stdout.write(o.json ? JSON.stringify(report, null, 2) + '\n' : formatDoctorReport(report))
      exitCode = report.ok ? 0 : 1
    })

  const machines = program
    .command('machines')
    .description('manage machines.json and make analysis machines')
  machines
    .command('import')
    .description("write machines.json from an existing Cuckoo install's conf/ folder")
    .argument('<dir>', "Cuckoo's conf folder (cuckoo.conf, kvm.conf, virtualbox.conf, physical.conf)")
    .option('--data <dir>', 'data directory (default: $AVIARY_DATA or the per-user data directory)')
    .option('--force', 'replace an existing machines.json')
    .action(async (dir: string, o: { data?: string; force?: boolean }) => {
      exitCode = await importMachines(dir, o)
    })
  const create = machines.command('create').description('make an analysis machine and add it to machines.json')
  registerCreateWindows(create, (code) => { exitCode = code })
  registerCreateLinux(create, (code) => { exitCode = code })
  registerFleetCommands(machines, (code) => { exitCode = code })
  registerSetup(program, (code) => { exitCode = code })

  program
    .command('submit')
    .description('submit files, folders or URLs; prints the task ids')
    .argument('<target...>', 'files, folders (every file inside) or URLs')
    .option('--url', 'treat every target as a URL')
    .option('--package <name>', 'analysis package')
    .option('--timeout <seconds>', 'analysis timeout', int('timeout', 0, 86400))
    .option('--priority <n>', 'priority 1-3', int('priority', 1, 3))
    .option('--options <k=v,...>', 'options for the analysis package')
    .option('--machine <name>', 'analysis machine')
    .option('--platform <name>', 'platform, e.g. windows')
    .option('--tags <t1,t2>', 'machine tags')
    .option('--custom <text>', 'custom string')
    .option('--owner <name>', 'owner')
    .option('--memory', 'full memory dump of the machine')
    .option('--enforce-timeout', 'run for the whole timeout')
    .option('--route <name>', 'network route: none, drop, internet, inetsim or a VPN (GET /aviary/routes lists this host\'s)')
    .option('--mitm', 'decrypt the task\'s HTTPS through the proxy')
    .option('--unique', 'skip samples that were submitted before')
    .option('--json', 'print the result as JSON')
    .addOption(new Option('--remote <base>', 'API base URL').env('AVIARY_URL').default(`http://${DEFAULT_HOST}:${DEFAULT_PORT}`))
    .addOption(new Option('--api-token <token>', 'Bearer token of the API').env('AVIARY_API_TOKEN'))
    .action(async (targets: string[], o) => {
      exitCode = await (await import('./submit-cli')).runSubmit(targets, o)
    })

  retentionCommand(program, (code) => { exitCode = code })
  rulesCommand(program, (code) => { exitCode = code })

  try {
    await program.parseAsync(argv, { from: 'user' })
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode
    return typeof code === 'number' ? code : 1
  }
  return exitCode
}

interface ServeOptions {
  host: string
  port: number
  data?: string
  apiToken?: string
  maxUploadSize?: number
  maxMachines?: number
  consoleRemote?: boolean
  debug?: boolean
}

async function importMachines(dir: string, o: { data?: string; force?: boolean }): Promise<number> {
  const { importCuckooConf } = await import('./machinery/cuckoo-import')
  const layout = createLayout(o.data ?? defaultDataDir())
  const confDir = existsSync(path.join(dir, 'conf', 'cuckoo.conf')) ? path.join(dir, 'conf') : dir
  let result
  try {
    result = importCuckooConf(confDir)
  } catch (err) {
    process.stderr.write(`aviary: cannot import ${confDir}: ${(err as Error).message}\n`)
    return 1
  }
  for (const w of result.warnings) process.stderr.write(`aviary: warning: ${w}\n`)
  if (existsSync(layout.machinesConfig) && !o.force) {
    process.stderr.write(`aviary: ${layout.machinesConfig} exists; run again with --force to replace it\n`)
    return 1
  }
  layout.ensure()
  writeFileSync(layout.machinesConfig, result.json)
  process.stdout.write(`wrote ${layout.machinesConfig}; check it with \`aviary doctor\`\n`)
  return 0
}

async function agent(o: { host: string; port: number }): Promise<number> {
  let done!: (code: number) => void
  const finished = new Promise<number>((resolve) => (done = resolve))
  const { runAgent } = await import('../agent/index')
  const a = await runAgent({ host: o.host, port: o.port, log: (m) => process.stderr.write(`aviary agent: ${m}\n`) })
    .catch((err: Error) => {
      process.stderr.write(`aviary agent: cannot start: ${err.message}\n`)
      return null
    })
  if (!a) return 1
  process.stderr.write(`aviary agent: listening on ${o.host}:${a.port}\n`)
  const shutdown = () => void a.close().then(() => done(0), () => done(1))
  process.once('SIGINT', shutdown)
  process.once('SIGTERM', shutdown)
  return finished
}

async function serve(o: ServeOptions): Promise<number> {
  const dataDir = o.data ?? defaultDataDir()
  let done!: (code: number) => void
  const finished = new Promise<number>((resolve) => (done = resolve))
  const shutdown = () => void service.stop().then(() => done(0), () => done(1))
  const { AviaryService } = await import('./service')
  const service: AviaryService = new AviaryService({
    onExitRequest: shutdown,
    dataDir,
    host: o.host,
    port: o.port,
    apiToken: o.apiToken || undefined,
    debug: o.debug ?? false,
    logLevel: o.debug ? 'debug' : 'info',
    ...(o.maxUploadSize ? { maxUploadBytes: o.maxUploadSize } : {}),
    ...(o.maxMachines !== undefined ? { maxMachines: o.maxMachines } : {}),
    consoleRemote: o.consoleRemote ?? false
  })
  process.once('SIGINT', shutdown)
  process.once('SIGTERM', shutdown)
  try {
    const { url } = await service.start()
    process.stderr.write(`aviary: analysis API on ${url} (data: ${dataDir})\n`)
    process.stderr.write(`UI: ${url}/\n`)
  } catch (err) {
    process.stderr.write(`aviary: cannot start: ${(err as Error).message}\n`)
    return 1
  }
  return finished
}
