// Prepare mode (`aviary machines prepare NAME`, then --keep or --discard) on a real guest: one
// Debian machine made by the Linux builder under libvirt/QEMU (TCG), from the image linux-machines
// uses (out/linux-guest/, so a second build is warm), driven by the real service through the
// command a user types. A file written in the guest through its agent survives keep (the next
// prepare reverts to the kept snapshot and finds it); a second file is gone after discard, the first
// still there. The lab has a network of its own (avpr, 10.219.0.0/24; linux-machines has avlx on
// 10.216.0.0/24 and its upstream link on 10.217.0.0/30, bench/machines avlxb on 10.218.0.0/24), so
// they may run at once.
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLayout } from '../../src/core/storage/layout'
import { MachineBuilds, type BuildJob } from '../../src/core/builder/machine-builds'
import { createAvlxLab, URI, type AvlxLab } from '../guests/avlx-lab'
import { startHarness, type Harness } from '../service-harness'

const run = promisify(execFile)
const AGENT = path.resolve('out/agent/aviary-agent-linux-x64')
const CLI = path.resolve('bin/aviary.js')
const MARK1 = '/root/kept-marker.txt'
const MARK2 = '/root/discarded-marker.txt'

/** The agent's answer to `command` (POST /execute), once it answers at all (after a revert the guest's link may take a moment). */
async function inGuest(ip: string, command: string): Promise<string> {
  const until = Date.now() + 180_000
  for (;;) {
    try {
      const res = await fetch(`http://${ip}:8000/execute`, { method: 'POST', body: new URLSearchParams({ command, shell: '1' }), signal: AbortSignal.timeout(60_000) })
      if (res.status !== 200) throw new Error(`/execute answered ${res.status}: ${await res.text()}`)
      return ((await res.json()) as { stdout?: string }).stdout ?? ''
    } catch (err) {
      if (Date.now() > until) throw err
      await new Promise((r) => setTimeout(r, 2000))
    }
  }
}

/** Stores `text` at `filepath` in the guest as the host stores an analysis' files (POST /store). */
async function store(ip: string, filepath: string, text: string): Promise<void> {
  const form = new FormData()
  form.set('filepath', filepath)
  form.set('file', new Blob([text]), path.basename(filepath))
  const res = await fetch(`http://${ip}:8000/store`, { method: 'POST', body: form, signal: AbortSignal.timeout(60_000) })
  expect(res.status, await res.clone().text()).toBe(200)
}

const show = (f: string): string => `if [ -f ${f} ]; then echo "${f}: $(cat ${f})"; else echo "${f}: none"; fi`

describe('prepare mode on a real QEMU guest: keep makes the change the snapshot, discard drops it', () => {
  let lab: AvlxLab
  let builds: MachineBuilds
  let job: BuildJob
  let h: Harness | undefined
  const layout = (): ReturnType<typeof createLayout> => createLayout(lab.dataDir)
  const machines = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    run(process.execPath, [CLI, 'machines', ...args, '--data', lab.dataDir, '--remote', h!.url], { timeout: 900_000 })
      .then((r) => ({ code: 0, ...r }), (e: { code: number; stdout: string; stderr: string }) => e)
  const snapshots = async (label: string): Promise<string[]> =>
    (await lab.lv.run(['snapshot-list', label, '--name'], 'snapshots')).split('\n').map((l) => l.trim()).filter(Boolean)

  beforeAll(async () => {
    lab = await createAvlxLab({ network: 'avpr', subnet: '10.219.0.0/24' })
    builds = new MachineBuilds(() => ({ layout: layout(), agentFile: AGENT, uri: URI }))
    job = await builds.wait(builds.startLinux({ name: 'pm', count: 1, network: lab.network.name }).id)
    if (job.state !== 'succeeded') throw new Error(`the build failed: ${job.error?.message}`)
    const fleet = JSON.parse(readFileSync(layout().machinesConfig, 'utf8')) as Record<string, unknown>
    h = await startHarness({ engine: true, dataDir: lab.dataDir, machines: { ...fleet, resultserver: { ip: lab.network.hostIp, port: 0 } } })
  }, 3_600_000)

  afterAll(async () => {
    await h?.stop()
    await builds?.stop()
    await lab?.close()
  }, 300_000)

  it('keeps a file made in the guest, and discards one made after', async () => {
    const m = job.result!.machines[0]!
    expect(m).toMatchObject({ name: 'pm', label: 'avpr-pm' })
    expect(await snapshots(m.label)).toEqual(['clean'])

    // prepare: reverted to the snapshot and running, locked, and the command says how to reach it.
    const p1 = await machines(['prepare', m.name])
    expect(p1.stderr).toBe('')
    expect(p1.stdout).toContain(`its agent: http://${m.ip}:8000`)
    expect(await lab.lv.domState(m.label)).toBe('running')
    const { body: preparing } = await h!.json<{ preparing: { machine: string }[] }>('/aviary/machines/preparing')
    expect(preparing.preparing.map((s) => s.machine)).toEqual(['pm'])
    expect(await inGuest(m.ip, show(MARK1))).toContain(`${MARK1}: none`)
    await store(m.ip, MARK1, 'made in prepare mode, then kept')

    // keep: the running machine becomes 'clean' (no spare snapshot left behind), powered off.
    const k = await machines(['prepare', m.name, '--keep'])
    expect(k.stderr).toBe('')
    expect(k.stdout).toMatch(/^kept: pm's snapshot is now the machine as you left it/)
    expect(await snapshots(m.label)).toEqual(['clean'])
    expect(await lab.lv.domState(m.label)).toBe('shut off')

    // prepare again: back to the kept snapshot, where the file is.
    expect((await machines(['prepare', m.name])).code).toBe(0)
    expect(await inGuest(m.ip, show(MARK1))).toContain(`${MARK1}: made in prepare mode, then kept`)
    await store(m.ip, MARK2, 'made in prepare mode, then discarded')
    expect(await inGuest(m.ip, show(MARK2))).toContain(`${MARK2}: made in prepare mode, then discarded`)

    // discard: back to the snapshot, powered off, the snapshot unchanged.
    const d = await machines(['prepare', m.name, '--discard'])
    expect(d.stderr).toBe('')
    expect(d.stdout).toMatch(/^discarded: pm is back to its snapshot/)
    expect(await lab.lv.domState(m.label)).toBe('shut off')
    expect(await snapshots(m.label)).toEqual(['clean'])

    // prepare once more: the kept file is there, the discarded one is not.
    expect((await machines(['prepare', m.name])).code).toBe(0)
    const seen = await inGuest(m.ip, `${show(MARK1)}; ${show(MARK2)}`)
    expect(seen).toContain(`${MARK1}: made in prepare mode, then kept`)
    expect(seen).toContain(`${MARK2}: none`)
    expect((await machines(['prepare', m.name, '--discard'])).code).toBe(0)
    expect(await lab.lv.domState(m.label)).toBe('shut off')
    // Released: the service holds no machine in prepare mode, nor a marker in the machine's folder.
    const { body: after } = await h!.json<{ preparing: unknown[] }>('/aviary/machines/preparing')
    expect(after.preparing).toEqual([])
    expect(existsSync(path.join(layout().machineDir('pm'), 'preparing.json'))).toBe(false)
  }, 1_800_000)
})
