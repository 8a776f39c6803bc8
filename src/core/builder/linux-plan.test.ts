// The request of `aviary machines create linux` (each refusal names its field) and the plan it
// becomes: free addresses of the network, MACs and taps derived from them, names with --count.
import { describe, expect, it } from 'vitest'
import { BuildInputError, checkLinuxRequest, planMachines } from './linux-plan'

const net = { name: 'avlx', bridge: 'avlx-br0', hostIp: '10.216.0.1', prefix: 24, forward: 'open' }

describe('the request', () => {
  it('has defaults: one machine `linux` of 1 GiB on the network aviary', () => {
    expect(checkLinuxRequest({})).toEqual({ names: ['linux'], memoryMiB: 1024, vcpus: null, network: 'aviary', rebuild: false, refresh: false })
    expect(checkLinuxRequest({ name: 'deb', count: 3, refresh: true }).names).toEqual(['deb-1', 'deb-2', 'deb-3'])
    expect(checkLinuxRequest({ refresh: true }).rebuild).toBe(true)
  })

  it.each([
    [{ name: '../etc' }, 'name'], [{ name: '' }, 'name'], [{ name: '-x' }, 'name'], [{ name: 'a'.repeat(49) }, 'name'], [{ name: 'x y' }, 'name'],
    [{ count: 0 }, 'count'], [{ count: 33 }, 'count'], [{ count: 1.5 }, 'count'],
    [{ memoryMiB: 100 }, 'memory'], [{ memoryMiB: 70000 }, 'memory'],
    [{ vcpus: 0 }, 'vcpus'], [{ network: 'Aviary' }, 'network'], [{ network: 'averylongnet' }, 'network'], [{ network: "a'b" }, 'network']
  ])('refuses %j, naming %s', (req, field) => {
    let caught: unknown
    try {
      checkLinuxRequest(req)
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(BuildInputError)
    expect((caught as BuildInputError).field).toBe(field)
    expect((caught as Error).message.startsWith(`${field}: `)).toBe(true)
  })
})

describe('the plan', () => {
  it('takes free addresses from .101 on, skipping used ones, with MACs and taps made of them', () => {
    const plan = planMachines(checkLinuxRequest({ name: 'lx', count: 3, network: 'avlx' }), net, new Set(['10.216.0.102']))
    expect(plan).toEqual([
      { name: 'lx-1', label: 'avlx-lx-1', ip: '10.216.0.101', mac: '52:54:00:d8:00:65', tap: 'avlx-t65' },
      { name: 'lx-2', label: 'avlx-lx-2', ip: '10.216.0.103', mac: '52:54:00:d8:00:67', tap: 'avlx-t67' },
      { name: 'lx-3', label: 'avlx-lx-3', ip: '10.216.0.104', mac: '52:54:00:d8:00:68', tap: 'avlx-t68' }
    ])
    for (const m of plan) expect(m.tap.length).toBeLessThanOrEqual(15)
  })

  it('on a small network starts after the host, and on a /16 keeps taps within 15 characters', () => {
    const small = planMachines(checkLinuxRequest({ network: 'avlx' }), { ...net, hostIp: '10.216.0.17', prefix: 28 }, new Set())
    expect(small[0]!.ip).toBe('10.216.0.18')
    const big = planMachines(checkLinuxRequest({ network: 'aviarynet' }), { ...net, hostIp: '10.80.0.1', prefix: 16 }, new Set())
    expect(big[0]).toMatchObject({ ip: '10.80.0.101', tap: 'aviarynet-t65' })
    expect(big[0]!.tap.length).toBeLessThanOrEqual(15)
  })

  it('says when the network has too few free addresses', () => {
    const used = new Set(Array.from({ length: 14 }, (_, i) => `10.216.0.${18 + i}`).slice(0, 12))
    expect(() => planMachines(checkLinuxRequest({ count: 2, network: 'avlx' }), { ...net, hostIp: '10.216.0.17', prefix: 28 }, used))
      .toThrow(/count: the network avlx \(10\.216\.0\.16\/28\) has 1 free addresses left, not 2/)
  })
})
