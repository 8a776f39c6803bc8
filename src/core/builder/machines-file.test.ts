// Registering built machines in machines.json: what the user wrote stays, the service's own parser
// accepts the result, a routing section appears when there was none, names and addresses are not
// taken twice, and removing a build's machines leaves the others.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadFleetConfig } from '../machinery/machines-config'
import { addMachines, removeMachines, type MachineEntry } from './machines-file'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})
const fileWith = (content: unknown): string => {
  const d = mkdtempSync(path.join(tmpdir(), 'aviary-mf-'))
  dirs.push(d)
  const f = path.join(d, 'machines.json')
  if (content !== undefined) writeFileSync(f, JSON.stringify(content))
  return f
}
const entry = (name: string, ip: string): MachineEntry => ({
  name, label: `avlx-${name}`, platform: 'linux', ip, snapshot: 'clean', interface: `avlx-t${ip.split('.')[3]}`, resultserver_ip: '10.216.0.1', driver: 'kvm', tags: ['debian']
})

describe('machines.json', () => {
  it('keeps what the user wrote and adds the machines, which the service then reads', () => {
    const f = fileWith({ driver: 'virtualbox', timeouts: { default: 30 }, routing: { default: 'drop' }, machines: [{ name: 'win', ip: '192.168.56.101' }] })
    expect(addMachines(f, [entry('lx', '10.216.0.101')])).toEqual({ addedRouting: false })
    const raw = JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>
    expect(raw).toMatchObject({ driver: 'virtualbox', timeouts: { default: 30 }, routing: { default: 'drop' } })
    const fleet = loadFleetConfig(f)
    expect(fleet.machines.map((m) => [m.name, m.driver, m.platform, m.snapshot, m.interface, m.resultserver_ip])).toEqual([
      ['win', 'virtualbox', 'windows', null, null, '192.168.122.1'],
      ['lx', 'kvm', 'linux', 'clean', 'avlx-t101', '10.216.0.1']
    ])
  })

  it('gets routing {default: none} when it had none, and is made when there is no file', () => {
    const f = fileWith({ machines: [] })
    expect(addMachines(f, [entry('lx', '10.216.0.101')]).addedRouting).toBe(true)
    expect(loadFleetConfig(f).settings.routing?.default).toBe('none')
    const none = fileWith(undefined)
    addMachines(none, [entry('lx', '10.216.0.101')])
    expect(loadFleetConfig(none).machines).toHaveLength(1)
  })

  it('refuses a name or an address taken meanwhile, and a file the service would refuse, changing nothing', () => {
    const f = fileWith({ machines: [{ name: 'lx', ip: '10.216.0.9' }] })
    const before = readFileSync(f, 'utf8')
    expect(() => addMachines(f, [entry('lx', '10.216.0.101')])).toThrow(/has a machine 'lx' already/)
    expect(() => addMachines(f, [entry('other', '10.216.0.9')])).toThrow(/gave 10\.216\.0\.9 to 'lx'/)
    const bad = fileWith({ machines: [{ name: 'x', ip: 'nope' }] })
    expect(() => addMachines(bad, [entry('lx', '10.216.0.101')])).toThrow(/machines\.0\.ip: 'nope' is not an IP address/)
    expect(readFileSync(f, 'utf8')).toBe(before)
  })

  it("removes a build's machines and no other", () => {
    const f = fileWith({ machines: [{ name: 'win', ip: '192.168.56.101' }] })
    addMachines(f, [entry('a', '10.216.0.101'), entry('b', '10.216.0.102')])
    removeMachines(f, ['a', 'b'])
    expect(loadFleetConfig(f).machines.map((m) => m.name)).toEqual(['win'])
  })
})
