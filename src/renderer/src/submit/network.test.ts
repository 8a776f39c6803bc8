// The route and decryption choice of the Submit form as pure functions: the options string it
// becomes (typed keys replaced, never twice), and a remote server's /aviary/routes answer read
// defensively. The form itself is tested against a real service in Submit.test.tsx.
import { describe, expect, it } from 'vitest'
import { DEFAULT_OPTIONS } from './options'
import { applyNetwork, isClosed, mergeOptions, networkChoice, parseOffer } from './network'
import { ROUTE_KINDS, routeKind } from '../../../shared/route-kinds'

const offer = parseOffer({
  routed: true, default: 'none',
  routes: [{ name: 'none', kind: 'none', description: 'no network' }, { name: 'drop', kind: 'drop', description: '' }, { name: 'internet', kind: 'internet', description: 'NAT' }],
  mitm: { available: true, default: false }
})

describe('network choice', () => {
  it('replaces every typed route= and mitm= with the fields\' values, once, keeping the other options in order', () => {
    expect(mergeOptions(' a=1 ,route=x,, b = 2,route=y,mitm=1,flag', [['route', 'internet']], ['route', 'mitm'])).toBe('a=1,b = 2,flag,route=internet')
    expect(mergeOptions('', [['route', 'none']])).toBe('route=none')
    // Keys are what the server reads: "Route" is another key.
    expect(mergeOptions('Route=x', [['route', 'none']])).toBe('Route=x,route=none')
  })

  it('sends the default route and the host\'s mitm default, and mitm only where there is traffic to decrypt', () => {
    if (!offer) throw new Error('offer')
    expect(applyNetwork({ ...DEFAULT_OPTIONS, options: 'mitm=1' }, offer).options).toBe('route=none')
    expect(applyNetwork({ ...DEFAULT_OPTIONS, route: 'internet' }, offer).options).toBe('route=internet,mitm=0')
    expect(applyNetwork({ ...DEFAULT_OPTIONS, route: 'internet', mitm: true }, offer).options).toBe('route=internet,mitm=1')
    expect(applyNetwork({ ...DEFAULT_OPTIONS, route: 'drop', mitm: true }, offer).options).toBe('route=drop')
    // A route the connection does not offer (chosen on another connection): its default.
    expect(networkChoice({ route: 'vpn0', mitm: null }, offer).route.name).toBe('none')
    // No offer (Cuckoo, no routing): the options as typed, untouched.
    expect(applyNetwork({ ...DEFAULT_OPTIONS, options: ' route=x ' }, null).options).toBe(' route=x ')
  })

  it('reads a remote answer defensively', () => {
    expect(parseOffer({ routed: false, default: null, routes: [], mitm: { available: false, default: false } })).toBeNull()
    expect(parseOffer('not json')).toBeNull()
    expect(parseOffer({ routed: true, routes: [{ name: 'a,b=c' }, { name: '' }, 3] })).toBeNull()
    const odd = parseOffer({ routed: true, default: 'gone', routes: [{ name: 'vpn0', kind: 5, description: 'via \u202Etun0' }, { name: 'vpn0' }], mitm: 'yes' })
    expect(odd).toEqual({ routes: [{ name: 'vpn0', kind: '', description: 'via [RLO]tun0' }], default: 'vpn0', mitm: { available: false, default: false } })
  })
})

describe('closed routes', () => {
  it('follow the route kinds table, and a kind this UI does not know by its name', () => {
    for (const kind of ROUTE_KINDS) expect(isClosed({ name: `r-${kind}`, kind })).toBe(routeKind(kind).closed)
    expect(isClosed({ name: 'none', kind: 'tor' })).toBe(true)
    expect(isClosed({ name: 'tor1', kind: 'tor' })).toBe(false)
  })
})
