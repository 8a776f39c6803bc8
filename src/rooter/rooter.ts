// `aviary rooter`: the only part of Aviary that runs as root. It listens on a UNIX socket (mode
// 0660, group of the configuration), takes one JSON request per line (protocol.ts), checks it
// strictly (validate.ts), and answers one line. It touches nothing but its own nftables table,
// the policy rules of its own priority, and the INetSim it runs. Requests run one at a time.
//
// Containment fails closed (docs/network.md, "The base policy"):
// - From its start, the table denies everything from the configured guest networks and their
//   host interfaces, IPv6 included, but what a running task's grant allows for that guest's own
//   address. The interfaces are followed as they come and go (`ip monitor`).
// - Grants are written to the state file before the answer, and a rooter that starts (after a
//   crash, kill -9 or an upgrade) puts the table back with them in one transaction: there is no
//   moment without the base policy, and a run in progress keeps its route.
// - A grant belongs to the service that asked (its owner); a service that starts clears its own
//   and never another's. A grant its owner stops renewing lapses after LEASE_MS.
// - Stopping the rooter leaves the table as it is (the guests stay contained); `aviary rooter
//   remove` takes it away.
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import path from 'node:path'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { baseScript, counterName, disableScript, enableScript, guestIfsScript, nft } from './nft'
import { addVpnRule, defaultRouteInterfaces, deleteAllVpnRules, deleteVpnRule, forwarding, guestInterfaces, hostNetworks } from './host'
import { InetSim } from './inetsim'
import {
  LEASE_MS, MAX_REQUEST_BYTES, ROOTER_VERSION, routeKind, type DropCounts, type EnableRequest, type GuestInterface, type RooterAbilities,
  type RooterAnswer, type RouteKind
} from './protocol'
import type { RooterConfig } from './rooter-config'
import { parseRequest, Refused } from './validate'

export { ROOTER_VERSION }

/**
 * Connections: a client is one connection (a UNIX socket tells nothing more without peer
 * credentials, which Node does not read). Each may have one request in flight; it must send a
 * whole request line within FIRST_LINE_MS of connecting or of its last answer, or is closed. At
 * MAX_CONNECTIONS the oldest connection with no request in flight makes room for the new one, so
 * idle or trickling clients cannot keep the service's runs from their routes.
 */
export const MAX_CONNECTIONS = 256
export const FIRST_LINE_MS = 2_000
/** How often lapsed grants are looked for, and the guest interfaces looked at without an event. */
const SWEEP_MS = 5_000
const INTERFACES_POLL_MS = 10_000

export interface RooterOptions {
  config: RooterConfig
  log: (m: string) => void
  /** The INetSim program (tests may point elsewhere); default `inetsim`. */
  inetsim?: string
  /** How long a grant lives without renewal (tests shorten it); default LEASE_MS. */
  leaseMs?: number
}

interface Grant {
  request: EnableRequest
  /** When its owner last asked for its status (or the rooter put it back). */
  renewed: number
}

interface StateFile {
  version: 2
  grants: EnableRequest[]
}

interface Conn {
  busy: boolean
  since: number
  timer: NodeJS.Timeout | null
}

export class Rooter {
  private server: Server | null = null
  /** Grants by guest address. */
  private readonly grants = new Map<string, Grant>()
  private queue: Promise<unknown> = Promise.resolve()
  private inetsim: InetSim | null = null
  private readonly conns = new Map<Socket, Conn>()
  private guestIfs: GuestInterface[] = []
  private monitor: ChildProcess | null = null
  private timers: NodeJS.Timeout[] = []
  private stopping = false
  private readonly leaseMs: number

  constructor(private readonly o: RooterOptions) {
    this.leaseMs = o.leaseMs ?? LEASE_MS
  }

