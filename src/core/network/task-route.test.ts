// Which route a task takes, and what a submission is refused for: the options Cuckoo carries
// (route=<name>), Aviary's mitm=1, the host's default, the fallback to none for a route the host
// does not offer, and the routing section's own checks.
import { describe, expect, it } from 'vitest'
import { parseRouting, RoutingConfigError } from './routing-config'
import { chooseRoute, RouteChoiceError, unroutedNote } from './task-route'

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

  it('runs on none when the route is not offered, saying why: Cuckoo\'s fallback, in the safe direction', () => {
    const tor = chooseRoute('route=tor', routing)!
    expect(tor).toMatchObject({ route: { name: 'none', kind: 'none' }, mitm: false, mitmDropped: null })
    expect(tor.fallback).toBe("route 'tor' is not offered by this host (it offers none, drop, internet, inetsim, vpn0): " +
      "the analysis runs on route none instead, which lets no traffic out (Cuckoo's fallback)")
    // FAME's default on a host without internet; an empty name is no route either
    const noInternet = parseRouting({ inetsim: { ip: '192.168.122.1' } })!
    expect(chooseRoute('route=internet', noInternet)).toMatchObject({ route: { name: 'none' }, fallback: expect.stringMatching(/^route 'internet' is not offered/) })
    expect(chooseRoute('route=', routing)?.route.name).toBe('none')
    // never towards the default: a host whose default lets traffic out still falls back to none
    const open = parseRouting({ default: 'internet', internet: { interface: 'eth0' } })!
    expect(chooseRoute('route=vpn9', open)?.route.name).toBe('none')
    expect(chooseRoute(null, open)).toMatchObject({ route: { name: 'internet' }, fallback: null })
    // what is offered runs as asked, with nothing to say
    expect(chooseRoute('route=drop', routing)).toMatchObject({ route: { name: 'drop' }, fallback: null, mitmDropped: null })
  })

  it('drops mitm=1 with its own reason when the route fell back; refuses it on a route asked for as closed', () => {
    expect(chooseRoute('route=tor,mitm=1', routing)).toMatchObject({
      route: { name: 'none' }, mitm: false, fallback: expect.stringMatching(/^route 'tor' is not offered/),
      mitmDropped: "mitm=1 dropped: route 'tor' fell back to none, which lets no traffic out to decrypt"
    })
    // a proxy by default is not asked for: nothing to say when it cannot run
    const r = parseRouting({ mitm: { default: true } })!
    expect(chooseRoute('route=internet', r)).toMatchObject({ route: { name: 'none' }, mitm: false, mitmDropped: null })
    expect(() => chooseRoute('route=none,mitm=1', routing)).toThrow(/mitm=1 needs a route with traffic to decrypt/)
    expect(() => chooseRoute('route=tor,mitm=maybe', routing)).toThrow(RouteChoiceError)
    expect(() => chooseRoute('route=internet,mitm=maybe', routing)).toThrow("mitm 'maybe' is not one of 1/0, true/false, yes/no, on/off")
  })

  it('on a host that routes nothing: none and internet run unrouted; containment, disguise and mitm are refused', () => {
    expect(chooseRoute(null, null)).toBeNull()
    expect(chooseRoute('route=none', null)).toBeNull()
    expect(unroutedNote('route=none')).toBeNull()
    expect(unroutedNote('free=yes')).toBeNull()
    expect(chooseRoute('route=internet', null)).toBeNull()
    expect(unroutedNote('route=internet')).toBe("route 'internet' is not applied: this host routes no task (machines.json has no routing " +
      "section), so the guest's traffic goes wherever its network sends it, as for every task here")
    expect(() => chooseRoute('route=drop', null)).toThrow("route 'drop' cannot be honoured: this host routes no task (machines.json has no " +
      "routing section), so every guest's traffic goes wherever its network sends it; add a routing section (docs/network.md), or submit without route=")
    for (const r of ['inetsim', 'vpn0', 'tor']) expect(() => chooseRoute(`route=${r}`, null)).toThrow(new RegExp(`^route '${r}' cannot be honoured`))
    expect(() => chooseRoute('mitm=1', null)).toThrow(/^mitm=1 cannot be honoured: this host routes no task/)
    expect(() => chooseRoute('route=internet,mitm=yes', null)).toThrow(/^mitm=1 cannot be honoured/)
    expect(() => chooseRoute('mitm=maybe', null)).toThrow(/^mitm 'maybe' is not one of/)
    expect(chooseRoute('mitm=0', null)).toBeNull()
  })

  it('the proxy by default, where routing.mitm.default says so, but never on none', () => {
    const r = parseRouting({ internet: { interface: 'eth0' }, mitm: { default: true } })!
    expect(chooseRoute('route=internet', r)?.mitm).toBe(true)
    expect(chooseRoute('route=internet,mitm=0', r)?.mitm).toBe(false)
    expect(chooseRoute(null, r)?.mitm).toBe(false)
  })
})
