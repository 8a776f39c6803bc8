// /aviary/machines/builds, disk, leftovers, delete, rebuild and prepare on a real service (real
// SQLite, real HTTP) with the real builder and libvirt's test hypervisor: a build is started and
// refused as the CLI refuses it (400 naming the field, 409 while one runs), and its events are read
// from a seq on and seen on GET /events as they happen. The test hypervisor has no network
// 'aviary', so each build here ends at its check, as on a host where `aviary setup` was not run.
// Machines "made by Aviary" are built by hand here: a folder under machines/ with a real qcow2
// overlay of an image (qemu-img), and a domain on the test hypervisor whose disk is that overlay.
import type { Hypervisor } from '@unraid/libvirt'
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureLibvirtd } from '../../../../test/fixtures/libvirtd'
import { startHarness, type Harness } from '../../../../test/service-harness'
import type { BuildAnswer, DeleteAnswer, DiskUseAnswer, LeftoversAnswer, PrepareAnswer, RemovedLeftoversAnswer } from '../../../shared/api/machine-builds'

const run = promisify(execFile)
const URI = 'test+unix:///default'
const PREFIX = 'avfl-'
const virsh = async (...args: string[]) => (await run('virsh', ['-q', '-c', URI, ...args])).stdout.trim()
const IMAGE = 'debian-bookworm-0123456789abcdef'

let h: Harness
let holder: Hypervisor

