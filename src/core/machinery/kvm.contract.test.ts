// The kvm driver through the machinery contract twice: on libvirt's test hypervisor
// (test+unix:///default, a domain of our own with a running snapshot; its test driver takes PNG
// screenshots but has no memory dump; a revert restores the domain's description, the suite's mark
// of a reset) and on the real QEMU/TCG test guest under qemu:///system (revert of the running
// snapshot `clean`, the agent answering, a real screenshot and ELF core).
import type { Hypervisor } from '@unraid/libvirt'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureLibvirtd } from '../../../test/fixtures/libvirtd'
import { ensureKvmGuest, standInAgent, waitForAgent } from '../../../test/guests/kvm-guest'
import { driverContract } from './contract.suite'
import type { DriverMachine } from './driver'
import { KvmDriver } from './kvm'

const run = promisify(execFile)
const TEST_URI = 'test+unix:///default'

async function virsh(uri: string, ...args: string[]): Promise<string> {
  return (await run('virsh', ['-q', '-c', uri, ...args])).stdout
}

/**
 * A domain of our own on the test hypervisor (others' tests share it), running, with a running
 * snapshot `clean`. The test driver inside libvirtd forgets everything when its last connection
 * closes, so a binding connection is held open for as long as the domain is used.
 */
async function testDomain(name: string): Promise<{ machine: DriverMachine; cleanup(): Promise<void> }> {
  await ensureLibvirtd(TEST_URI)
  const { Hypervisor: Binding } = await import('@unraid/libvirt')
  const holder: Hypervisor = new Binding({ uri: TEST_URI })
  await holder.connectOpen()
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-kvm-test-'))
  const xml = path.join(dir, 'domain.xml')
  writeFileSync(xml, `<domain type='test'><name>${name}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`)
  const remove = async (): Promise<void> => {
    await virsh(TEST_URI, 'destroy', name).catch(() => undefined)
    await virsh(TEST_URI, 'undefine', name, '--snapshots-metadata').catch(() => undefined)
  }
  await remove()
  await virsh(TEST_URI, 'define', xml)
  await virsh(TEST_URI, 'start', name)
  await virsh(TEST_URI, 'snapshot-create-as', name, 'clean')
  return {
    machine: { name, label: name, ip: '192.168.122.201', snapshot: 'clean', platform: 'windows', interface: null, options: [] },
    cleanup: async () => {
      await remove()
      await holder.connectClose()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

driverContract('kvm on libvirt\'s test hypervisor', async () => {
  const dom = await testDomain('avh4-contract')
  return { driver: new KvmDriver({ uri: TEST_URI, vmStateSeconds: 10 }), ...dom }
}, {
  unsupported: ['dumpMemory'],
  // The running domain's description: a revert restores the snapshot's, which has none.
  mark: {
    leave: async (s) => { await virsh(TEST_URI, 'desc', s.machine.label, '--live', 'aviary-contract-mark') },
    present: async (s) => (await virsh(TEST_URI, 'desc', s.machine.label, '--live')).includes('aviary-contract-mark')
  }
})

describe('kvm driver specifics (test hypervisor)', () => {
  let dom: Awaited<ReturnType<typeof testDomain>>
  let driver: KvmDriver
  beforeAll(async () => {
    dom = await testDomain('avh4-specifics')
    driver = new KvmDriver({ uri: TEST_URI, vmStateSeconds: 10 })
  })
  afterAll(async () => {
    await driver?.close()
    await dom?.cleanup()
  })

  it('without a snapshot name it reverts the current one; an offline snapshot is booted after the revert', async () => {
    await driver.stop(dom.machine)
    await virsh(TEST_URI, 'snapshot-create-as', dom.machine.label, 'offline')
    expect(await virsh(TEST_URI, 'snapshot-current', dom.machine.label, '--name')).toContain('offline')
    const findings = await driver.check({ ...dom.machine, snapshot: null })
    expect(findings.find((f) => f.check === 'snapshot')?.detail).toMatch(/'offline' \(current\) is of a shut off domain/)
    await driver.start({ ...dom.machine, snapshot: null })
    expect(await driver.state(dom.machine)).toBe('running')
  })

  it('a missing libvirt is a failed check with a fix, not an exception', async () => {
    const d = new KvmDriver({ uri: 'test+unix:///default?socket=/nonexistent/libvirt-sock', vmStateSeconds: 1 })
    const findings = await d.check(dom.machine)
    expect(findings).toHaveLength(1)
    expect(findings[0]).toMatchObject({ check: 'hypervisor', ok: false })
    expect(findings[0]?.detail).toMatch(/^cannot connect to libvirt at /)
    expect(findings[0]?.fix).toMatch(/libvirtd|kvm\.uri/)
    await expect(d.state(dom.machine)).rejects.toThrow(/cannot connect to libvirt/)
    await d.close()
  })

  it('a failed dump says what libvirt said, as one line, and leaves no file behind', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'aviary-kvm-dump-'))
    try {
      const dest = path.join(dir, 'memory.dmp')
      const err = await driver.dumpMemory(dom.machine, dest).catch((e: unknown) => e as Error)
      expect((err as Error).message).toMatch(/^memory dump of 'avh4-specifics': Failed to core dump domain/)
      expect((err as Error).message).not.toContain('\n')
      expect(existsSync(dest)).toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

let guestRelease: (() => void) | null = null
driverContract('kvm on a real QEMU guest (qemu:///system, TCG)', async () => {
  const guest = await ensureKvmGuest(standInAgent())
  guestRelease = guest.release
  return {
    driver: new KvmDriver({ uri: guest.uri, vmStateSeconds: 120 }),
    machine: { name: 'avkvm', label: guest.domain, ip: guest.ip, snapshot: guest.snapshot, platform: 'linux', interface: guest.tap, options: [] },
    cleanup: async () => guestRelease?.()
  }
}, {
  timeoutMs: 600_000,
  afterStart: async (s) => {
    expect(await waitForAgent(s.machine.ip, 8000, 120_000)).toBe(true)
  }
})
