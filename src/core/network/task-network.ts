// The network of one run: its route turned on through the rooter before the machine starts (the
// guest never runs unrouted), the decrypting proxy started first when the task asks for it, and
// both undone after the machine stopped, with what the route dropped meanwhile.
import type { RoutingSettings } from './routing-config'
import { chooseRoute, type TaskRoute } from './task-route'
import { rooter } from './rooter-client'
import { Mitm } from './mitm'

export interface TaskNetworkOptions {
  routing: RoutingSettings
  options: string | null
  guest: string
  resultserver: { ip: string; port: number }
  /** <data>/mitm, and the task's analysis folder (the proxy writes into its mitm/). */
  mitmConf: string
  analysisDir: string
  log: (msg: string) => void
}

export class TaskNetwork {
  private mitm: Mitm | null = null
  private enabled = false
  readonly choice: TaskRoute

  /** Throws RouteChoiceError when the task's route is not offered (any more). */
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
      guest: o.guest,
      route: route.kind,
      resultserver: o.resultserver,
      ...(route.interface !== null ? { interface: route.interface } : {}),
      ...(route.kind === 'inetsim' ? { inetsim: o.routing.inetsim! } : {}),
      ...(this.mitm !== null ? { mitm: { ip: o.resultserver.ip, port: this.mitm.port, ports: o.routing.mitm.ports } } : {})
    })
    this.enabled = true
    o.log(`route ${route.name} on for ${o.guest}: ${route.description}${mitm ? '; TLS decrypted' : ''}`)
  }

  /** Turns the route off and stops the proxy; says what the route dropped. Idempotent. */
  async stop(): Promise<void> {
    try {
      if (this.enabled) {
        this.enabled = false
        const dropped = await rooter.disable(this.o.routing.rooter, this.o.guest)
        this.o.log(`route ${this.route} off; it dropped ${dropped.packets} packets (${dropped.bytes} bytes) the guest sent where the route does not go`)
      }
    } finally {
      await this.mitm?.stop()
    }
  }
}
