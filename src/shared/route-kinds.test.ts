// The route kinds table against the code that acts on it: the rooter's nftables script lets a
// kind's traffic out of the host exactly when the table says it leaves the host, and to INetSim
// exactly when INetSim answers it; the service refuses mitm=1 on exactly the closed kinds (the
// Submit form's isClosed: src/renderer/src/submit/network.test.ts); a host without routing runs,
// notes or refuses each kind as its row says.
import { describe, expect, it } from 'vitest'
import { ROUTE_KIND_TABLE, ROUTE_KINDS, isRouteKind, routeKind, type RouteKind } from './route-kinds'
import { enableScript } from '../rooter/nft'
import { chooseRoute, RouteChoiceError, unroutedNote } from '../core/network/task-route'
import { parseRouting } from '../core/network/routing-config'

const routing = parseRouting({
  default: 'none',
  internet: { interface: 'eth9' },
  inetsim: { ip: '192.168.56.1' },
  vpn: [{ name: 'vpn0', interface: 'tun9' }]
})!
const offerOf = (kind: RouteKind) => routing.routes.find((r) => r.kind === kind)!

describe('route kinds', () => {
  it('lists every kind of the table, and only those', () => {
    expect(ROUTE_KINDS).toEqual(Object.keys(ROUTE_KIND_TABLE))
    expect(isRouteKind('tor')).toBe(false)
    expect(isRouteKind('toString')).toBe(false)
    // machines.json's routing can offer each kind
    expect(new Set(routing.routes.map((r) => r.kind))).toEqual(new Set(ROUTE_KINDS))
  })

  it.each(ROUTE_KINDS)('the rooter\'s rules for %s follow its row', (kind) => {
    const k = routeKind(kind)
    const offer = offerOf(kind)
    const script = enableScript({
      op: 'enable', owner: '0'.repeat(32), guest: '192.168.56.101', route: kind,
      resultserver: { ip: '192.168.56.1', port: 2042 },
      ...(offer.interface !== null ? { interface: offer.interface } : {}),
      ...(k.inetsim ? { inetsim: '192.168.56.1' } : {})
    }, ['10.0.0.0/8'])
    expect(/oifname "/.test(script)).toBe(k.leavesHost)
    expect(script.includes('ip daddr 192.168.56.1 meta l4proto')).toBe(k.inetsim)
    expect(offer.interface !== null).toBe(k.interfaceOption !== null)
  })

  it.each(ROUTE_KINDS)('mitm=1 on %s is refused exactly when the kind is closed', (kind) => {
    const name = offerOf(kind).name
    const choose = (): unknown => chooseRoute(`route=${name},mitm=1`, routing)
    if (routeKind(kind).closed) expect(choose).toThrow(RouteChoiceError)
    else expect(chooseRoute(`route=${name},mitm=1`, routing)?.mitm).toBe(true)
  })

  it.each(ROUTE_KINDS)('a host that routes nothing treats route=%s as its row says', (kind) => {
    const { unrouted } = routeKind(kind)
    const choose = (): unknown => chooseRoute(`route=${kind}`, null)
    if (unrouted === 'refused') {
      expect(choose).toThrow(RouteChoiceError)
    } else {
      expect(choose()).toBeNull()
      expect(unroutedNote(`route=${kind}`) !== null).toBe(unrouted === 'noted')
    }
  })
})
