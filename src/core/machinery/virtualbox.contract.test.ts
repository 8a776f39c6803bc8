// The virtualbox driver through the machinery contract, on the VBoxManage replay
// (test/fixtures/vboxmanage/fake-vboxmanage.mjs: VirtualBox cannot run here), plus what only
// VirtualBox does: a live snapshot restores into "saved", the commands Cuckoo runs, in its order.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { driverContract } from './contract.suite'
import type { DriverMachine } from './driver'
import { MachineError } from './driver'
import { VirtualBoxDriver } from './virtualbox'

const FAKE = fileURLToPath(new URL('../../../test/fixtures/vboxmanage/fake-vboxmanage.mjs', import.meta.url))

interface FakeState {
  vms: Record<string, { uuid: string; state: string; snapshots: { name: string; uuid: string; live: boolean }[]; current: string | null }>
  log?: string[]
}

/** A temp folder with a VBoxManage wrapper that points the replay at its own state file. */
function fakeVbox(state: FakeState): { bin: string; stateFile: string; dir: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-vbox-'))
  const stateFile = path.join(dir, 'state.json')
  writeFileSync(stateFile, JSON.stringify(state))
  const bin = path.join(dir, 'VBoxManage')
  writeFileSync(bin, `#!/bin/sh\nFAKE_VBOX_STATE='${stateFile}' exec '${process.execPath}' '${FAKE}' "$@"\n`, { mode: 0o755 })
  return { bin, stateFile, dir }
}

const cuckoo1 = (): FakeState => ({
  vms: {
    cuckoo1: {
      uuid: '5c3f6a8e-2b1d-4e4f-9a55-0d6b1c2e7f10', state: 'poweroff', current: 'clean',
      snapshots: [
        { name: 'installed', uuid: '0b9d7c41-8f0e-4b8a-a0c1-3e4f5a6b7c8d', live: false },
        { name: 'clean', uuid: '7e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b', live: true }
      ]
    }
  }
})

const MACHINE: DriverMachine = { name: 'cuckoo1', label: 'cuckoo1', ip: '192.168.56.101', snapshot: 'clean', platform: 'windows', interface: 'vboxnet0', options: [] }

driverContract('virtualbox (VBoxManage 7.0 replay)', async () => {
  const fake = fakeVbox(cuckoo1())
  return {
    driver: new VirtualBoxDriver({ path: fake.bin, mode: 'headless', vmStateSeconds: 5 }),
    machine: MACHINE,
    cleanup: async () => rmSync(fake.dir, { recursive: true, force: true })
  }
})

describe('virtualbox driver specifics', () => {
  let fake: ReturnType<typeof fakeVbox>
  let driver: VirtualBoxDriver
  const log = (): string[] => (JSON.parse(readFileSync(fake.stateFile, 'utf8')) as FakeState).log ?? []

  beforeAll(() => {
    fake = fakeVbox(cuckoo1())
    driver = new VirtualBoxDriver({ path: fake.bin, mode: 'gui', vmStateSeconds: 5 })
  })
  afterAll(() => rmSync(fake.dir, { recursive: true, force: true }))

  it('starts like Cuckoo: restore the snapshot, see "saved", startvm with the configured mode, see "running"', async () => {
    await driver.start(MACHINE)
    const cmds = log().filter((l) => !l.startsWith('showvminfo'))
    expect(cmds).toEqual(['snapshot cuckoo1 restore clean', 'startvm cuckoo1 --type gui'])
    expect(log()).toContain('showvminfo cuckoo1 --machinereadable')
    expect(await driver.state(MACHINE)).toBe('running')
    await driver.stop(MACHINE)
    expect(log().at(-2)).toBe('controlvm cuckoo1 poweroff')
  })

  it('without a snapshot name it restores the current one', async () => {
    await driver.start({ ...MACHINE, snapshot: null })
    expect(log()).toContain('snapshot cuckoo1 restorecurrent')
    await driver.stop(MACHINE)
  })

  it('reports a missing VBoxManage as a MachineError naming the path', async () => {
    const d = new VirtualBoxDriver({ path: path.join(fake.dir, 'no-VBoxManage'), mode: 'headless', vmStateSeconds: 1 })
    const findings = await d.check(MACHINE)
    expect(findings[0]).toMatchObject({ check: 'hypervisor', ok: false })
    expect(findings[0]?.detail).toContain('was not found')
    await expect(d.state(MACHINE)).rejects.toBeInstanceOf(MachineError)
  })

  it('summarises VBoxManage errors to their first lines, without the Details/Context noise', async () => {
    const err = await driver.start({ ...MACHINE, snapshot: 'nope' }).catch((e: unknown) => e as Error)
    expect(err).toBeInstanceOf(MachineError)
    expect((err as Error).message).toBe("restoring snapshot 'nope' of 'cuckoo1': Could not find a snapshot named 'nope'")
  })
})