async function call<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T & { message?: string } }> {
  const res = await fetch(h.url + p, {
    method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: (await res.json()) as T & { message?: string } }
}

async function waitEnded(id: number): Promise<BuildAnswer['build']> {
  for (let i = 0; i < 600; i++) {
    const { body } = await call<BuildAnswer>('GET', `/aviary/machines/builds/${id}`)
    if (body.build.state !== 'running') return body.build
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`build ${id} did not end`)
}

/** A machine as the builder leaves one: its folder with an overlay of the image, and its domain (running, snapshot `clean`). */
async function builtMachine(name: string, extraSnapshot?: string): Promise<void> {
  const dir = path.join(h.dataDir, 'machines', name)
  mkdirSync(dir, { recursive: true })
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', path.join(h.dataDir, 'images', IMAGE, 'disk.qcow2'), path.join(dir, 'disk.qcow2')])
  writeFileSync(path.join(dir, 'console.log'), 'x'.repeat(100_000))
  const label = PREFIX + name
  await virsh('destroy', label).catch(() => undefined)
  await virsh('undefine', label, '--snapshots-metadata').catch(() => undefined)
  writeFileSync(path.join(dir, 'domain.xml'), `<domain type='test'><name>${label}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os>` +
    `<devices><disk type='file' device='disk'><source file='${path.join(dir, 'disk.qcow2')}'/><target dev='vda' bus='virtio'/></disk></devices></domain>`)
  await virsh('define', path.join(dir, 'domain.xml'))
  await virsh('start', label)
  await virsh('snapshot-create-as', label, 'clean')
  if (extraSnapshot) await virsh('snapshot-create-as', label, extraSnapshot)
}

const machinesJson = () => JSON.parse(readFileSync(path.join(h.dataDir, 'machines.json'), 'utf8')) as { machines: { name: string }[] }

beforeAll(async () => {
  await ensureLibvirtd(URI)
  // The test driver forgets its domains when its last connection closes: hold one open.
  const { Hypervisor: Binding } = await import('@unraid/libvirt')
  holder = new Binding({ uri: URI })
  await holder.connectOpen()
  const m = (name: string, ip: string) => ({ name, label: PREFIX + name, ip, snapshot: 'clean', platform: 'linux', driver: 'kvm' })
  h = await startHarness({
    engine: true,
    machines: {
      driver: 'kvm', kvm: { uri: URI }, resultserver: { ip: '127.0.0.1', port: 0 }, timeouts: { vm_state: 2, critical: 1 },
      machines: [m('built1', '192.0.2.21'), m('built2', '192.0.2.22'), m('prep1', '192.0.2.23'), { name: 'hand1', ip: '192.0.2.30', driver: 'physical', platform: 'linux' }]
    }
  })
  const img = path.join(h.dataDir, 'images', IMAGE)
  mkdirSync(img, { recursive: true })
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', path.join(img, 'disk.qcow2'), '64M'])
  writeFileSync(path.join(img, 'vmlinuz'), Buffer.alloc(300_000, 1))
  await builtMachine('built1')
  await builtMachine('built2', 'clean-prepared-1')
  await builtMachine('prep1')
}, 180_000)

afterAll(async () => {
  await h?.stop()
  for (const n of ['built1', 'built2', 'prep1', 'orphan']) {
    await virsh('destroy', PREFIX + n).catch(() => undefined)
    await virsh('undefine', PREFIX + n, '--snapshots-metadata').catch(() => undefined)
  }
  await holder?.connectClose()
})

describe('POST /aviary/machines/builds', () => {
  it('refuses a bad request with a 400 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ count: 0 }, /^count: 0 is not a whole number from 1 to 32/],
      [{ count: 33 }, /^count: /],
      [{ count: 'two' }, /^count: /],
      [{ name: 'a b' }, /^name: "a b" is not a machine name/],
      [{ name: '../x' }, /^name: /],
      [{ memory: 64 }, /^memory: 64 MiB/],
      [{ network: 'Bad-Net' }, /^network: /]
    ]
    for (const [body, message] of cases) {
      const res = await call('POST', '/aviary/machines/builds', body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.message).toMatch(message)
    }
    expect((await call<{ builds: unknown[] }>('GET', '/aviary/machines/builds')).body.builds).toEqual([])
  })

  it('starts a build (202), refuses a second while it runs (409), and shows its events from a seq on and on /events', async () => {
    const sse = new AbortController()
    const stream = await fetch(h.url + '/events', { signal: sse.signal })
    const seen: string[] = []
    const reading = (async () => {
      const reader = stream.body!.getReader()
      const dec = new TextDecoder()
      let text = ''
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }))
        if (done) break
        text += dec.decode(value)
        seen.splice(0, seen.length, ...text.split('\n\n').filter((b) => b.startsWith('event: build')))
        if (seen.some((b) => b.startsWith('event: build_ended'))) break
      }
    })()

    const [first, second] = await Promise.all([
      call<BuildAnswer>('POST', '/aviary/machines/builds', { name: 'deb', count: 2 }),
      call<BuildAnswer>('POST', '/aviary/machines/builds', { name: 'other' })
    ])
    expect(first.status).toBe(202)
    expect(first.body.build).toMatchObject({ kind: 'linux', state: 'running', request: { name: 'deb', count: 2 }, ended: null, result: null })
    expect(second.status).toBe(409)
    expect(second.body.message).toMatch(/a machine build is running already/)
    expect((await call<{ running: boolean }>('GET', '/aviary/machines/builds')).body.running).toBe(true)

    const ended = await waitEnded(first.body.build.id)
    expect(ended.state).toBe('failed')
    expect(ended.error).toMatchObject({ step: 'check', field: null, leftBehind: [] })
    expect(ended.error!.message).toMatch(/no network 'aviary'/)
    expect(ended.events[0]).toMatchObject({ seq: 1, step: 'check', kind: 'step', message: 'checking: deb-1, deb-2 on network aviary' })
    expect(ended.events.map((e) => e.seq)).toEqual(ended.events.map((_, i) => i + 1))
    expect(ended.events.at(-1)!.step).toBe('cleanup')
    expect(ended.last_seq).toBe(ended.events.length)

    const later = (await call<BuildAnswer>('GET', `/aviary/machines/builds/${ended.id}?since=1`)).body.build
    expect(later.events.map((e) => e.seq)).toEqual(ended.events.slice(1).map((e) => e.seq))
    expect((await call<BuildAnswer>('GET', `/aviary/machines/builds/${ended.id}?since=${ended.last_seq}`)).body.build.events).toEqual([])

    await Promise.race([reading, new Promise((r) => setTimeout(r, 10_000))])
    sse.abort()
    const streamed = seen.filter((b) => b.startsWith('event: build\n')).map((b) => JSON.parse(b.split('\ndata: ')[1]!) as { build: number; event: { seq: number } })
    expect(streamed.map((e) => e.event)).toEqual(ended.events)
    expect(streamed.every((e) => e.build === ended.id)).toBe(true)
    expect(JSON.parse(seen.find((b) => b.startsWith('event: build_ended'))!.split('\ndata: ')[1]!)).toMatchObject({ build: ended.id, state: 'failed' })

    // The machine is free again: a new build may start (and fails the same way).
    const again = await call<BuildAnswer>('POST', '/aviary/machines/builds', {})
    expect(again.status).toBe(202)
    expect((await waitEnded(again.body.build.id)).events[0]!.message).toBe('checking: linux on network aviary')
  })

  it('answers 404 for an unknown build and 400 for a bad id or seq', async () => {
    expect((await call('GET', '/aviary/machines/builds/9999')).status).toBe(404)
    const bad = await call('GET', '/aviary/machines/builds/x')
    expect(bad.status).toBe(404) // the API's rule for integer path segments (error-handler.ts)
    expect(bad.body.message).toMatch(/id must be decimal digits/)
    const since = await call('GET', '/aviary/machines/builds/1?since=-1')
    expect(since.status).toBe(400)
    expect(since.body.message).toMatch(/^since: /)
  })
})

