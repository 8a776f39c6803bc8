// The rooter's vocabulary: what the unprivileged service may ask of `aviary rooter`, the small
// root helper that alone touches the firewall (docs/network.md). One JSON object per line over a
// UNIX socket, one answer line per request. The rooter checks every request strictly against its
// own configuration (rooter-config.ts) and refuses anything else; the service only imports the
// types and constants from here.

export const DEFAULT_ROOTER_SOCKET = '/run/aviary/rooter.sock'

/** A request line longer than this is refused and the connection closed. */
export const MAX_REQUEST_BYTES = 4096

/**
 * The routes a task can take (adding one: docs/network.md, "Adding a route"):
 * - `none`: the guest reaches the result server (and answers its agent); everything else dropped
 * - `drop`: the same rules (Cuckoo's name for them)
 * - `internet`: out through a named interface with NAT, only to outside addresses
 * - `inetsim`: every connection and DNS query to INetSim
 * - `vpn`: as `internet`, through a VPN interface with its own routing table
 */
export const ROUTE_KINDS = ['none', 'drop', 'internet', 'inetsim', 'vpn'] as const
export type RouteKind = (typeof ROUTE_KINDS)[number]

export interface Endpoint {
  ip: string
  port: number
}

export interface EnableRequest {
  op: 'enable'
  /** The guest's IPv4 address: every rule matches only it. */
  guest: string
  route: RouteKind
  /** The host's result server the guest may reach. */
  resultserver: Endpoint
  /** internet, vpn: the interface out. */
  interface?: string
  /** inetsim: where INetSim answers (must be the rooter's own INetSim address). */
  inetsim?: string
  /** Decrypting proxy (internet, vpn, inetsim): the guest's TCP to `ports` goes to it. */
  mitm?: Endpoint & { ports: number[] }
}

export type RooterRequest =
  | { op: 'ping' }
  | EnableRequest
  | { op: 'disable'; guest: string }
  | { op: 'flush' }

/** What the rooter can do, from its configuration: the service offers only these routes. */
export interface RooterAbilities {
  version: string
  routes: RouteKind[]
  interfaces: string[]
  vpn: string[]
  inetsim: string | null
  /** net.ipv4.ip_forward is on (the internet and vpn routes need it). */
  forwarding: boolean
}

/** Packets the route dropped while it was on, read when it is turned off. */
export interface DropCounts {
  packets: number
  bytes: number
}

export type RooterAnswer =
  | { ok: true; abilities?: RooterAbilities; dropped?: DropCounts }
  | { ok: false; error: string }
