// The `routing` section of machines.json (docs/network.md): which routes this host offers, the
// default one, where the rooter listens, and the decrypting proxy. Without the section Aviary
// routes nothing (as before: a guest's traffic goes wherever its network sends it, and `aviary
// doctor` says so); a new install's machines.json has it, with `none` as the default.
import { isIPv4 } from 'node:net'
import { Type, type Static } from 'typebox'
import { DEFAULT_ROOTER_SOCKET, type RouteKind } from '../../rooter/protocol'

const Iface = Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,15}$' })
const RouteName = Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,31}$' })

export const RoutingSection = Type.Object({
  default: Type.Optional(RouteName),
  rooter: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  internet: Type.Optional(Type.Object({ interface: Iface }, { additionalProperties: false })),
  inetsim: Type.Optional(Type.Object({ ip: Type.String() }, { additionalProperties: false })),
  vpn: Type.Optional(Type.Array(Type.Object({ name: RouteName, interface: Iface }, { additionalProperties: false }))),
  mitm: Type.Optional(Type.Object({
    default: Type.Optional(Type.Boolean()),
    mitmdump: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    ports: Type.Optional(Type.Array(Type.Integer({ minimum: 1, maximum: 65535 }), { minItems: 1, maxItems: 16 }))
  }, { additionalProperties: false }))
}, { additionalProperties: false })
export type RoutingSection = Static<typeof RoutingSection>

/** A route the host offers: its name (what a task's `route` says) and how the rooter builds it. */
export interface RouteOffer {
  name: string
  /** The rooter's kind of route (rooter/protocol.ts); adding one: docs/network.md, "Adding a route". */
  kind: RouteKind
  interface: string | null
  description: string
}

export interface RoutingSettings {
  default: string
  rooter: string
  routes: RouteOffer[]
  inetsim: string | null
  mitm: { default: boolean; mitmdump: string; ports: number[] }
}

export class RoutingConfigError extends Error {}

export function parseRouting(r: RoutingSection | undefined): RoutingSettings | null {
  if (r === undefined) return null
  const routes: RouteOffer[] = [
    { name: 'none', kind: 'none', interface: null, description: 'no network: only the result server and the agent' },
    { name: 'drop', kind: 'drop', interface: null, description: 'the same as none (Cuckoo\'s name)' }
  ]
  if (r.internet) routes.push({ name: 'internet', kind: 'internet', interface: r.internet.interface, description: `the internet through ${r.internet.interface}, with NAT, outside addresses only` })
  if (r.inetsim) {
    if (!isIPv4(r.inetsim.ip)) throw new RoutingConfigError(`machines.json: routing.inetsim.ip: '${r.inetsim.ip}' is not an IPv4 address`)
    routes.push({ name: 'inetsim', kind: 'inetsim', interface: null, description: `a fake internet: INetSim on ${r.inetsim.ip}` })
  }
  for (const [i, v] of (r.vpn ?? []).entries()) {
    if (routes.some((x) => x.name === v.name)) throw new RoutingConfigError(`machines.json: routing.vpn.${i}.name: '${v.name}' is the name of another route`)
    routes.push({ name: v.name, kind: 'vpn', interface: v.interface, description: `the VPN through ${v.interface}` })
  }
  const dflt = r.default ?? 'none'
  if (!routes.some((x) => x.name === dflt)) {
    throw new RoutingConfigError(`machines.json: routing.default: '${dflt}' is not a route of this host (${routes.map((x) => x.name).join(', ')})`)
  }
  return {
    default: dflt,
    rooter: r.rooter ?? DEFAULT_ROOTER_SOCKET,
    routes,
    inetsim: r.inetsim?.ip ?? null,
    mitm: { default: r.mitm?.default ?? false, mitmdump: r.mitm?.mitmdump ?? 'mitmdump', ports: r.mitm?.ports ?? [443] }
  }
}