describe('disk use, leftovers, delete and rebuild', () => {
  it("shows each machine's and image's disk use", async () => {
    const { status, body } = await call<DiskUseAnswer>('GET', '/aviary/machines/disk')
    expect(status).toBe(200)
    const built1 = body.machines.find((m) => m.name === 'built1')!
    expect(built1).toMatchObject({ built: true, image: IMAGE })
    expect(built1.bytes).toBeGreaterThanOrEqual(100_000) // its console log, at least
    expect(body.machines.find((m) => m.name === 'hand1')).toEqual({ name: 'hand1', built: false, bytes: 0, image: null })
    const image = body.images.find((i) => i.key === IMAGE)!
    expect(image.usedBy.sort()).toEqual(['built1', 'built2', 'prep1'])
    expect(image.bytes).toBeGreaterThanOrEqual(300_000)
    expect(body.totalBytes).toBeGreaterThanOrEqual(built1.bytes + image.bytes)
  })

  it('finds what nothing uses, and removes what it is asked to', async () => {
    mkdirSync(path.join(h.dataDir, 'machines', 'orphan'), { recursive: true })
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', path.join(h.dataDir, 'machines', 'orphan', 'disk.qcow2'), '16M'])
    writeFileSync(path.join(h.dataDir, 'machines', 'orphan', 'domain.xml'), `<domain type='test'><name>${PREFIX}orphan</name><memory unit='MiB'>64</memory><os><type arch='x86_64'>hvm</type></os>` +
      `<devices><disk type='file' device='disk'><source file='${path.join(h.dataDir, 'machines', 'orphan', 'disk.qcow2')}'/><target dev='vda' bus='virtio'/></disk></devices></domain>`)
    await virsh('define', path.join(h.dataDir, 'machines', 'orphan', 'domain.xml'))
    mkdirSync(path.join(h.dataDir, 'images', '.build-debian-bookworm-x-abc'), { recursive: true })
    mkdirSync(path.join(h.dataDir, 'images', 'debian-bookworm-old'), { recursive: true })

    const found = (await call<LeftoversAnswer>('GET', '/aviary/machines/leftovers')).body.leftovers
    const key = (l: { kind: string; name: string }) => `${l.kind} ${l.name}`
    expect(found.map(key).sort()).toEqual([
      'build .build-debian-bookworm-x-abc', `domain ${PREFIX}orphan`, 'folder orphan', 'image debian-bookworm-old', `snapshot ${PREFIX}built2/clean-prepared-1`
    ])
    const some = await call<RemovedLeftoversAnswer>('POST', '/aviary/machines/leftovers/remove', { names: [`${PREFIX}orphan`, 'orphan', `${PREFIX}built2/clean-prepared-1`, 'not-a-leftover'] })
    expect(some.status).toBe(200)
    expect(some.body.removed.map(key).sort()).toEqual([`domain ${PREFIX}orphan`, 'folder orphan', `snapshot ${PREFIX}built2/clean-prepared-1`])
    expect(some.body.failed).toEqual([])
    expect(await virsh('snapshot-list', PREFIX + 'built2', '--name')).toBe('clean')
    await expect(virsh('dominfo', PREFIX + 'orphan')).rejects.toThrow()
    expect(existsSync(path.join(h.dataDir, 'machines', 'orphan'))).toBe(false)
    expect((await call<LeftoversAnswer>('GET', '/aviary/machines/leftovers')).body.leftovers.map(key).sort()).toEqual(['build .build-debian-bookworm-x-abc', 'image debian-bookworm-old'])
    expect((await call('POST', '/aviary/machines/leftovers/remove', { names: 'x' })).body.message).toMatch(/^names: /)
    // The doctor offers them too, without failing the fleet for them.
    const doctor = (await call<{ leftovers: { ok: boolean; detail: string; fix: string } }>('GET', '/aviary/doctor')).body
    expect(doctor.leftovers).toMatchObject({ ok: false, detail: 'build .build-debian-bookworm-x-abc, image debian-bookworm-old' })
    expect(doctor.leftovers.fix).toMatch(/aviary machines leftovers --remove/)
  })

  it('deletes a machine Aviary made (domain, snapshots, folder, entry) and only the entry of one written by hand', async () => {
    const built = await call<DeleteAnswer>('DELETE', '/aviary/machines/built1')
    expect(built.status).toBe(200)
    expect(built.body.removed).toEqual([`the domain ${PREFIX}built1 and its snapshots`, 'the folder machines/built1', 'its entry in machines.json'])
    await expect(virsh('dominfo', PREFIX + 'built1')).rejects.toThrow()
    expect(existsSync(path.join(h.dataDir, 'machines', 'built1'))).toBe(false)
    expect(machinesJson().machines.map((m) => m.name)).not.toContain('built1')
    const hand = await call<DeleteAnswer>('DELETE', '/aviary/machines/hand1')
    expect(hand.body.removed).toEqual(['its entry in machines.json'])
    expect((await call('DELETE', '/aviary/machines/nosuch')).status).toBe(404)
    expect((await call('DELETE', '/aviary/machines/' + 'x'.repeat(300))).status).toBe(400)
  })

  it('rebuilds: deletes first, then builds under the same name (here, to the failing check)', async () => {
    const res = await call<BuildAnswer>('POST', '/aviary/machines/built2/rebuild')
    expect(res.status).toBe(202)
    expect(res.body.build).toMatchObject({ kind: 'rebuild', request: { name: 'built2' } })
    const ended = await waitEnded(res.body.build.id)
    expect(ended.events[0]).toMatchObject({ seq: 1, step: 'check', kind: 'note' })
    expect(ended.events[0]!.message).toMatch(/^deleted built2: the domain avfl-built2 and its snapshots, the folder machines\/built2/)
    expect(ended.events[1]).toMatchObject({ seq: 2, step: 'check', kind: 'step', message: 'checking: built2 on network aviary' })
    expect(ended.state).toBe('failed')
    await expect(virsh('dominfo', PREFIX + 'built2')).rejects.toThrow()
    expect((await call('POST', '/aviary/machines/nosuch/rebuild')).status).toBe(404)
  })
})