  async start(): Promise<void> {
    const c = this.o.config
    this.guestIfs = await guestInterfaces(c.networks)
    await this.refuseUnsafeNetworks()
    await this.restore()
    if (c.inetsim !== null) {
      const sim = new InetSim(c.inetsim, this.o.log, this.o.inetsim, `${c.socket}.inetsim`)
      try {
        await sim.start()
        this.inetsim = sim
      } catch (err) {
        await sim.stop()
        this.o.log(`the inetsim route is not offered: ${(err as Error).message}`)
      }
    }
    mkdirSync(path.dirname(c.socket), { recursive: true, mode: 0o755 })
    if (existsSync(c.socket)) rmSync(c.socket)
    this.server = createServer((s) => this.accept(s))
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject)
      this.server!.listen(c.socket, () => resolve())
    })
    chmodSync(c.socket, 0o660)
    if (c.group !== null) chownSync(c.socket, 0, groupId(c.group))
    this.followInterfaces()
    const sweep = setInterval(() => void this.serial(() => this.sweep()), SWEEP_MS)
    sweep.unref()
    this.timers.push(sweep)
    const v6 = this.guestIfs.filter((i) => i.ipv6).map((i) => i.name)
    this.o.log(`listening on ${c.socket}; routes: ${this.abilities().routes.join(', ')}; denied by default: ` +
      `${c.networks.map((n) => `${n.address}/${n.prefix}`).join(', ')} on ${this.guestIfs.map((i) => i.name).join(', ') || 'no interface yet'}` +
      (v6.length > 0 ? `; IPv6 is on ${v6.join(', ')} (dropped; better turned off)` : ''))
  }

  /** Stops answering; the table (base policy and grants) and the state stay, so guests stay contained. */
  async stop(): Promise<void> {
    this.stopping = true
    for (const t of this.timers) clearInterval(t)
    this.monitor?.kill()
    for (const s of this.conns.keys()) s.destroy()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
    await this.queue.catch(() => undefined)
    await this.inetsim?.stop()
    if (existsSync(this.o.config.socket)) rmSync(this.o.config.socket)
  }

  abilities(): RooterAbilities {
    const c = this.o.config
    const routes: RouteKind[] = ['none', 'drop']
    if (c.interfaces.length > 0) routes.push('internet')
    if (this.inetsim?.running) routes.push('inetsim')
    if (c.vpn.size > 0) routes.push('vpn')
    return {
      version: ROOTER_VERSION, routes, interfaces: c.interfaces, vpn: [...c.vpn.keys()],
      inetsim: this.inetsim?.running ? c.inetsim : null, forwarding: forwarding(),
      guestNetworks: c.networks.map((n) => `${n.address}/${n.prefix}`), guestInterfaces: this.guestIfs
    }
  }

  /**
   * A guest network on the interface of the host's default route, or on one the internet route
   * leaves through, would deny the host its own uplink (and a remote administrator their shell):
   * refused before anything is written, with the reason.
   */
  private async refuseUnsafeNetworks(): Promise<void> {
    const c = this.o.config
    const uplinks = new Set([...(await defaultRouteInterfaces()), ...c.interfaces, ...c.vpn.keys()])
    const clash = this.guestIfs.filter((i) => uplinks.has(i.name)).map((i) => i.name)
    if (clash.length > 0) {
      throw new Error(`guest network on ${clash.join(', ')}, which carries this host's default route or an internet or VPN route: ` +
        'guests need a network of their own (a bridge such as virbr0), since everything from a guest network is denied by default')
    }
  }

  // --- connections --------------------------------------------------------------------------

  private accept(s: Socket): void {
    if (this.conns.size >= MAX_CONNECTIONS) {
      let oldest: [Socket, Conn] | null = null
      for (const e of this.conns) if (!e[1].busy && (oldest === null || e[1].since < oldest[1].since)) oldest = e
      if (oldest === null) {
        s.end(JSON.stringify({ ok: false, error: 'busy: every connection has a request in flight' }) + '\n')
        return
      }
      oldest[0].destroy()
    }
    const conn: Conn = { busy: false, since: Date.now(), timer: null }
    this.conns.set(s, conn)
    const arm = (): void => {
      if (conn.timer) clearTimeout(conn.timer)
      conn.timer = setTimeout(() => s.destroy(), FIRST_LINE_MS)
    }
    arm()
    s.on('error', () => undefined)
    s.on('close', () => {
      if (conn.timer) clearTimeout(conn.timer)
      this.conns.delete(s)
    })
    let buf = ''
    s.setEncoding('utf8')
    // One request at a time per connection: the next line is read once the answer is written.
    const next = (): void => {
      if (conn.busy || s.destroyed) return
      const nl = buf.indexOf('\n')
      if (nl > MAX_REQUEST_BYTES || (nl < 0 && buf.length > MAX_REQUEST_BYTES)) {
        this.o.log(`refused: a request longer than ${MAX_REQUEST_BYTES} bytes; connection closed`)
        s.end(JSON.stringify({ ok: false, error: `request longer than ${MAX_REQUEST_BYTES} bytes` }) + '\n')
        buf = ''
        return
      }
      if (nl < 0) return
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      conn.busy = true
      if (conn.timer) clearTimeout(conn.timer)
      s.pause()
      void this.handle(line).then((answer) => {
        conn.busy = false
        conn.since = Date.now()
        if (s.destroyed) return
        s.write(JSON.stringify(answer) + '\n')
        arm()
        s.resume()
        next()
      })
    }
    s.on('data', (chunk: string) => {
      buf += chunk
      next()
    })
  }

  /** One request, after the ones before it. */
  handle(line: string): Promise<RooterAnswer> {
    return this.serial(() => this.run(line))
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn)
    this.queue = next.catch(() => undefined)
    return next
  }

  private async run(line: string): Promise<RooterAnswer> {
    const c = this.o.config
    let r
    try {
      r = parseRequest(line.length > MAX_REQUEST_BYTES ? '' : line, c)
    } catch (err) {
      const why = err instanceof Refused ? err.message : 'malformed'
      this.o.log(`refused: ${why}: ${JSON.stringify(line.slice(0, 200))}`)
      return { ok: false, error: why }
    }
    try {
      switch (r.op) {
        case 'ping':
          return { ok: true, abilities: this.abilities() }
        case 'status': {
          const g = this.grants.get(r.guest)
          if (g === undefined || g.request.owner !== r.owner) return { ok: true, routed: false }
          g.renewed = Date.now()
          return { ok: true, routed: true }
        }
        case 'flush': {
          const mine = [...this.grants.values()].filter((g) => g.request.owner === r.owner).map((g) => g.request.guest)
          for (const guest of mine) await this.disable(guest)
          this.o.log(`flushed the grants of service ${r.owner.slice(0, 8)}: ${mine.length === 0 ? 'none' : mine.join(', ')}; ` +
            `${this.grants.size} other grant(s) kept`)
          return { ok: true, cleared: mine.length }
        }
        case 'disable': {
          const g = this.grants.get(r.guest)
          if (g !== undefined && g.request.owner !== r.owner) {
            this.o.log(`refused: disable ${r.guest}: routed by another service`)
            return { ok: false, error: `guest: ${r.guest} is routed by another service` }
          }
          return { ok: true, dropped: await this.disable(r.guest) }
        }
        case 'enable': {
          const held = this.grants.get(r.guest)
          if (held !== undefined) {
            return { ok: false, error: held.request.owner === r.owner ? `guest: ${r.guest} is routed already (disable it first)` : `guest: ${r.guest} is routed by another service` }
          }
          if (routeKind(r.route).inetsim && !this.inetsim?.running) return { ok: false, error: 'inetsim: INetSim is not running' }
          if (routeKind(r.route).leavesHost && !forwarding()) return { ok: false, error: `${r.route}: net.ipv4.ip_forward is 0 on this host` }
          await this.apply(r)
          this.grants.set(r.guest, { request: r, renewed: Date.now() })
          this.saveState()
          this.o.log(`enabled ${r.route}${r.interface ? ` via ${r.interface}` : ''}${r.mitm ? ' with the proxy' : ''} for ${r.guest} (service ${r.owner.slice(0, 8)})`)
          return { ok: true }
        }
      }
    } catch (err) {
      this.o.log(`failed: ${(err as Error).message}`)
      return { ok: false, error: (err as Error).message }
    }
  }

  /** A grant's rules (and VPN policy rule) into the kernel; nothing is left half-done on failure. */
  private async apply(r: EnableRequest): Promise<void> {
    // Only the routes out (internet, a VPN) keep off the host's own networks: the others need no
    // listing of them (one `ip` run fewer on every task's start).
    const outside = routeKind(r.route).leavesHost
    await nft(['-f', '-'], enableScript(r, outside ? await hostNetworks() : []))
    if (routeKind(r.route).ownRoutingTable) {
      try {
        await addVpnRule(r.guest, this.o.config.vpn.get(r.interface!)!)
      } catch (err) {
        await nft(['-f', '-'], disableScript(r.guest)).catch(() => undefined)
        throw err
      }
    }
  }

  /** Removes the guest's rules; what they dropped meanwhile. Idempotent. */
  private async disable(guest: string): Promise<DropCounts> {
    const g = this.grants.get(guest)
    if (g === undefined) return { packets: 0, bytes: 0 }
    const r = g.request
    let dropped: DropCounts = { packets: 0, bytes: 0 }
    try {
      const j = JSON.parse(await nft(['-j', 'list', 'counter', 'inet', 'aviary', counterName(guest)])) as { nftables: { counter?: DropCounts }[] }
      const counter = j.nftables.find((x) => x.counter)?.counter
      if (counter) dropped = { packets: counter.packets, bytes: counter.bytes }
    } catch {
      // counted nothing we can read: the rules still go
    }
    await nft(['-f', '-'], disableScript(guest))
    if (routeKind(r.route).ownRoutingTable) await deleteVpnRule(guest, this.o.config.vpn.get(r.interface!)!)
    this.grants.delete(guest)
    this.saveState()
    this.o.log(`disabled the route of ${guest} (${dropped.packets} packets dropped)`)
    return dropped
  }

  /** Grants whose owner stopped renewing them (a service killed while its VM runs) are removed. */
  private async sweep(): Promise<void> {
    const now = Date.now()
    for (const g of [...this.grants.values()]) {
      if (now - g.renewed <= this.leaseMs) continue
      this.o.log(`the grant of ${g.request.guest} lapsed: its service has not renewed it for ${Math.round((now - g.renewed) / 1000)} s`)
      await this.disable(g.request.guest).catch((err: Error) => this.o.log(`failed: ${err.message}`))
    }
  }

  // --- the table and its state --------------------------------------------------------------

  /**
   * The table from the base policy and the grants of the state file, in one nft transaction
   * that replaces whatever table was there. A grant the configuration no longer allows is left
   * out and said; its run learns it from its next status request.
   */
  private async restore(): Promise<void> {
    const c = this.o.config
    const kept: EnableRequest[] = []
    for (const raw of this.readState()) {
      try {
        const r = parseRequest(JSON.stringify(raw), c)
        if (r.op !== 'enable' || kept.some((k) => k.guest === r.guest)) throw new Refused('not a grant')
        if (r.route === 'inetsim' && c.inetsim === null) throw new Refused('INetSim is not configured')
        kept.push(r)
      } catch (err) {
        this.o.log(`not restored: a grant of the state file: ${(err as Error).message}`)
      }
    }
    const nets = c.networks.map((n) => `${n.address}/${n.prefix}`)
    const hostNets = await hostNetworks()
    await deleteAllVpnRules()
    await nft(['-f', '-'], baseScript(nets, this.guestIfs.map((i) => i.name)) + kept.map((r) => enableScript(r, hostNets)).join(''))
    const now = Date.now()
    for (const r of kept) {
      if (routeKind(r.route).ownRoutingTable) await addVpnRule(r.guest, c.vpn.get(r.interface!)!).catch((err: Error) => this.o.log(`failed: ${err.message}`))
      this.grants.set(r.guest, { request: r, renewed: now })
    }
    this.saveState()
    if (kept.length > 0) this.o.log(`restored the routes of ${kept.map((r) => `${r.guest} (${r.route})`).join(', ')}`)
  }

  private readState(): unknown[] {
    const file = this.o.config.state
    if (!existsSync(file)) return []
    try {
      const s = JSON.parse(readFileSync(file, 'utf8')) as Partial<StateFile>
      return Array.isArray(s.grants) ? s.grants : []
    } catch (err) {
      this.o.log(`the state file ${file} is unreadable (${(err as Error).message}): no route is restored`)
      return []
    }
  }

  /** The grants, written whole to a new file that replaces the old one (never a half-written state). */
  private saveState(): void {
    const file = this.o.config.state
    const state: StateFile = { version: 2, grants: [...this.grants.values()].map((g) => g.request) }
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 })
    const tmp = `${file}.${process.pid}.tmp`
    writeFileSync(tmp, JSON.stringify(state) + '\n', { mode: 0o600 })
    renameSync(tmp, file)
  }

  /** Keeps the set of guest interfaces current: on every address or link event, and every few seconds. */
  private followInterfaces(): void {
    let pending: NodeJS.Timeout | null = null
    const refresh = (): void => {
      if (pending !== null || this.stopping) return
      pending = setTimeout(() => {
        pending = null
        void this.serial(() => this.refreshInterfaces())
      }, 100)
    }
    const watch = (): void => {
      if (this.stopping) return
      const m = spawn('ip', ['-o', 'monitor', 'link', 'address'], { stdio: ['ignore', 'pipe', 'ignore'] })
      this.monitor = m
      m.stdout.on('data', refresh)
      m.once('error', () => undefined)
      m.once('exit', () => {
        if (!this.stopping) setTimeout(watch, 1000).unref()
      })
    }
    watch()
    const poll = setInterval(refresh, INTERFACES_POLL_MS)
    poll.unref()
    this.timers.push(poll)
  }

  private async refreshInterfaces(): Promise<void> {
    let now: GuestInterface[]
    try {
      now = await guestInterfaces(this.o.config.networks)
    } catch (err) {
      this.o.log(`failed to list the interfaces: ${(err as Error).message}`)
      return
    }
    const key = (l: GuestInterface[]): string => l.map((i) => `${i.name}:${i.ipv6}`).join(',')
    if (key(now) === key(this.guestIfs)) return
    const before = this.guestIfs.map((i) => i.name).join(',')
    this.guestIfs = now
    if (now.map((i) => i.name).join(',') === before) return
    await nft(['-f', '-'], guestIfsScript(now.map((i) => i.name))).then(
      () => this.o.log(`guest interfaces: ${now.map((i) => i.name).join(', ') || 'none'}`),
      (err: Error) => this.o.log(`failed: ${err.message}`))
  }
}

/** `aviary rooter remove`: the table, Aviary's policy rules and the state go; guest networks are then as open as the host's other rules leave them. */
export async function removeRooterRules(stateFile: string): Promise<void> {
  await nft(['delete', 'table', 'inet', 'aviary']).catch(() => undefined)
  await deleteAllVpnRules()
  rmSync(stateFile, { force: true })
}

function groupId(name: string): number {
  const line = execFileSync('getent', ['group', name], { encoding: 'utf8' }).trim()
  const gid = Number(line.split(':')[2])
  if (!Number.isInteger(gid)) throw new Error(`no group named ${name}`)
  return gid
}
