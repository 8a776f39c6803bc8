// The decrypting proxy of one task: Debian's mitmdump, run as the service's own user, listening on
// the host's address of the guests' network in transparent mode (the rooter sends the guest's TCP
// to its TLS ports there, and mitmproxy finds each connection's real destination in conntrack).
// Its CA is the data folder's own, kept in <data>/mitm and made before the first mitmdump starts
// (mitm-ca.ts); the analyzer trusts it in the guest for the run. What it sees goes to the task's
// folder: mitm/dump.mitm (mitmproxy's own format, to open in mitmproxy), mitm/flows.jsonl (Aviary's
// addon, read by processing) and mitm/mitm.log. Upstream certificates are not verified: the
// sample, not the host, decides whom it trusts, and a sample's server often has a certificate no
// store knows.
// mitmdump never outlives the service: it is started through `setpriv --pdeathsig SIGKILL`
// (util-linux), so the kernel kills it when the service dies, even by kill -9; and its pid is kept
// in <data>/mitm/pids/ while it runs, so a service started on the data folder ends one that was
// left anyway (endLeftoverProxies, checked against /proc/<pid>/cmdline before anything is killed).
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createWriteStream } from 'node:fs'
import { ARTIFACTS, artifactPath } from '../storage/layout'
import { ensureMitmCa, type MitmCa } from './mitm-ca'
import { diesWithParent, setprivPath } from '../../shared/setpriv'

/** The addon, next to the bundle (out/cli → resources) or the sources. */
export function defaultAddon(): string {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const candidates = [path.resolve(here, '../../resources/mitm/aviary_flows.py'), path.resolve(here, '../../../resources/mitm/aviary_flows.py'),
    path.resolve('resources/mitm/aviary_flows.py')]
  return candidates.find((f) => existsSync(f)) ?? candidates[0]!
}

function freePort(ip: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, ip, () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

function accepts(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: ip, port })
    const done = (ok: boolean): void => {
      s.destroy()
      resolve(ok)
    }
    s.setTimeout(500, () => done(false))
    s.once('connect', () => done(true))
    s.once('error', () => done(false))
  })
}

/** Where the pids of running mitmdumps are kept, in the confdir: one file per pid. */
const PIDS = 'pids'

/** The arguments of a running process (/proc/<pid>/cmdline), or null when there is no such process. */
function cmdline(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '')
  } catch {
    return null
  }
}

/** Whether these arguments are a mitmdump started on this confdir (directly or through setpriv). */
function isOurProxy(args: string[], confdir: string): boolean {
  return args.some((a) => path.basename(a).startsWith('mitmdump')) && args.includes(`confdir=${confdir}`)
}

/**
 * Ends the mitmdumps an earlier service on this data folder left running (killed without its
 * proxies dying with it), by the pids it kept. A pid is killed only if /proc says it still is a
 * mitmdump of this confdir: a pid the system gave to another process since is left alone. Called
 * when the service starts, before any run; one service holds a data folder (aviary.lock), so every
 * pid found then is a leftover. Returns what it did, for the service's log.
 */
export function endLeftoverProxies(confdir: string): string[] {
  const dir = path.join(confdir, PIDS)
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  const out: string[] = []
  for (const name of names) {
    const pid = Number(name)
    const args = /^\d+$/.test(name) ? cmdline(pid) : null
    if (args !== null && isOurProxy(args, confdir)) {
      try {
        process.kill(pid, 'SIGKILL')
        out.push(`ended mitmdump ${pid}, left running by an earlier service`)
      } catch (err) {
        out.push(`could not end mitmdump ${pid}, left running by an earlier service: ${(err as Error).message}`)
      }
    }
    rmSync(path.join(dir, name), { force: true })
  }
  return out
}

export interface MitmOptions {
  mitmdump: string
  /** Where it listens: the host's address on the guests' network. */
  ip: string
  /** <data>/mitm: mitmproxy's confdir, with the data folder's CA. */
  confdir: string
  /** The task's analysis folder: the proxy's files go into its mitm/ (ARTIFACTS.mitm*). */
  analysisDir: string
  /** `reverse:https://host:443` for the inetsim route; transparent otherwise. */
  mode?: string
  /** For what the CA setup has to say (a CA made, an unusable one set aside). */
  log?: (msg: string) => void
}

