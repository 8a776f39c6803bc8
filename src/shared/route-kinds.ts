// The kinds of network route a task can take, and what each can do: one table, as the machinery
// drivers declare their capabilities (src/shared/api/drivers.ts). The rooter (which applies a
// route), the service (which chooses one: core/network/task-route.ts, /aviary/routes), the doctor
// and the Submit form read it; a kind is added here first (docs/network.md, "Adding a route").
//
// This file imports nothing: the rooter, which runs as root and imports nothing else of Aviary,
// imports it (eslint.config.js), and so does the renderer.

export interface RouteKindCapabilities {
  /** No traffic leaves the guest but to the result server (and the agent's answers): nothing for the decrypting proxy to see. */
  closed: boolean
  /** The guest's traffic leaves the host through an interface (NAT, outside addresses only): needs net.ipv4.ip_forward. */
  leavesHost: boolean
  /** Which rooter option names the interface it may use (--interface, --vpn), or null: takes no interface. */
  interfaceOption: '--interface' | '--vpn' | null
  /** Answered on the host by INetSim (the rooter's --inetsim): the request carries its address. */
  inetsim: boolean
  /** Goes through its own routing table (an `ip rule` beside the nftables rules). */
  ownRoutingTable: boolean
  /**
   * On a host that routes nothing (no routing section in machines.json): 'same', the task runs as
   * asked (every task there is unrouted, as none asks); 'noted', it runs unrouted with a note (it
   * asked for more, and gets what the guest's network gives); 'refused', a 400 (it asked for
   * containment or another way out, which running unrouted would betray).
   */
  unrouted: 'same' | 'noted' | 'refused'
}

/**
 * The kinds, in the order the rooter offers them:
 * - `none`: the guest reaches the result server (and answers its agent); everything else dropped
 * - `drop`: the same rules (Cuckoo's name for them)
 * - `internet`: out through a named interface with NAT, only to outside addresses
 * - `inetsim`: every connection and DNS query to INetSim
 * - `vpn`: as `internet`, through a VPN interface with its own routing table
 */
export const ROUTE_KIND_TABLE = {
  none: { closed: true, leavesHost: false, interfaceOption: null, inetsim: false, ownRoutingTable: false, unrouted: 'same' },
  drop: { closed: true, leavesHost: false, interfaceOption: null, inetsim: false, ownRoutingTable: false, unrouted: 'refused' },
  internet: { closed: false, leavesHost: true, interfaceOption: '--interface', inetsim: false, ownRoutingTable: false, unrouted: 'noted' },
  inetsim: { closed: false, leavesHost: false, interfaceOption: null, inetsim: true, ownRoutingTable: false, unrouted: 'refused' },
  vpn: { closed: false, leavesHost: true, interfaceOption: '--vpn', inetsim: false, ownRoutingTable: true, unrouted: 'refused' }
} as const satisfies Record<string, Readonly<RouteKindCapabilities>>

export type RouteKind = keyof typeof ROUTE_KIND_TABLE
export const ROUTE_KINDS = Object.keys(ROUTE_KIND_TABLE) as RouteKind[]

export function isRouteKind(kind: string): kind is RouteKind {
  return Object.prototype.hasOwnProperty.call(ROUTE_KIND_TABLE, kind)
}

/** What a kind can do. */
export function routeKind(kind: RouteKind): Readonly<RouteKindCapabilities> {
  return ROUTE_KIND_TABLE[kind]
}
