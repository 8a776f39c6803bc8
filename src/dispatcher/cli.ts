// `aviary dist` (the dispatcher: API and, by default, its worker) and `aviary dist-worker` (the
// worker alone, next to API processes started with --no-worker on a shared PostgreSQL). Loaded
// by src/core/cli.ts only for these commands, so `aviary serve` never loads the dispatcher.
import path from 'node:path'
import { Command, InvalidArgumentError } from 'commander'
import pkg from '../../package.json'
import { DEFAULT_INTERVAL, DEFAULT_THRESHOLD, DEFAULT_TRANSFER_TIMEOUT, DIST_DEFAULT_HOST, DIST_DEFAULT_PORT, parseFormats, resolveDistConfig, type DistConfig, type DistConfigInput } from './config'

const int = (name: string, min: number, max: number) => (v: string): number => {
  const n = Number(v)
  if (!/^\d+$/.test(v) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`)
  return n
}
const formats = (v: string): string[] => {
  try {
    return parseFormats(v)
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message)
  }
}

interface CommonFlags {
  debug?: boolean
  db?: string
  samplesDirectory?: string
  reportFormats?: string[]
  reportsDirectory?: string
  uptimeLogfile?: string
  data?: string
  threshold?: number
  transferTimeout?: number
  interval?: number
}

interface DistFlags extends CommonFlags {
  host?: string
  port?: number
  worker: boolean
  uwsgi?: boolean
  nginx?: boolean
}

const withCommon = (c: Command): Command => c
  .option('-d, --debug', 'debug logging (every request)')
  .option('--db <url>', 'database: a file, sqlite:///file.db or postgresql://user:pass@host/db (default: dist.db in the data folder)')
  .option('--samples-directory <dir>', 'where submitted samples wait for their node (default: <data>/samples)')
  .option('--report-formats <list>', 'report formats to fetch from the nodes, comma-separated', formats)
  .option('--reports-directory <dir>', 'where fetched reports are kept (default: <data>/reports)')
  .option('--uptime-logfile <file>', 'append one JSON line per node status check')
  .option('--data <dir>', "the dispatcher's folder (default: the dist folder in Aviary's data directory)")
  .option('--threshold <n>', 'tasks per assignment round', int('threshold', 1, 1_000_000), DEFAULT_THRESHOLD)
  .option('--transfer-timeout <seconds>', 'how long a node may take to answer a submission or send a report; a submission whose answer was ' +
    'lost is made again only this long after it began, if no copy of it is on the node', int('transfer-timeout', 1, 86_400), DEFAULT_TRANSFER_TIMEOUT)
  .option('--interval <seconds>', "seconds between the worker's rounds: assigning tasks, and each node's submissions, status checks and " +
    'report fetches', int('interval', 1, 3_600), DEFAULT_INTERVAL)

const toInput = (o: CommonFlags): DistConfigInput => ({
  debug: o.debug ?? false,
  ...(o.db !== undefined ? { db: o.db } : {}),
  ...(o.samplesDirectory !== undefined ? { samplesDir: o.samplesDirectory } : {}),
  ...(o.reportsDirectory !== undefined ? { reportsDir: o.reportsDirectory } : {}),
  ...(o.reportFormats !== undefined ? { reportFormats: o.reportFormats } : {}),
  ...(o.uptimeLogfile !== undefined ? { uptimeLogfile: path.resolve(o.uptimeLogfile) } : {}),
  ...(o.data !== undefined ? { dataDir: o.data } : {}),
  ...(o.threshold !== undefined ? { threshold: o.threshold } : {}),
  ...(o.transferTimeout !== undefined ? { transferTimeout: o.transferTimeout } : {}),
  ...(o.interval !== undefined ? { interval: o.interval } : {})
})

/** Runs `aviary dist …` or `aviary dist-worker …` (argv starts with the command name). */
export async function runDistCli(argv: string[]): Promise<number> {
  let exitCode = 0
  const program = new Command('aviary').version(pkg.version).exitOverride().configureOutput({ writeErr: (s) => process.stderr.write(s) })

  withCommon(program
    .command('dist')
    .description('run the distributed dispatcher (Cuckoo-compatible, both API generations) and its worker')
    .argument('[host]', `address to bind (older form of -H; default ${DIST_DEFAULT_HOST})`)
    .argument('[port]', `port to bind (older form of -p; default ${DIST_DEFAULT_PORT})`, int('port', 0, 65535))
    .option('-H, --host <host>', 'address to bind')
    .option('-p, --port <port>', 'port to bind', int('port', 0, 65535)))
    .option('--no-worker', 'serve the API only; run `aviary dist-worker` separately')
    .option('--uwsgi', 'print a process-manager (systemd) unit that runs this dispatcher, and exit')
    .option('--nginx', 'print an nginx reverse-proxy configuration for this dispatcher, and exit')
    .action(async (host: string | undefined, port: number | undefined, o: DistFlags) => {
      const config = resolveDistConfig({ ...toInput(o), host: o.host ?? host ?? DIST_DEFAULT_HOST, port: o.port ?? port ?? DIST_DEFAULT_PORT, worker: o.worker })
      if (o.uwsgi || o.nginx) {
        if (o.uwsgi) process.stdout.write(systemdUnit(config, o))
        if (o.nginx) process.stdout.write(nginxConfig(config))
        return
      }
      exitCode = await runDispatcher(config)
    })

  withCommon(program
    .command('dist-worker')
    .description("run only the dispatcher's worker (assigns, submits, fetches reports), next to API processes started with --no-worker"))
    .action(async (o: CommonFlags) => {
      exitCode = await runWorkerOnly(resolveDistConfig(toInput(o)))
    })

  try {
    await program.parseAsync(argv, { from: 'user' })
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode
    return typeof code === 'number' ? code : 1
  }
  return exitCode
}

async function runDispatcher(config: DistConfig): Promise<number> {
  const { startDispatcher } = await import('./index')
  let dispatcher
  try {
    dispatcher = await startDispatcher({ ...config, logLevel: config.debug ? 'debug' : 'info' })
  } catch (err) {
    process.stderr.write(`aviary dist: cannot start: ${(err as Error).message}\n`)
    return 1
  }
  const done = untilSignal(() => dispatcher.stop())
  process.stderr.write(`aviary dist: dispatcher API on ${dispatcher.url}${config.worker ? ' (worker in-process)' : ' (no worker: run aviary dist-worker)'}; data: ${config.dataDir}\n`)
  return done
}

async function runWorkerOnly(config: DistConfig): Promise<number> {
  const [{ openStore }, { startWorker }, { workerOptions }, { mkdir }] = await Promise.all([
    import('./store/index'), import('./worker/index'), import('./index'), import('node:fs/promises')
  ])
  let stop: () => Promise<void>
  try {
    await mkdir(config.reportsDir, { recursive: true })
    const store = await openStore(config.db, config.dataDir)
    const worker = await startWorker(store, workerOptions(config))
    stop = async () => {
      await worker.stop()
      await store.close()
    }
  } catch (err) {
    process.stderr.write(`aviary dist-worker: cannot start: ${(err as Error).message}\n`)
    return 1
  }
  // Signal handlers first: whoever waits for this line may send SIGTERM at once.
  const done = untilSignal(stop)
  process.stderr.write(`aviary dist-worker: running (reports: ${config.reportsDir})\n`)
  return done
}

function untilSignal(stop: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    const shutdown = () => void stop().then(() => resolve(0), () => resolve(1))
    process.once('SIGINT', shutdown)
    process.once('SIGTERM', shutdown)
  })
}

/** The command line that reproduces `config` (absolute paths, for a unit file). */
function distArgs(config: DistConfig, o: DistFlags): string[] {
  const args = ['dist', '-H', config.host, '-p', String(config.port), '--data', config.dataDir,
    '--samples-directory', config.samplesDir, '--reports-directory', config.reportsDir,
    '--report-formats', config.reportFormats.join(','), '--threshold', String(config.threshold)]
  if (config.transferTimeout !== DEFAULT_TRANSFER_TIMEOUT) args.push('--transfer-timeout', String(config.transferTimeout))
  if (config.interval !== DEFAULT_INTERVAL) args.push('--interval', String(config.interval))
  if (o.db !== undefined) args.push('--db', o.db)
  if (config.uptimeLogfile) args.push('--uptime-logfile', config.uptimeLogfile)
  if (!config.worker) args.push('--no-worker')
  if (config.debug) args.push('--debug')
  return args
}

const quote = (a: string): string => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `"${a.replace(/(["\\$`])/g, '\\$1')}"`)

export function systemdUnit(config: DistConfig, o: DistFlags): string {
  const bin = path.resolve(process.argv[1] ?? 'bin/aviary.js')
  const exec = [process.execPath, bin, ...distArgs(config, o)].map(quote).join(' ')
  return `# Cuckoo's --uwsgi printed a uWSGI configuration because its dispatcher was a Python WSGI
# application that needed an application server. Aviary's dispatcher is a Node.js program that
# serves HTTP itself, so there is nothing for uWSGI to host: what uWSGI did besides (start at boot,
# restart on failure, run as an unprivileged user, collect the log) is the process manager's job.
# This is the equivalent for systemd. Save it as /etc/systemd/system/aviary-dist.service, then:
#   systemctl daemon-reload && systemctl enable --now aviary-dist
# For several API processes on one PostgreSQL, start them with --no-worker and run one
# \`aviary dist-worker\` unit (same --db, --reports-directory, --samples-directory).
[Unit]
Description=Aviary distributed dispatcher (Cuckoo-compatible) on ${config.host}:${config.port}
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=${exec}
Restart=on-failure
RestartSec=5
# Run as the user that owns the data folder: User=aviary
NoNewPrivileges=yes
PrivateTmp=yes

[Install]
WantedBy=multi-user.target
`
}

export function nginxConfig(config: DistConfig): string {
  const upstream = `${config.host.includes(':') ? `[${config.host}]` : config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`
  return `# nginx in front of aviary dist (${upstream}). Save as /etc/nginx/sites-enabled/aviary-dist
# and reload nginx. Samples of any size are streamed through to the dispatcher, which streams
# them to its samples directory: no size limit here and no buffering of request bodies.
upstream aviary_dist {
    server ${upstream};
}

server {
    listen 80;
    server_name _;

    client_max_body_size 0;

    location / {
        proxy_pass http://aviary_dist;
        proxy_http_version 1.1;
        proxy_request_buffering off;
        proxy_buffering off;
        proxy_read_timeout 600s;
        proxy_send_timeout 600s;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }
}
`
}
