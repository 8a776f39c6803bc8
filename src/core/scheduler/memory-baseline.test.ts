// The triage baseline is taken once per machine and snapshot, kept, and copied into each run's
// folder; the machine's dump is deleted once read. The machine is the VirtualBox driver on its
// VBoxManage replay (test/fixtures/vboxmanage/fake-vboxmanage.mjs, a stand-in: VirtualBox cannot
// run here), whose dumpvmcore writes the head of a real core file; the scan is real.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DriverMachine } from '../machinery/driver'
import { VirtualBoxDriver } from '../machinery/virtualbox'
import { createLayout } from '../storage/layout'
import { readIndicators } from '../processing/memory-triage'
import { ensureMemoryBaseline } from './memory-baseline'

const FAKE = fileURLToPath(new URL('../../../test/fixtures/vboxmanage/fake-vboxmanage.mjs', import.meta.url))
const MACHINE: DriverMachine = { name: 'cuckoo1', label: 'cuckoo1', ip: '192.168.56.101', snapshot: 'clean', platform: 'windows', interface: 'vboxnet0', options: [] }

describe('memory baseline', () => {
  let dir: string
  let stateFile: string
  let driver: VirtualBoxDriver
  const setState = (state: string): void => writeFileSync(stateFile, JSON.stringify({
    vms: { cuckoo1: { uuid: '5c3f6a8e-2b1d-4e4f-9a55-0d6b1c2e7f10', state, current: 'clean', snapshots: [{ name: 'clean', uuid: '7e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b', live: true }] } }
  }))
  const dumps = (): number => ((JSON.parse(readFileSync(stateFile, 'utf8')) as { log?: string[] }).log ?? []).filter((l) => l.includes('dumpvmcore')).length
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'baseline-'))
    stateFile = path.join(dir, 'state.json')
    const bin = path.join(dir, 'VBoxManage')
    writeFileSync(bin, `#!/bin/sh\nFAKE_VBOX_STATE='${stateFile}' exec '${process.execPath}' '${FAKE}' "$@"\n`, { mode: 0o755 })
    driver = new VirtualBoxDriver({ path: bin, mode: 'headless', vmStateSeconds: 5 })
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('is taken by the first run, kept, and only copied for the next', async () => {
    setState('running')
    const layout = createLayout(path.join(dir, 'data'))
    const file = layout.memoryBaseline('cuckoo1', 'clean')
    const logs: string[] = []
    const first = path.join(dir, 'run1.json')
    expect(await ensureMemoryBaseline({ driver, machine: MACHINE, file, into: first, log: (m) => logs.push(m) })).toBe(true)
    expect(file).toBe(path.join(dir, 'data', 'baselines', 'cuckoo1', 'clean.json'))
    expect(readdirSync(path.dirname(file))).toEqual(['clean.json'])
    expect((await readIndicators(first))?.source).toBe('cuckoo1/clean')
    expect((await readIndicators(file))?.indicators.bytes).toBe(4096)
    expect(logs).toEqual([expect.stringMatching(/^memory baseline of cuckoo1 \(clean\) taken in \d+ ms: 0 URLs, 0 domains, 0 IPs in 4096 bytes$/)])
    const second = path.join(dir, 'run2.json')
    expect(await ensureMemoryBaseline({ driver, machine: MACHINE, file, into: second, log: (m) => logs.push(m) })).toBe(false)
    expect(readFileSync(second, 'utf8')).toBe(readFileSync(file, 'utf8'))
    expect(dumps()).toBe(1)
  })

  it('keeps nothing when the dump fails', async () => {
    setState('saved')
    const file = createLayout(path.join(dir, 'data2')).memoryBaseline('cuckoo1', 'clean')
    await expect(ensureMemoryBaseline({ driver, machine: MACHINE, file, into: path.join(dir, 'run3.json'), log: () => undefined })).rejects.toThrow(/invalid state|saved/i)
    expect(existsSync(file)).toBe(false)
    expect(readdirSync(path.dirname(file))).toEqual([])
    expect(existsSync(path.join(dir, 'run3.json'))).toBe(false)
  })
})
