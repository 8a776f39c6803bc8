// Machine controls on a real service whose engine drives a VM on libvirt's test hypervisor (as the
// kvm contract tests do: a domain of our own with a running snapshot `clean`), next to a physical
// machine, which has neither snapshots nor screenshots.
import type { Hypervisor } from '@unraid/libvirt'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import sharp from 'sharp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureLibvirtd } from '../../../../test/fixtures/libvirtd'
import { startHarness, type Harness } from '../../../../test/service-harness'
import type { DoctorAnswer, MachineAnswer } from '../../../shared/api/ui-schemas'

const run = promisify(execFile)
const URI = 'test+unix:///default'
const DOMAIN = 'avh2a-machines'
const virsh = async (...args: string[]) => (await run('virsh', ['-q', '-c', URI, ...args])).stdout.trim()

const fleet = {
  driver: 'kvm', kvm: { uri: URI }, resultserver: { ip: '127.0.0.1', port: 0 },
  timeouts: { vm_state: 2, critical: 1 },
  machines: [
    { name: 'vm1', label: DOMAIN, ip: '192.0.2.10', snapshot: 'clean', platform: 'windows' },
    { name: 'phys1', driver: 'physical', ip: '127.0.0.1', platform: 'linux' }
  ]
}

describe('machine controls on the test hypervisor', () => {
  let h: Harness
  let holder: Hypervisor
  let dir: string
  const post = async (p: string) => {
    const res = await fetch(h.url + p, { method: 'POST' })
    return { status: res.status, body: (await res.json()) as MachineAnswer & { message: string } }
  }

  beforeAll(async () => {
    await ensureLibvirtd(URI)
    // The test driver forgets its domains when its last connection closes: hold one open.
    const { Hypervisor: Binding } = await import('@unraid/libvirt')
    holder = new Binding({ uri: URI })
    await holder.connectOpen()
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-h2a-'))
    writeFileSync(path.join(dir, 'domain.xml'), `<domain type='test'><name>${DOMAIN}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`)
    await virsh('destroy', DOMAIN).catch(() => undefined)
    await virsh('undefine', DOMAIN, '--snapshots-metadata').catch(() => undefined)
    await virsh('define', path.join(dir, 'domain.xml'))
    await virsh('start', DOMAIN)
    await virsh('snapshot-create-as', DOMAIN, 'clean')
    h = await startHarness({ engine: true, machines: fleet })
  }, 120_000)

  afterAll(async () => {
    await h?.stop()
    await virsh('destroy', DOMAIN).catch(() => undefined)
    await virsh('undefine', DOMAIN, '--snapshots-metadata').catch(() => undefined)
    await holder?.connectClose()
    rmSync(dir, { recursive: true, force: true })
  })

  it('stops, starts and reverts a VM, answering the machine after the action', async () => {
    const stopped = await post('/aviary/machines/vm1/stop')
    expect(stopped.status).toBe(200)
    expect(stopped.body.machine).toMatchObject({ name: 'vm1', status: 'poweroff', locked: false })
    expect(await virsh('domstate', DOMAIN)).toBe('shut off')

    const started = await post('/aviary/machines/vm1/start')
    expect(started.body.machine).toMatchObject({ name: 'vm1', status: 'running', locked: false })
    expect(await virsh('domstate', DOMAIN)).toBe('running')
    expect((await post('/aviary/machines/vm1/start')).body.machine.status).toBe('running') // already running: no-op

    await post('/aviary/machines/vm1/stop')
    const reverted = await post('/aviary/machines/vm1/revert')
    expect(reverted.status).toBe(200)
    expect(reverted.body.machine.status).toBe('running') // the snapshot `clean` is of a running VM
    expect(await virsh('domstate', DOMAIN)).toBe('running')
    expect((await h.json<{ machine: { status: string } }>('/machines/view/vm1')).body.machine.status).toBe('running')
  })

  it('takes a live JPEG of a running VM, and says 409 when it is off', async () => {
    const res = await h.get('/aviary/machines/vm1/screenshot')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/jpeg')
    const jpeg = Buffer.from(await res.arrayBuffer())
    expect((await sharp(jpeg).metadata()).format).toBe('jpeg')

    await post('/aviary/machines/vm1/stop')
    const off = await h.json<{ message: string }>('/aviary/machines/vm1/screenshot')
    expect(off.status).toBe(409)
    expect(off.body.message).toMatch(/^vm1 is not running \(poweroff\)/)
    await post('/aviary/machines/vm1/start')
  })

  it('refuses a machine locked by a task (409), an unknown one (404), and what a physical machine cannot do (409)', async () => {
    h.sql(`UPDATE machines SET locked = 1 WHERE name = 'vm1'`)
    try {
      const busy = await post('/aviary/machines/vm1/stop')
      expect(busy.status).toBe(409)
      expect(busy.body.message).toMatch(/locked by a running task/)
      expect(await virsh('domstate', DOMAIN)).toBe('running')
    } finally {
      h.sql(`UPDATE machines SET locked = 0 WHERE name = 'vm1'`)
    }
    for (const p of ['/aviary/machines/nope/start', '/aviary/machines/nope/stop', '/aviary/machines/nope/revert']) {
      expect((await post(p)).status, p).toBe(404)
    }
    expect((await h.json('/aviary/machines/nope/screenshot')).status).toBe(404)
    const shot = await h.json<{ message: string }>('/aviary/machines/phys1/screenshot')
    expect(shot.status).toBe(409)
    expect(shot.body.message).toBe('phys1: the physical driver cannot take screenshots (there is no hypervisor)')
    const revert = await post('/aviary/machines/phys1/revert')
    expect(revert.status).toBe(409)
    expect(revert.body.message).toMatch(/no snapshot/)
    // Its owner powers it: the fleet refuses what the UI does not offer, with the UI's reason.
    for (const action of ['start', 'stop']) {
      const refused = await post(`/aviary/machines/phys1/${action}`)
      expect(refused.status, action).toBe(409)
      expect(refused.body.message).toBe('phys1: a physical machine is powered by its owner: Aviary only waits for its agent, and never switches it on or off')
    }
    expect((await h.json<{ machine: { locked: boolean } }>('/machines/view/phys1')).body.machine.locked).toBe(false)
  })

  it("serves the doctor's quick findings, cached for 30 s", async () => {
    const first = await h.json<DoctorAnswer>('/aviary/doctor')
    expect(first.status).toBe(200)
    expect(first.body.config).toMatchObject({ check: 'machines.json', ok: true })
    expect(first.body.machines.map((m) => m.name)).toEqual(['vm1', 'phys1'])
    const vm1 = first.body.machines[0]!
    expect(vm1.findings.find((f) => f.check === 'snapshot')).toMatchObject({ ok: true })
    expect(vm1.findings.some((f) => f.check === 'revert and start')).toBe(false) // not deep
    await post('/aviary/machines/vm1/stop')
    const again = await h.json<DoctorAnswer>('/aviary/doctor')
    expect(again.body).toEqual(first.body) // from the cache, though the VM's state changed
    await post('/aviary/machines/vm1/start')
  })

  it('deep checks only machines no task uses', async () => {
    h.sql(`UPDATE machines SET locked = 1 WHERE name = 'vm1'`)
    try {
      const { status, body } = await h.json<DoctorAnswer>('/aviary/doctor?deep=1')
      expect(status).toBe(200)
      const [vm1, phys1] = [body.machines.find((m) => m.name === 'vm1')!, body.machines.find((m) => m.name === 'phys1')!]
      expect(vm1.findings).toEqual([{ check: 'deep check', ok: true, detail: 'not checked: the machine is in use by a task' }])
      expect(phys1.findings.find((f) => f.check === 'start')).toBeDefined() // no snapshot: started, never reverted
      expect(phys1.findings.find((f) => f.check === 'revert and start')).toBeUndefined()
      expect(body.ok).toBe(false)
      const machines = (await h.json<{ machines: { name: string; locked: boolean }[] }>('/machines/list')).body.machines
      expect(machines.map((m) => [m.name, m.locked])).toEqual([['vm1', true], ['phys1', false]])
    } finally {
      h.sql(`UPDATE machines SET locked = 0 WHERE name = 'vm1'`)
    }
  }, 60_000)
})

describe('machine controls without an engine', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startHarness({ machines: fleet })
  })
  afterAll(async () => {
    await h?.stop()
  })

  it('answers 409 for a known machine, 404 for an unknown one', async () => {
    const res = await fetch(`${h.url}/aviary/machines/vm1/start`, { method: 'POST' })
    expect(res.status).toBe(409)
    expect(((await res.json()) as { message: string }).message).toMatch(/engine is not running/)
    expect((await fetch(`${h.url}/aviary/machines/nope/start`, { method: 'POST' })).status).toBe(404)
    expect((await h.json('/aviary/machines/vm1/screenshot')).status).toBe(409)
    expect((await h.json('/aviary/doctor')).status).toBe(409)
  })

  it('documents every route in the OpenAPI description', async () => {
    const { body } = await h.json<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json')
    for (const action of ['start', 'stop', 'revert']) expect(body.paths[`/aviary/machines/{name}/${action}`]?.post).toBeDefined()
    expect(body.paths['/aviary/machines/{name}/screenshot']?.get).toBeDefined()
    expect(body.paths['/aviary/doctor']?.get).toBeDefined()
  })
})
