// The one suite every machinery driver passes (kvm on libvirt's test hypervisor and on a real QEMU
// guest, virtualbox on the VBoxManage replay, physical on a stand-in agent in a network
// namespace): what the scheduler and the doctor rely on, asserted the same way for each, and each
// driver against the capabilities it declares (power, revert, reset, screenshots, memoryDump).
// Only *.contract.test.ts files import it (it registers vitest tests).
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MachineError, type DriverMachine, type Finding, type MachineDriver } from './driver'
import { capabilitiesOf } from './drivers'

export interface ContractSubject {
  driver: MachineDriver
  /** A machine that exists, with its snapshot (when the driver has snapshots). */
  machine: DriverMachine
  cleanup(): Promise<void>
}

export interface ContractOptions {
  /** Operations the driver supports but the backend under test cannot do (libvirt's test driver has no memory dump). */
  unsupported?: Array<'screenshot' | 'dumpMemory'>
  /** Per-test time limit in ms. Default 60 s. */
  timeoutMs?: number
  /** A machine that does not exist. Default: the machine with name and label 'aviary-no-such-vm'. */
  unknownMachine?: DriverMachine
  /** Runs after each successful start (e.g. the guest's agent answers). */
  afterStart?: (s: ContractSubject) => Promise<void>
  /**
   * A change made to the running machine, and a way to see it (kvm: the domain's live description;
   * physical: a mark the stand-in agent keeps). Given, the suite checks `reset`: the next start()
   * undoes the change exactly when the driver declares reset. Backends without one (the
   * VBoxManage replay) have no such test.
   */
  mark?: { leave(s: ContractSubject): Promise<void>; present(s: ContractSubject): Promise<boolean> }
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** PNG, or a binary PPM (P6) as QEMU gives libvirt. */
export function isImage(b: Buffer): boolean {
  return b.subarray(0, 8).equals(PNG) || /^P6\s+\d+\s+\d+\s+\d+\s/.test(b.subarray(0, 32).toString('latin1'))
}

/** The error a user sees: a MachineError, one line or a few, no stack frames. */
async function expectMachineError(p: Promise<unknown>, mentions: RegExp): Promise<MachineError> {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err, 'expected a MachineError').toBeInstanceOf(MachineError)
  const msg = (err as MachineError).message
  expect(msg).toMatch(mentions)
  expect(msg).not.toMatch(/\n\s+at /)
  return err as MachineError
}

function failed(findings: Finding[]): Finding[] {
  return findings.filter((f) => !f.ok)
}

