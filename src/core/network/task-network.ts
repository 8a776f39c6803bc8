// The network of one run: its route turned on through the rooter before the machine starts (the
// guest never runs unrouted), the decrypting proxy started first when the task asks for it, and
// both undone after the machine stopped, with what the route dropped meanwhile. While the route
// is on, the run asks the rooter every RENEW_MS whether it still holds it (which renews the
// grant's lease): a rooter restarted without it, or one that stays away for a whole lease, ends
// the run at once with the reason (`onLost`) instead of letting it go on unrouted or unwatched.
import type { RoutingSettings } from './routing-config'
import { chooseRoute, type TaskRoute } from './task-route'
import { rooter } from './rooter-client'
import { Mitm } from './mitm'
import { LEASE_MS, RENEW_MS } from '../../rooter/protocol'

export interface TaskNetworkOptions {
  routing: RoutingSettings
  options: string | null
  guest: string
  resultserver: { ip: string; port: number }
  /** <data>/mitm, and the task's analysis folder (the proxy writes into its mitm/). */
  mitmConf: string
  analysisDir: string
  log: (msg: string) => void
  /** This service's id at the rooter (rooterOwner of its data folder). */
  owner: string
  /** The route was lost while on: the run must end, with this reason. Called at most once. */
  onLost: (reason: string) => void
  /** Tests shorten these; default RENEW_MS and LEASE_MS. */
  renewMs?: number
  leaseMs?: number
}

export class TaskNetwork {
  private mitm: Mitm | null = null
  private enabled = false
  private watch: NodeJS.Timeout | null = null
  private lost = false
  readonly choice: TaskRoute

  /** A route not offered (any more) falls back to none (choice.fallback says why); RouteChoiceError only for what cannot be honoured. */
  constructor(private readonly o: TaskNetworkOptions) {
    this.choice = chooseRoute(o.options, o.routing)!
  }

  get route(): string {
    return this.choice.route.name
  }

  /** The CA the guest must trust for the run, when the proxy runs. */
  get caCert(): string | null {
    return this.mitm?.caCert ?? null
  }

  async start(): Promise<void> {
    const { route, mitm } = this.choice
    const o = this.o
    if (mitm) {
      this.mitm = new Mitm({
        mitmdump: o.routing.mitm.mitmdump, ip: o.resultserver.ip, confdir: o.mitmConf, analysisDir: o.analysisDir, log: o.log,
        ...(route.kind === 'inetsim' ? { mode: `reverse:https://${o.routing.inetsim!}:443` } : {})
      })
      await this.mitm.start()
      o.log(`the decrypting proxy listens on ${o.resultserver.ip}:${this.mitm.port}`)
    }
    await rooter.enable(o.routing.rooter, {
      owner: o.owner,
      guest: o.guest,
      route: route.kind,
      resultserver: o.resultserver,
      ...(route.interface !== null ? { interface: route.interface } : {}),
      ...(route.kind === 'inetsim' ? { inetsim: o.routing.inetsim! } : {}),
      ...(this.mitm !== null ? { mitm: { ip: o.resultserver.ip, port: this.mitm.port, ports: o.routing.mitm.ports } } : {})
    })
    this.enabled = true
    o.log(`route ${route.name} on for ${o.guest}: ${route.description}${mitm ? '; TLS decrypted' : ''}`)
    this.watchGrant()
  }

  /** Asks for the grant's status every renewMs until the route is turned off. */
  private watchGrant(): void {
    const o = this.o
    const every = o.renewMs ?? RENEW_MS
    const lease = o.leaseMs ?? LEASE_MS
    let answered = Date.now()
    let asking = false
    const lose = (reason: string): void => {
      if (this.lost || !this.enabled) return
      this.lost = true
      this.stopWatch()
      o.log(reason)
      o.onLost(reason)
    }
    this.watch = setInterval(() => {
      if (asking) return
      asking = true
      rooter.status(o.routing.rooter, o.owner, o.guest, Math.min(10_000, every * 5)).then((routed) => {
        answered = Date.now()
        if (!routed && this.enabled) {
          lose(`the rooter no longer routes ${o.guest} (it was restarted without this run's route, or its lease lapsed): ` +
            'the analysis was stopped so that the guest never runs unrouted')
        }
      }, (err: Error) => {
        if (Date.now() - answered > lease) {
          lose(`the rooter has not answered for ${Math.round((Date.now() - answered) / 1000)} s (${err.message}): the route of ${o.guest} ` +
            'cannot be vouched for, so the analysis was stopped')
        }
      }).finally(() => { asking = false })
    }, every)
    this.watch.unref()
  }

  private stopWatch(): void {
    if (this.watch !== null) clearInterval(this.watch)
    this.watch = null
  }

  /** Turns the route off and stops the proxy; says what the route dropped. Idempotent. */
  async stop(): Promise<void> {
    try {
      this.stopWatch()
      if (this.enabled) {
        this.enabled = false
        const dropped = await rooter.disable(this.o.routing.rooter, this.o.owner, this.o.guest)
        this.o.log(`route ${this.route} off; it dropped ${dropped.packets} packets (${dropped.bytes} bytes) the guest sent where the route does not go`)
      }
    } finally {
      await this.mitm?.stop()
    }
  }
}
