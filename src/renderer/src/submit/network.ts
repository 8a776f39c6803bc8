// The network route and HTTPS decryption of a submission (GET /aviary/routes of the connection),
// and how the form's choice goes into Cuckoo's `options` string (route=<name>, mitm=1|0). A server
// without the route (a remote Cuckoo or a dispatcher: 404) or a host that routes nothing
// (`routed: false`) offers no choice: the form then shows no field and adds nothing.
import { useQuery, type UseQueryResult } from '@tanstack/react-query'
import { Type } from 'typebox'
import type { RoutesAnswer } from '../../../shared/api/ui-schemas'
import { fetchJson, HttpError, type ConnectionId } from '../api/http'
import { keys } from '../api/live'
import { useIsAviary } from '../api/server-kind'
import { splitInvisible } from '../format'
import { isRouteKind, routeKind } from '../../../shared/route-kinds'
import type { SubmitOptions } from './options'

export type RouteOffer = RoutesAnswer['routes'][number]

/** What a connection offers; null when it offers no choice. */
export interface NetworkOffer {
  routes: RouteOffer[]
  default: string
  mitm: { available: boolean; default: boolean }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const text = (v: unknown): string => (typeof v === 'string' ? v : '')
/** Plain text for an <option> (which cannot hold SafeText): invisible characters named, never applied. */
const visible = (s: string): string => splitInvisible(s).map((p) => ('text' in p ? p.text : `[${p.control}]`)).join('')
/** Names the server accepts in route=<name> (docs/network.md); anything else would break the options string. */
const ROUTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

/** The answer of /aviary/routes read defensively (a remote server's answer is not trusted). */
export function parseOffer(body: unknown): NetworkOffer | null {
  if (!isObj(body) || body.routed !== true || !Array.isArray(body.routes)) return null
  const routes: RouteOffer[] = []
  for (const r of body.routes.slice(0, 200)) {
    if (!isObj(r) || !ROUTE_NAME.test(text(r.name)) || routes.some((x) => x.name === r.name)) continue
    routes.push({ name: text(r.name), kind: text(r.kind), description: visible(text(r.description).slice(0, 300)) })
  }
  if (routes.length === 0) return null
  const dflt = routes.some((r) => r.name === body.default) ? text(body.default) : (routes[0] as RouteOffer).name
  const mitm = isObj(body.mitm) ? body.mitm : {}
  return { routes, default: dflt, mitm: { available: mitm.available === true, default: mitm.default === true } }
}

export async function fetchOffer(connection: ConnectionId, signal?: AbortSignal): Promise<NetworkOffer | null> {
  try {
    // Not checked against RoutesAnswer: parseOffer keeps the routes that can be offered and drops the rest.
    return parseOffer(await fetchJson(connection, '/aviary/routes', Type.Unknown(), {}, signal))
  } catch (err) {
    // Not an Aviary (Cuckoo, a dispatcher): no routes to choose, and nothing to report.
    if (err instanceof HttpError && (err.status === 404 || err.status === 405)) return null
    throw err
  }
}

/**
 * The connection's offer; while loading, or when it cannot be read, there is none (the server's
 * default applies). Asked only of an Aviary (a dispatcher or a Cuckoo server has no routes).
 */
export function useNetworkOffer(connection: ConnectionId): UseQueryResult<NetworkOffer | null> {
  const aviary = useIsAviary(connection)
  return useQuery({
    queryKey: keys.routes(connection),
    queryFn: ({ signal }) => fetchOffer(connection, signal),
    enabled: aviary === true,
    staleTime: 30_000,
    retry: false
  })
}

/**
 * Routes with no traffic leaving the guest: nothing for the proxy to decrypt. The kind's
 * capabilities say (shared/route-kinds.ts); a kind this UI does not know (a newer server) is
 * judged by its name, closed when it is named as a closed kind.
 */
export const isClosed = (r: Pick<RouteOffer, 'name' | 'kind'>): boolean =>
  isRouteKind(r.kind) ? routeKind(r.kind).closed : isRouteKind(r.name) && routeKind(r.name).closed

export interface NetworkChoice {
  route: RouteOffer
  /** Whether the checkbox is shown (some route can be decrypted). */
  mitmOffered: boolean
  /** Why the checkbox is disabled for this route, or null when it is enabled. */
  mitmBlocked: string | null
  mitm: boolean
}

/** What the form shows for these options on this offer: the route picked (else the host's default), decryption as picked (else the host's default). */
export function networkChoice(o: Pick<SubmitOptions, 'route' | 'mitm'>, offer: NetworkOffer): NetworkChoice {
  const route = offer.routes.find((r) => r.name === o.route) ?? offer.routes.find((r) => r.name === offer.default) ?? (offer.routes[0] as RouteOffer)
  const blocked = isClosed(route) ? `Nothing to decrypt: the route '${route.name}' lets no traffic out of the guest.` : null
  return {
    route,
    mitmOffered: offer.mitm.available,
    mitmBlocked: blocked,
    mitm: offer.mitm.available && blocked === null && (o.mitm ?? offer.mitm.default)
  }
}

/** The key of one piece of an options string ("a=b" → "a"). */
const keyOf = (piece: string): string => {
  const eq = piece.indexOf('=')
  return (eq < 0 ? piece : piece.slice(0, eq)).trim()
}

/** Keys of the typed options string that `merge` would replace. */
export function replacedKeys(typed: string, names: readonly string[]): string[] {
  return [...new Set(typed.split(',').map(keyOf).filter((k) => names.includes(k)))]
}

/**
 * The typed options with the keys of `set` and `drop` taken out (wherever and however often they
 * were typed) and `set` added once each at the end; the other pieces are kept in order.
 */
export function mergeOptions(typed: string, set: [string, string][], drop: readonly string[] = []): string {
  const names = new Set([...set.map(([k]) => k), ...drop])
  const kept = typed.split(',').map((p) => p.trim()).filter((p) => p !== '' && !names.has(keyOf(p)))
  return [...kept, ...set.map(([k, v]) => `${k}=${v}`)].join(',')
}

/** The option keys the form owns when the connection offers routes. */
export const NETWORK_KEYS = ['route', 'mitm'] as const

/**
 * The options as submitted: with an offer, the route chosen (always named, so a later change of
 * the host's default does not change this task) and, where the route can be decrypted, mitm=1
 * or mitm=0; whatever route= or mitm= the options field held is replaced (the fields win).
 * Without an offer, the options are sent as typed.
 */
export function applyNetwork(o: SubmitOptions, offer: NetworkOffer | null | undefined): SubmitOptions {
  if (!offer) return applyInteractive(o)
  const c = networkChoice(o, offer)
  const set: [string, string][] = [['route', c.route.name]]
  // A closed route is never decrypted (and mitm=1 there is refused): no mitm= at all.
  if (c.mitmOffered && c.mitmBlocked === null) set.push(['mitm', c.mitm ? '1' : '0'])
  return applyInteractive({ ...o, options: mergeOptions(o.options, set, NETWORK_KEYS) })
}

/** The Interactive switch as `interactive=1` in options (typed as such, it is kept either way). */
export function applyInteractive(o: SubmitOptions): SubmitOptions {
  return o.interactive ? { ...o, options: mergeOptions(o.options, [['interactive', '1']]) } : o
}