export function driverContract(name: string, make: () => Promise<ContractSubject>, opts: ContractOptions = {}): void {
  const timeout = opts.timeoutMs ?? 60_000
  const unsupported = new Set(opts.unsupported ?? [])

  describe(`machinery contract: ${name}`, () => {
    let s: ContractSubject
    let work: string
    const unknown = (): DriverMachine => opts.unknownMachine ?? { ...s.machine, name: 'aviary-no-such-vm', label: 'aviary-no-such-vm' }
    const start = async (): Promise<void> => {
      await s.driver.start(s.machine)
      await opts.afterStart?.(s)
    }

    beforeAll(async () => {
      work = mkdtempSync(path.join(tmpdir(), 'aviary-contract-'))
      s = await make()
    }, timeout * 2)

    afterAll(async () => {
      try {
        if (s) await s.driver.stop(s.machine).catch(() => undefined)
        if (s) await s.driver.close()
      } finally {
        if (s) await s.cleanup()
        if (work) rmSync(work, { recursive: true, force: true })
      }
    }, timeout * 2)

    it('declares what its kind is registered with (what the UI and the fleet read without a driver)', () => {
      expect(s.driver.capabilities).toEqual(capabilitiesOf(s.driver.kind))
    })

    it('check() passes for a configured machine', async () => {
      const findings = await s.driver.check(s.machine)
      expect(failed(findings)).toEqual([])
      expect(findings.length).toBeGreaterThan(0)
    }, timeout)

    it('stop() leaves it powered off (or, without a hypervisor, leaves it alone); a second stop() is fine', async () => {
      const before = await s.driver.state(s.machine)
      await s.driver.stop(s.machine)
      const after = await s.driver.state(s.machine)
      if (s.driver.capabilities.power) expect(after).toBe('poweroff')
      else expect(after).toBe(before)
      await s.driver.stop(s.machine)
      expect(await s.driver.state(s.machine)).toBe(after)
    }, timeout)

    it('start() reverts and resolves once it runs; starting a running machine again is fine', async () => {
      await start()
      expect(await s.driver.state(s.machine)).toBe('running')
      await start()
      expect(await s.driver.state(s.machine)).toBe('running')
    }, timeout * 2)

    if (opts.mark) {
      const mark = opts.mark
      it('start() resets the machine exactly when the driver declares reset', async () => {
        await start()
        await mark.leave(s)
        expect(await mark.present(s), 'the mark was not left').toBe(true)
        await start()
        expect(await mark.present(s), 'the mark after the next start()').toBe(!s.driver.capabilities.reset)
      }, timeout * 2)
    }

    it('screenshot() gives PNG or PPM bytes when the driver can, else a MachineError', async () => {
      if (s.driver.capabilities.screenshots && !unsupported.has('screenshot')) {
        expect(await s.driver.state(s.machine)).toBe('running')
        const img = await s.driver.screenshot(s.machine)
        expect(isImage(img), `not PNG/PPM: ${img.subarray(0, 8).toString('hex')}`).toBe(true)
      } else {
        await expectMachineError(s.driver.screenshot(s.machine), /screenshot|cannot|not supported|unsupported/i)
      }
    }, timeout)

    it('dumpMemory() writes a non-empty ELF core when the driver can, else a MachineError', async () => {
      const dest = path.join(work, 'memory.dmp')
      if (s.driver.capabilities.memoryDump && !unsupported.has('dumpMemory')) {
        await s.driver.dumpMemory(s.machine, dest)
        expect(statSync(dest).size).toBeGreaterThan(0)
        expect(readFileSync(dest).subarray(0, 4).toString('latin1')).toBe('\x7fELF')
        rmSync(dest)
        expect(await s.driver.state(s.machine)).toBe('running')
      } else {
        await expectMachineError(s.driver.dumpMemory(s.machine, dest), /memory|dump|cannot|not supported|unsupported/i)
      }
    }, timeout * 5)

    it('a machine the hypervisor does not know: check() says so with a fix, start() throws a MachineError naming it', async () => {
      const m = unknown()
      const findings = await s.driver.check(m)
      const bad = failed(findings)
      expect(bad.length).toBeGreaterThan(0)
      expect(bad[0]?.fix).toBeTruthy()
      await expectMachineError(s.driver.start(m), new RegExp(m.label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '|' + m.ip.replace(/\./g, '\\.')))
    }, timeout)

    it('a missing snapshot: check() fails it with a fix, start() throws a MachineError naming it', async () => {
      if (!s.driver.capabilities.revert) {
        // No snapshots (physical): the snapshot field is ignored, so check() still passes.
        expect(failed(await s.driver.check({ ...s.machine, snapshot: 'aviary-no-such-snapshot' }))).toEqual([])
        return
      }
      const m = { ...s.machine, snapshot: 'aviary-no-such-snapshot' }
      const snap = (await s.driver.check(m)).find((f) => f.check === 'snapshot')
      expect(snap?.ok).toBe(false)
      expect(snap?.detail).toContain('aviary-no-such-snapshot')
      expect(snap?.fix).toBeTruthy()
      await expectMachineError(s.driver.start(m), /aviary-no-such-snapshot/)
    }, timeout)

    it('after all that, start() and stop() still work', async () => {
      await start()
      expect(await s.driver.state(s.machine)).toBe('running')
      await s.driver.stop(s.machine)
      if (s.driver.capabilities.power) expect(await s.driver.state(s.machine)).toBe('poweroff')
    }, timeout * 2)
  })
}
