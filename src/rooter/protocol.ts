// The rooter's vocabulary: what the unprivileged service may ask of `aviary rooter`, the small
// root helper that alone touches the firewall (docs/network.md). One JSON object per line over a
// UNIX socket, one answer line per request. The rooter checks every request strictly against its
// own configuration (rooter-config.ts) and refuses anything else; the service only imports the
// types and constants from here.
//
// Grants: a route turned on for a guest is a grant held by one service (its `owner`, a stable id
// of its data folder). Only its owner renews, reads or removes it; a service that starts clears
// its own grants and no other's. Grants are kept in the rooter's state file and put back when the
// rooter restarts. A grant its owner stops renewing (a service killed with its VM still running)
// lapses after LEASE_MS.

export const DEFAULT_ROOTER_SOCKET = '/run/aviary/rooter.sock'

/** The vocabulary's version: 2 added owners, status and leases. */
export const ROOTER_VERSION = '2'

/** A request line longer than this is refused and the connection closed. */
export const MAX_REQUEST_BYTES = 4096

/** A grant not renewed (`status`) for this long is removed by the rooter. */
export const LEASE_MS = 60_000
/** How often a running task asks for its grant's status (and so renews it). */
export const RENEW_MS = 2_000

/** An owner id: 32 lower-case hex digits. */
export const OWNER_PATTERN = '^[0-9a-f]{32}$'

/**
 * The routes a task can take and what each can do: the table in src/shared/route-kinds.ts, the one
 * file of Aviary the rooter imports (adding a kind: docs/network.md, "Adding a route").
 */
import { ROUTE_KINDS, routeKind, type RouteKind } from '../shared/route-kinds'
export { ROUTE_KINDS, routeKind, type RouteKind }

export interface Endpoint {
  ip: string
  port: number
}

export interface EnableRequest {
  op: 'enable'
  /** The service asking: only it may renew, read or remove the grant. */
  owner: string
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
  | { op: 'disable'; owner: string; guest: string }
  | { op: 'status'; owner: string; guest: string }
  | { op: 'flush'; owner: string }

/** A network interface that carries a guest network: the base policy denies what comes from it. */
export interface GuestInterface {
  name: string
  /** It has IPv6 (an address, link-local included): the rooter drops that traffic, but IPv6 should be off. */
  ipv6: boolean
}

/** What the rooter can do, from its configuration: the service offers only these routes. */
export interface RooterAbilities {
  version: string
  routes: RouteKind[]
  interfaces: string[]
  vpn: string[]
  inetsim: string | null
  /** net.ipv4.ip_forward is on (the internet and vpn routes need it). */
  forwarding: boolean
  /** The configured guest networks (CIDR), denied by default. */
  guestNetworks: string[]
  /** The host's interfaces on those networks. */
  guestInterfaces: GuestInterface[]
}

/** Packets the route dropped while it was on, read when it is turned off. */
export interface DropCounts {
  packets: number
  bytes: number
}

export type RooterAnswer =
  | { ok: true; abilities?: RooterAbilities; dropped?: DropCounts; routed?: boolean; cleared?: number }
  | { ok: false; error: string }
