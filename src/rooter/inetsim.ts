// The fake internet of the inetsim route: Debian's INetSim, run by the rooter (INetSim must start
// as root; it then runs its services as the `inetsim` user) on the configured address of the
// guests' network, from the system's INetSim configuration (/etc/inetsim/inetsim.conf: its
// services, fake files and answers, as the administrator tuned them) with two settings of the
// rooter's own: every service bound to that address, and DNS answering every name with it.
// Started with the rooter, stopped with it; the rooter's nft rules send the guests' traffic to it.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { diesWithParent } from '../shared/setpriv'

const SERVICES = ['dns', 'http', 'https', 'smtp', 'smtps', 'pop3', 'pop3s', 'ftp', 'ftps', 'tftp', 'irc', 'ntp', 'finger', 'ident',
  'syslog', 'time_tcp', 'time_udp', 'daytime_tcp', 'daytime_udp', 'echo_tcp', 'echo_udp', 'discard_tcp', 'discard_udp',
  'quotd_tcp', 'quotd_udp', 'chargen_tcp', 'chargen_udp', 'dummy_tcp', 'dummy_udp']

export const SYSTEM_CONF = '/etc/inetsim/inetsim.conf'

/** The system's configuration (or every default service), bound to `address`. */
export function inetsimConf(address: string, system = SYSTEM_CONF): string {
  const base = existsSync(system)
    ? readFileSync(system, 'utf8').split('\n').filter((l) => !/^\s*(service_bind_address|dns_default_ip)\b/.test(l))
    : SERVICES.map((s) => `start_service ${s}`)
  return [...base, `service_bind_address ${address}`, `dns_default_ip ${address}`, ''].join('\n')
}

function listening(ip: string, port: number): Promise<boolean> {
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

export class InetSim {
  private child: ChildProcess | null = null
  private dir: string | null = null
  private tail = ''

  /**
   * `leftover`: where the rooter keeps the process group of the INetSim it runs, so that the next
   * rooter can end one an earlier rooter left (null: nowhere).
   */
  constructor(private readonly address: string, private readonly log: (m: string) => void, private readonly program = 'inetsim',
    private readonly leftover: string | null = null) {}

  /** Starts INetSim and resolves once its HTTP service answers (INetSim forks its services one by one). */
  async start(timeoutMs = 60_000): Promise<void> {
    await this.endLeftover()
    this.dir = mkdtempSync(path.join(tmpdir(), 'aviary-inetsim-'))
    const conf = path.join(this.dir, 'inetsim.conf')
    writeFileSync(conf, inetsimConf(this.address), { mode: 0o644 })
    // INetSim forks a process per service and does not notice its parent's death: a rooter killed
    // with kill -9 left them all running, bound to the guests' network, and a restarted rooter's
    // INetSim then found its ports taken. Through setpriv the kernel sends INetSim SIGTERM when the
    // rooter dies, and INetSim ends its services as on any SIGTERM; but a SIGTERM in its first
    // seconds, while it still starts its services, is lost. So INetSim also gets a process group of
    // its own, recorded in `leftover`, which the next rooter ends before it starts its own.
    const [file, argv] = diesWithParent(this.program, [`--config=${conf}`, `--pidfile=${path.join(this.dir, 'inetsim.pid')}`], 'SIGTERM')
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    this.child = child
    if (this.leftover !== null && child.pid !== undefined) writeFileSync(this.leftover, `${child.pid}\n${this.dir}\n`, { mode: 0o600 })
    const keep = (b: Buffer): void => { this.tail = (this.tail + b.toString()).slice(-2000) }
    child.stdout?.on('data', keep)
    child.stderr?.on('data', keep)
    let exited: string | null = null
    child.once('error', (err) => { exited = err.message })
    child.once('exit', (code, signal) => {
      exited ??= `exited (${signal ?? code})`
      if (this.child === child) this.log(`INetSim ${exited}: ${this.tail.trim().split('\n').slice(-3).join(' | ')}`)
    })
    const end = Date.now() + timeoutMs
    while (!(await listening(this.address, 80))) {
      if (exited !== null) throw new Error(`INetSim did not start: ${exited}: ${this.tail.trim().split('\n').slice(-3).join(' | ')}`)
      if (Date.now() > end) throw new Error(`INetSim did not answer on ${this.address}:80 within ${timeoutMs / 1000} s`)
      await new Promise((r) => setTimeout(r, 200))
    }
    this.log(`INetSim answers on ${this.address}`)
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null
  }

  async stop(): Promise<void> {
    const child = this.child
    this.child = null
    if (child !== null && child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      const pgid = child.pid
      const signal = (s: NodeJS.Signals): void => signalGroup(pgid, s)
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      // The whole group: INetSim and each service it has forked so far, even while it starts.
      signal('SIGTERM')
      const t = setTimeout(() => signal('SIGKILL'), 10_000)
      await gone
      clearTimeout(t)
      if (groupAlive(child.pid)) signal('SIGKILL')
    }
    if (this.dir !== null) rmSync(this.dir, { recursive: true, force: true })
    this.dir = null
    if (this.leftover !== null) rmSync(this.leftover, { force: true })
  }

  /** Ends the INetSim process group an earlier rooter recorded, if it still runs as INetSim. */
  private async endLeftover(): Promise<void> {
    if (this.leftover === null || !existsSync(this.leftover)) return
    const [group = '', dir = ''] = readFileSync(this.leftover, 'utf8').split('\n')
    const pgid = Number(group.trim())
    rmSync(this.leftover, { force: true })
    // Its configuration folder, which a rooter killed with -9 could not remove (one of ours by name only).
    if (path.basename(dir).startsWith('aviary-inetsim-') && path.dirname(dir) === tmpdir()) rmSync(dir, { recursive: true, force: true })
    // Only a group whose leader is still INetSim: the number may belong to another program by now.
    if (!Number.isInteger(pgid) || pgid <= 1 || !isInetSim(pgid)) return
    const signal = (s: NodeJS.Signals): void => signalGroup(pgid, s)
    signal('SIGTERM')
    for (let i = 0; i < 50 && groupAlive(pgid); i++) await new Promise((r) => setTimeout(r, 100))
    if (groupAlive(pgid)) signal('SIGKILL')
    this.log(`ended INetSim ${pgid}, left running by an earlier rooter`)
  }
}

function isInetSim(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('inetsim')
  } catch {
    return false
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal)
  } catch { /* the group is gone */ }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}
