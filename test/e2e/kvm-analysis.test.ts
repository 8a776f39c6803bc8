// End to end on a real VM: the project's small Linux guest (Debian kernel, busybox, Aviary's agent
// as a single executable) under libvirtd's QEMU driver with TCG, driven by the `kvm` driver. The
// service reverts its running snapshot, runs a shell sample through the agent and the analyzer,
// captures on the guest's tap (which exists only once the VM runs), takes screenshots and a memory dump (memory=1), and powers it off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { aviaryAgent, ensureKvmGuest, head, type KvmGuest } from '../guests/kvm-guest'
import { startHarness, type Harness } from '../service-harness'
import { stages, submitFile, waitForTask } from './e2e-helpers'

const SAMPLE = `#!/bin/sh
ping -c 2 -W 1 10.205.0.1
echo written-in-the-vm > /tmp/vm-dropped.txt
sh -c 'sleep 2; echo child' &
wait
`

describe('an analysis on a real libvirt/QEMU guest (kvm driver)', () => {
  let guest: KvmGuest
  let h: Harness
  let id: number
  let dir: string

  beforeAll(async () => {
    guest = await ensureKvmGuest(aviaryAgent())
    h = await startHarness({
      engine: true,
      machines: {
        driver: 'kvm',
        kvm: { uri: guest.uri },
        interface: guest.tap,
        resultserver: { ip: guest.hostIp, port: 0 },
        screenshots: { interval: 1 },
        machines: [{ name: 'vm1', label: guest.domain, ip: guest.ip, snapshot: guest.snapshot, platform: 'linux' }]
      }
    })
    id = await submitFile(h, 'vm-sample.sh', SAMPLE, { timeout: '20', memory: '1' })
    await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 280_000)
    dir = path.join(h.dataDir, 'storage/analyses', String(id))
  }, 900_000)

  afterAll(async () => {
    await h?.stop()
    guest?.release()
  })

  it('completes with the whole timeline, and the VM is off afterwards', async () => {
    const { body } = await h.json<{ task: { status: string; errors: string[]; guest: { manager: string } } }>(`/tasks/view/${id}`)
    expect(body.task.errors).toEqual([])
    expect(body.task.status).toBe('reported')
    expect(body.task.guest.manager).toBe('kvm')
    const s = await stages(h, id)
    for (const st of ['machine_locked', 'reverting', 'started', 'agent_answered', 'analyzer_started', 'finished', 'memory_dumped', 'machine_stopped', 'completed', 'reported']) {
      expect(s).toContain(st)
    }
    const state = execFileSync('virsh', ['-c', guest.uri, 'domstate', guest.domain], { encoding: 'utf8' }).trim()
    expect(state).toBe('shut off')
  })

  it('took screenshots (JPEG, with thumbnails) and a memory dump (an ELF core)', () => {
    const shots = readdirSync(path.join(dir, 'shots'))
    expect(shots).toContain('0001.jpg')
    expect(shots).toContain('0001_small.jpg')
    expect(head(path.join(dir, 'shots/0001.jpg'), 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]))
    const mem = path.join(dir, 'memory.dmp')
    expect(head(mem, 4).toString('latin1')).toBe('\x7fELF')
    expect(statSync(mem).size).toBeGreaterThan(64 * 1024 * 1024)
  })

  it('captured on the tap, and the guest uploaded its dropped file and behaviour', () => {
    const pcap = execFileSync('tcpdump', ['-n', '-r', path.join(dir, 'dump.pcap')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    expect(pcap).toMatch(new RegExp(`${guest.ip.replace(/\./g, '\\.')} > ${guest.hostIp.replace(/\./g, '\\.')}: ICMP echo request`))
    expect(pcap).not.toMatch(/\.8000[ :]/)
    const files = readdirSync(path.join(dir, 'files'))
    const dropped = files.find((f) => f.endsWith('_vm-dropped.txt'))
    expect(dropped, files.join(', ')).toBeDefined()
    expect(readFileSync(path.join(dir, 'files', dropped!), 'utf8')).toBe('written-in-the-vm\n')
    const behavior = readFileSync(path.join(dir, 'logs/behavior.jsonl'), 'utf8')
    expect(behavior).toMatch(/vm-sample\.sh/)
    expect(behavior).toMatch(/sleep 2/)
  })
})
