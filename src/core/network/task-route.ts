// A task's route and proxy, from its options as Cuckoo carries them (`route=<name>`, and Aviary's
// `mitm=1`), else the configured defaults. Checked at submission (a 400 naming what this host
// offers) and again when the run starts (machines.json may have changed meanwhile).
import type { RouteOffer, RoutingSettings } from './routing-config'

export interface TaskRoute {
  route: RouteOffer
  mitm: boolean
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

/** The route and proxy of a task with these options; throws RouteChoiceError saying what is offered. */
export function chooseRoute(rawOptions: string | null, routing: RoutingSettings | null): TaskRoute | null {
  const o = options(rawOptions)
  const asked = o.get('route')
  const mitmAsked = o.get('mitm')
  if (routing === null) {
    // Cuckoo's `none` meant "no routing", which is what a host without routing does: Cuckoo
    // clients that always send it keep working there.
    if ((asked !== undefined && asked !== 'none') || (mitmAsked !== undefined && !FALSE.test(mitmAsked))) {
      throw new RouteChoiceError('this host routes no task (machines.json has no routing section; see docs/network.md)')
    }
    return null
  }
  const name = asked ?? routing.default
  const route = routing.routes.find((r) => r.name === name)
  if (route === undefined) {
    throw new RouteChoiceError(`route '${name}' is not available on this host; available: ${routing.routes.map((r) => r.name).join(', ')}`)
  }
  if (mitmAsked !== undefined && !TRUE.test(mitmAsked) && !FALSE.test(mitmAsked)) {
    throw new RouteChoiceError(`mitm '${mitmAsked}' is not one of 1/0, true/false, yes/no, on/off`)
  }
  const mitm = mitmAsked === undefined ? routing.mitm.default && route.kind !== 'none' && route.kind !== 'drop' : TRUE.test(mitmAsked)
  if (mitm && (route.kind === 'none' || route.kind === 'drop')) {
    throw new RouteChoiceError(`mitm=1 needs a route with traffic to decrypt (internet, inetsim or a VPN), not '${route.name}'`)
  }
  return { route, mitm }
}
