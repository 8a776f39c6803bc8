// A task's route and proxy, from its options as Cuckoo carries them (`route=<name>`, and Aviary's
// `mitm=1`), else the configured defaults. Checked at submission (a 400 for what cannot be honoured)
// and decided again when the run starts (machines.json may have changed meanwhile), as Cuckoo
// 2.0.7's route_network does.
//
// A route this host does not offer runs on `none`, the most contained route, with the reason kept:
// Cuckoo ran such a task on its `none` with a warning, and its clients (FAME sends route=internet
// by default) expect a task id, not a refusal. Falling back to `none` only ever gives the sample
// less than it asked for. What is refused is a request the host cannot honour in the safe
// direction: containment or disguise (`drop`, INetSim, a VPN) on a host that routes nothing, and
// HTTPS decryption where no proxy can run.
import type { RouteOffer, RoutingSettings } from './routing-config'
import { isRouteKind, routeKind } from '../../shared/route-kinds'

export interface TaskRoute {
  route: RouteOffer
  mitm: boolean
  /** Why the task runs on another route than it asked for (a route not offered here), or null. */
  fallback: string | null
  /** Why mitm=1 was not honoured (its route fell back to one with no traffic to decrypt), or null. */
  mitmDropped: string | null
}

export class RouteChoiceError extends Error {}

function options(raw: string | null): Map<string, string> {
  const out = new Map<string, string>()
  for (const piece of (raw ?? '').split(',')) {
    const eq = piece.indexOf('=')
    if (eq > 0) out.set(piece.slice(0, eq).trim(), piece.slice(eq + 1).trim())
  }
  return out
}

const TRUE = /^(1|yes|true|on)$/i
const FALSE = /^(0|no|false|off)?$/i
const closed = (r: RouteOffer): boolean => routeKind(r.kind).closed

function mitmAsked(o: Map<string, string>): boolean | undefined {
  const v = o.get('mitm')
  if (v === undefined) return undefined
  if (!TRUE.test(v) && !FALSE.test(v)) throw new RouteChoiceError(`mitm '${v}' is not one of 1/0, true/false, yes/no, on/off`)
  return TRUE.test(v)
}

/**
 * The route and proxy of a task with these options; null on a host without routing (nothing is
 * routed there). Throws RouteChoiceError, saying why, for what cannot be honoured.
 */
export function chooseRoute(rawOptions: string | null, routing: RoutingSettings | null): TaskRoute | null {
  const o = options(rawOptions)
  const asked = o.get('route')
  const mitm = mitmAsked(o)
  if (routing === null) {
    if (mitm === true) {
      throw new RouteChoiceError('mitm=1 cannot be honoured: this host routes no task (machines.json has no routing section), so no proxy can ' +
        'see the guest\'s traffic; see docs/network.md')
    }
    // The kind's `unrouted` (shared/route-kinds.ts): Cuckoo's `none` meant "no routing", what
    // every task here gets; `internet` asks for the open route and runs unrouted with a note
    // (unroutedNote). Anything else asks for less than an unrouted guest has (drop, a fake
    // internet) or for another way out (a VPN), which running unrouted would betray. A name that
    // is no kind is refused too: there is no route to fall back from.
    if (asked !== undefined && !(isRouteKind(asked) && routeKind(asked).unrouted !== 'refused')) {
      throw new RouteChoiceError(`route '${asked}' cannot be honoured: this host routes no task (machines.json has no routing section), so ` +
        'every guest\'s traffic goes wherever its network sends it; add a routing section (docs/network.md), or submit without route=')
    }
    return null
  }
  const name = asked ?? routing.default
  const offered = routing.routes.find((r) => r.name === name)
  const route = offered ?? routing.routes.find((r) => r.kind === 'none')!
  const fallback = offered !== undefined ? null
    : `route '${name}' is not offered by this host (it offers ${routing.routes.map((r) => r.name).join(', ')}): ` +
      `the analysis runs on route ${route.name} instead, which lets no traffic out (Cuckoo's fallback)`
  if (mitm === true && closed(route)) {
    if (fallback === null) throw new RouteChoiceError(`mitm=1 needs a route with traffic to decrypt (internet, inetsim or a VPN), not '${route.name}'`)
    return { route, mitm: false, fallback, mitmDropped: `mitm=1 dropped: route '${name}' fell back to ${route.name}, which lets no traffic out to decrypt` }
  }
  return { route, mitm: mitm ?? (routing.mitm.default && !closed(route)), fallback, mitmDropped: null }
}

/**
 * On a host without routing: why a task's route=<name> is not applied (the task runs unrouted, as
 * every task there does), or null when it asked for none. Only for options chooseRoute accepts.
 */
export function unroutedNote(rawOptions: string | null): string | null {
  const asked = options(rawOptions).get('route')
  if (asked === undefined || (isRouteKind(asked) && routeKind(asked).unrouted === 'same')) return null
  return `route '${asked}' is not applied: this host routes no task (machines.json has no routing section), so the guest's traffic ` +
    'goes wherever its network sends it, as for every task here'
}