export class Mitm {
  private child: ChildProcess | null = null
  private ca: MitmCa | null = null
  private pidFile: string | null = null
  port = 0

  constructor(private readonly o: MitmOptions) {}

  /** The CA certificate the guest must trust (known once start() resolved). */
  get caCert(): string | null {
    return this.ca?.cert ?? null
  }

  async start(timeoutMs = 30_000): Promise<void> {
    const confdir = path.resolve(this.o.confdir)
    // Before mitmdump starts: with a CA in its confdir, mitmproxy makes none of its own.
    this.ca = await ensureMitmCa(confdir, { ...(this.o.log ? { log: this.o.log } : {}) })
    mkdirSync(artifactPath(this.o.analysisDir, ARTIFACTS.mitm), { recursive: true })
    mkdirSync(path.join(confdir, PIDS), { recursive: true, mode: 0o700 })
    this.port = await freePort(this.o.ip)
    const log = createWriteStream(artifactPath(this.o.analysisDir, ARTIFACTS.mitmLog), { flags: 'a' })
    const args = ['--mode', this.o.mode ?? 'transparent', '--listen-host', this.o.ip, '--listen-port', String(this.port),
      '--set', `confdir=${confdir}`, '--set', 'ssl_insecure=true', '--set', 'stream_large_bodies=4m',
      '--set', 'termlog_verbosity=info', '-w', artifactPath(this.o.analysisDir, ARTIFACTS.mitmDump), '-s', defaultAddon(),
      // Reverse mode (to INetSim) keeps the name the sample asked for, not the upstream's address.
      ...(this.o.mode?.startsWith('reverse:') ? ['--set', 'keep_host_header=true'] : [])]
    const setpriv = setprivPath()
    // The parent-death signal survives setpriv's exec of mitmdump (it is no setuid program), and
    // the service spawns from its main thread, whose end is what the kernel watches.
    const [file, argv] = diesWithParent(this.o.mitmdump, args, 'SIGKILL')
    const child = spawn(file, argv, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, AVIARY_FLOWS: artifactPath(this.o.analysisDir, ARTIFACTS.mitmFlows) }
    })
    this.child = child
    if (child.pid !== undefined) {
      this.pidFile = path.join(confdir, PIDS, String(child.pid))
      writeFileSync(this.pidFile, `${this.o.analysisDir}\n`)
    }
    if (setpriv === null) log.write('setpriv (util-linux) was not found: this mitmdump would outlive a service killed with kill -9\n')
    child.stdout?.pipe(log)
    child.stderr?.pipe(log)
    let tail = ''
    child.stderr?.on('data', (b: Buffer) => { tail = (tail + b.toString()).slice(-400) })
    let exited: string | null = null
    child.once('error', (err) => { exited = err.message })
    child.once('exit', (code, signal) => {
      exited ??= `exited (${signal ?? code})`
      this.forgetPid()
    })
    const end = Date.now() + timeoutMs
    while (!(await accepts(this.o.ip, this.port))) {
      if (exited !== null) {
        const said = tail.trim().split('\n').pop()?.trim()
        throw new Error(`mitmdump did not start: ${exited}${said ? `: ${said}` : ''} (see ${ARTIFACTS.mitmLog})`)
      }
      if (Date.now() > end) {
        await this.stop()
        throw new Error(`mitmdump did not listen on ${this.o.ip}:${this.port} within ${timeoutMs / 1000} s`)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  private forgetPid(): void {
    if (this.pidFile !== null) rmSync(this.pidFile, { force: true })
    this.pidFile = null
  }

  /** Stops it; its files are complete once this resolves. */
  async stop(): Promise<void> {
    const child = this.child
    this.child = null
    if (child === null || child.exitCode !== null || child.signalCode !== null) {
      this.forgetPid()
      return
    }
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGTERM')
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await gone
    clearTimeout(t)
    this.forgetPid()
  }
}
