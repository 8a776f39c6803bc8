// `aviary rooter`: the only part of Aviary that runs as root. It listens on a UNIX socket (mode
// 0660, group of the configuration), takes one JSON request per line (protocol.ts), checks it
// strictly (validate.ts), and answers one line. It touches nothing but its own nftables table,
// the policy rules of its own priority, and the INetSim it runs. Requests run one at a time.
// It starts from a clean table and removes it when it stops.
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { baseScript, counterName, disableScript, enableScript, nft } from './nft'
import { addVpnRule, deleteAllVpnRules, deleteVpnRule, forwarding, hostNetworks } from './host'
import { InetSim } from './inetsim'
import { MAX_REQUEST_BYTES, type DropCounts, type EnableRequest, type RooterAbilities, type RooterAnswer, type RouteKind } from './protocol'
import type { RooterConfig } from './rooter-config'
import { parseRequest, Refused } from './validate'

export const ROOTER_VERSION = '1'
const MAX_CONNECTIONS = 32
const IDLE_MS = 60_000

export interface RooterOptions {
  config: RooterConfig
  log: (m: string) => void
  /** The INetSim program (tests may point elsewhere); default `inetsim`. */
  inetsim?: string
}

export class Rooter {
  private server: Server | null = null
  private readonly routed = new Map<string, EnableRequest>()
  private queue: Promise<unknown> = Promise.resolve()
  private inetsim: InetSim | null = null
  private readonly sockets = new Set<Socket>()

  constructor(private readonly o: RooterOptions) {}

  async start(): Promise<void> {
    const c = this.o.config
    await this.resetTable()
    if (c.inetsim !== null) {
      const sim = new InetSim(c.inetsim, this.o.log, this.o.inetsim)
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
    this.server.maxConnections = MAX_CONNECTIONS
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject)
      this.server!.listen(c.socket, () => resolve())
    })
    chmodSync(c.socket, 0o660)
    if (c.group !== null) chownSync(c.socket, 0, groupId(c.group))
    this.o.log(`listening on ${c.socket}; routes: ${this.abilities().routes.join(', ')}`)
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
    await this.queue.catch(() => undefined)
    await nft(['delete', 'table', 'inet', 'aviary']).catch(() => undefined)
    await deleteAllVpnRules()
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
      inetsim: this.inetsim?.running ? c.inetsim : null, forwarding: forwarding()
    }
  }

  private accept(s: Socket): void {
    this.sockets.add(s)
    s.setTimeout(IDLE_MS, () => s.destroy())
    s.on('error', () => undefined)
    s.on('close', () => this.sockets.delete(s))
    let buf = ''
    s.setEncoding('utf8')
    s.on('data', (chunk: string) => {
      buf += chunk
      if (buf.length > MAX_REQUEST_BYTES && !buf.slice(0, MAX_REQUEST_BYTES + 1).includes('\n')) {
        this.o.log(`refused: a request longer than ${MAX_REQUEST_BYTES} bytes; connection closed`)
        s.end(JSON.stringify({ ok: false, error: `request longer than ${MAX_REQUEST_BYTES} bytes` }) + '\n')
        s.destroy()
        return
      }
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        s.pause()
        void this.handle(line).then((answer) => {
          if (!s.destroyed) s.write(JSON.stringify(answer) + '\n')
          s.resume()
        })
      }
    })
  }

  /** One request, after the ones before it. */
  handle(line: string): Promise<RooterAnswer> {
    const next = this.queue.then(() => this.run(line))
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
        case 'flush':
          for (const guest of [...this.routed.keys()]) await this.disable(guest)
          await this.resetTable()
          this.o.log('flushed: no guest is routed')
          return { ok: true }
        case 'disable':
          return { ok: true, dropped: await this.disable(r.guest) }
        case 'enable': {
          if (this.routed.has(r.guest)) return { ok: false, error: `guest: ${r.guest} is routed already (disable it first)` }
          if (r.route === 'inetsim' && !this.inetsim?.running) return { ok: false, error: 'inetsim: INetSim is not running' }
          if ((r.route === 'internet' || r.route === 'vpn') && !forwarding()) return { ok: false, error: `${r.route}: net.ipv4.ip_forward is 0 on this host` }
          await nft(['-f', '-'], enableScript(r, await hostNetworks()))
          this.routed.set(r.guest, r)
          if (r.route === 'vpn') {
            try {
              await addVpnRule(r.guest, c.vpn.get(r.interface!)!)
            } catch (err) {
              await this.disable(r.guest)
              throw err
            }
          }
          this.o.log(`enabled ${r.route}${r.interface ? ` via ${r.interface}` : ''}${r.mitm ? ' with the proxy' : ''} for ${r.guest}`)
          return { ok: true }
        }
      }
    } catch (err) {
      this.o.log(`failed: ${(err as Error).message}`)
      return { ok: false, error: (err as Error).message }
    }
  }

  /** Removes the guest's rules; what they dropped meanwhile. Idempotent. */
  private async disable(guest: string): Promise<DropCounts> {
    const r = this.routed.get(guest)
    if (r === undefined) return { packets: 0, bytes: 0 }
    let dropped: DropCounts = { packets: 0, bytes: 0 }
    try {
      const j = JSON.parse(await nft(['-j', 'list', 'counter', 'inet', 'aviary', counterName(guest)])) as { nftables: { counter?: DropCounts }[] }
      const counter = j.nftables.find((x) => x.counter)?.counter
      if (counter) dropped = { packets: counter.packets, bytes: counter.bytes }
    } catch {
      // counted nothing we can read: the rules still go
    }
    await nft(['-f', '-'], disableScript(guest))
    if (r.route === 'vpn') await deleteVpnRule(guest, this.o.config.vpn.get(r.interface!)!)
    this.routed.delete(guest)
    this.o.log(`disabled the route of ${guest} (${dropped.packets} packets dropped)`)
    return dropped
  }

  private async resetTable(): Promise<void> {
    await nft(['delete', 'table', 'inet', 'aviary']).catch(() => undefined)
    await deleteAllVpnRules()
    await nft(['-f', '-'], baseScript())
  }
}

function groupId(name: string): number {
  const line = execFileSync('getent', ['group', name], { encoding: 'utf8' }).trim()
  const gid = Number(line.split(':')[2])
  if (!Number.isInteger(gid)) throw new Error(`no group named ${name}`)
  return gid
}