describe('prepare mode on the test hypervisor', () => {
  it('starts the machine locked against tasks, says how to reach it, and keeps its state as the snapshot', async () => {
    await virsh('destroy', PREFIX + 'prep1')
    const res = await call<PrepareAnswer>('POST', '/aviary/machines/prep1/prepare')
    expect(res.status).toBe(200)
    expect(res.body.reach.join('\n')).toMatch(/virsh -c test\+unix:\/\/\/default console avfl-prep1/)
    expect(res.body.reach.join('\n')).toMatch(/192\.0\.2\.23:8000/)
    expect(await virsh('domstate', PREFIX + 'prep1')).toBe('running')
    // The scheduler skips a locked machine; a second prepare, a delete and a revert are refused.
    expect((await h.json<{ machine: { locked: boolean } }>('/machines/view/prep1')).body.machine.locked).toBe(true)
    expect((await call('POST', '/aviary/machines/prep1/prepare')).status).toBe(409)
    expect((await call('DELETE', '/aviary/machines/prep1')).status).toBe(409)
    expect((await call('POST', '/aviary/machines/prep1/revert')).status).toBe(409)
    expect((await call<{ preparing: { machine: string }[] }>('GET', '/aviary/machines/preparing')).body.preparing.map((p) => p.machine)).toEqual(['prep1'])
    expect(existsSync(path.join(h.dataDir, 'machines', 'prep1', 'preparing.json'))).toBe(true)

    expect(await virsh('snapshot-dumpxml', PREFIX + 'prep1', 'clean')).not.toMatch(/<description>/)
    const kept = await call<{ machine: { locked: boolean; status: string } }>('POST', '/aviary/machines/prep1/keep')
    expect(kept.status).toBe(200)
    expect(kept.body.machine).toMatchObject({ locked: false, status: 'poweroff' })
    expect(await virsh('snapshot-list', PREFIX + 'prep1', '--name')).toBe('clean')
    // The snapshot `clean` is the one keep took (the test hypervisor holds no guest state to compare).
    expect(await virsh('snapshot-dumpxml', PREFIX + 'prep1', 'clean')).toMatch(/<description>agent running: every analysis reverts here \(kept after prepare mode\)<\/description>/)
    expect(await virsh('domstate', PREFIX + 'prep1')).toBe('shut off')
    expect(existsSync(path.join(h.dataDir, 'machines', 'prep1', 'preparing.json'))).toBe(false)
    expect((await call('POST', '/aviary/machines/prep1/keep')).status).toBe(409)

    // Discard: back to the snapshot, powered off, unlocked.
    expect((await call('POST', '/aviary/machines/prep1/prepare')).status).toBe(200)
    const discarded = await call<{ machine: { locked: boolean } }>('POST', '/aviary/machines/prep1/discard')
    expect(discarded.status).toBe(200)
    expect(discarded.body.machine.locked).toBe(false)
    expect(await virsh('snapshot-list', PREFIX + 'prep1', '--name')).toBe('clean')
    expect((await call('POST', '/aviary/machines/nosuch/prepare')).status).toBe(404)
  })
})
