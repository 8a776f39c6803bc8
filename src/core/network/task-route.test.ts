// Which route a task takes, and what a submission is refused for: the options Cuckoo carries
// (route=<name>), Aviary's mitm=1, the host's default, and the routing section's own checks.
import { describe, expect, it } from 'vitest'
import { parseRouting, RoutingConfigError } from './routing-config'
import { chooseRoute, RouteChoiceError } from './task-route'

const routing = parseRouting({ default: 'none', internet: { interface: 'eth0' }, inetsim: { ip: '192.168.122.1' }, vpn: [{ name: 'vpn0', interface: 'tun0' }] })!

describe('the routes of machines.json', () => {
  it('offers none and drop always, and what is configured, in order', () => {
    expect(routing.routes.map((r) => `${r.name}:${r.kind}`)).toEqual(['none:none', 'drop:drop', 'internet:internet', 'inetsim:inetsim', 'vpn0:vpn'])
    expect(parseRouting(undefined)).toBeNull()
    expect(parseRouting({})!.default).toBe('none')
  })

  it('refuses a default it does not offer, a VPN named like a route, a bad INetSim address', () => {
    expect(() => parseRouting({ default: 'internet' })).toThrow(RoutingConfigError)
    expect(() => parseRouting({ default: 'internet' })).toThrow(/routing\.default: 'internet' is not a route of this host \(none, drop\)/)
    expect(() => parseRouting({ vpn: [{ name: 'drop', interface: 'tun0' }] })).toThrow(/routing\.vpn\.0\.name: 'drop' is the name of another route/)
    expect(() => parseRouting({ inetsim: { ip: 'localhost' } })).toThrow(/routing\.inetsim\.ip/)
  })
})

describe('a task\'s route', () => {
  it('is route=<name> of its options, else the default; mitm=1 asks for the proxy', () => {
    expect(chooseRoute(null, routing)).toMatchObject({ route: { name: 'none' }, mitm: false })
    expect(chooseRoute('free=yes,route=internet', routing)).toMatchObject({ route: { name: 'internet', interface: 'eth0' }, mitm: false })
    expect(chooseRoute('route=vpn0,mitm=1', routing)).toMatchObject({ route: { name: 'vpn0', kind: 'vpn' }, mitm: true })
    expect(chooseRoute('route=inetsim,mitm=yes', routing)?.mitm).toBe(true)
  })

  it('is refused, naming what the host offers, when unknown or not offered; mitm needs traffic', () => {
    expect(() => chooseRoute('route=tor', routing)).toThrow("route 'tor' is not available on this host; available: none, drop, internet, inetsim, vpn0")
    expect(() => chooseRoute('route=none,mitm=1', routing)).toThrow(/mitm=1 needs a route with traffic to decrypt/)
    expect(() => chooseRoute('route=internet,mitm=maybe', routing)).toThrow(RouteChoiceError)
  })

  it('on a host that routes nothing: no route, except Cuckoo\'s none (which meant exactly that)', () => {
    expect(chooseRoute(null, null)).toBeNull()
    expect(chooseRoute('route=none', null)).toBeNull()
    expect(() => chooseRoute('route=internet', null)).toThrow(/this host routes no task/)
    expect(() => chooseRoute('mitm=1', null)).toThrow(/this host routes no task/)
    expect(chooseRoute('mitm=0', null)).toBeNull()
  })

  it('the proxy by default, where routing.mitm.default says so, but never on none', () => {
    const r = parseRouting({ internet: { interface: 'eth0' }, mitm: { default: true } })!
    expect(chooseRoute('route=internet', r)?.mitm).toBe(true)
    expect(chooseRoute('route=internet,mitm=0', r)?.mitm).toBe(false)
    expect(chooseRoute(null, r)?.mitm).toBe(false)
  })
})
