// The whole command on what can run here: a stand-in ISO (a wimcapture install.wim under sources/,
// made into an ISO by xorriso), libvirt's test driver for the domain, and, standing in for the
// Windows that Setup would install, Aviary's agent (`aviary agent`) started in a network namespace
// guest (avwv55) at the machine's address only after the command has booted the machine and is
// waiting. Checked: the progress of every step, the files, the domain, the wait, and then the
// snapshot and machines.json. The test driver has no `change-media` (virDomainUpdateDeviceFlags),
// so the eject is seen to fail with libvirt's words, and the snapshot and the registration are run
// as the next steps after it. Bad input fails before anything is made.
import { execFile, execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNetnsGuest, type NetnsGuest } from '../../../../test/guests/netns-guest'
import { holdTestDriver, type HeldTestDriver } from '../../../../test/windows-builder/test-driver'
import { listIsoRoot } from './answer-medium'
import { createWindowsMachine, ejectMedia, installWindows, prepareWindowsMachine, snapshotAndRegister, type CreateWindowsOptions, type WindowsProgress } from './create'
import { parseFleetConfig } from '../../machinery/machines-config'
import { checkWindowsInput, WindowsSpecError } from './options'

const run = promisify(execFile)
const ROOT = path.resolve(__dirname, '../../../..')

describe('aviary machines create windows, on the test driver with a stand-in ISO', () => {
  let dir: string
  let held: HeldTestDriver
  let guest: NetnsGuest
  let iso: string
  let agentStandIn: string
  let machinesFile: string
  const domains: string[] = []
  const virsh = async (...args: string[]): Promise<string> => (await run('virsh', ['-q', '-c', held.uri, ...args])).stdout

  beforeAll(async () => {
    held = await holdTestDriver()
    dir = mkdtempSync(path.join(tmpdir(), 'avwv-create-'))
    guest = await createNetnsGuest({ index: 55, prefix: 'avwv' })
    const content = path.join(dir, 'content', 'Windows')
    mkdirSync(content, { recursive: true })
    writeFileSync(path.join(content, 'stand-in.txt'), 'not Windows\n')
    const root = path.join(dir, 'isoroot')
    mkdirSync(path.join(root, 'sources'), { recursive: true })
    const wim = path.join(root, 'sources', 'install.wim')
    for (const [i, [name, id]] of [['Windows 10 Home', 'Core'], ['Windows 10 Pro', 'Professional']].entries()) {
      execFileSync(i === 0 ? 'wimcapture' : 'wimappend', [path.dirname(content), wim, name!, '--image-property', `WINDOWS/EDITIONID=${id}`,
        '--image-property', 'WINDOWS/ARCH=9', '--image-property', 'WINDOWS/VERSION/BUILD=19045'], { stdio: 'pipe' })
    }
    iso = path.join(dir, 'Win10_stand-in.iso')
    execFileSync('xorriso', ['-no_rc', '-as', 'mkisofs', '-quiet', '-o', iso, '-J', '-r', root], { stdio: 'pipe' })
    agentStandIn = path.join(dir, 'agent-stand-in.exe')
    writeFileSync(agentStandIn, 'MZ stand-in for aviary-agent-win-x64.exe\n')
    machinesFile = path.join(dir, 'machines.json')
    writeFileSync(machinesFile, JSON.stringify({ driver: 'kvm', machines: [{ name: 'other', ip: '10.9.9.9', platform: 'linux' }] }, null, 2))
  }, 120_000)

  afterAll(async () => {
    for (const d of domains) {
      await virsh('destroy', d).catch(() => undefined)
      await virsh('snapshot-delete', d, 'clean').catch(() => undefined)
      await virsh('undefine', d).catch(() => undefined)
    }
    await guest?.close()
    await held?.release()
    rmSync(dir, { recursive: true, force: true })
  })

  const options = (name: string, extra: Partial<CreateWindowsOptions['input']> = {}): CreateWindowsOptions => ({
    input: { name, password: 'S3cret<&>', ip: guest.guestIp, gateway: guest.hostIp, ...extra },
    iso, dir: path.join(dir, 'machines', name), machinesFile, uri: held.uri, agentExe: agentStandIn,
    virtType: 'qemu', pollMs: 200, installTimeoutMs: 60_000
  })

  it('prepares, waits for the agent, and stops at the eject the test driver lacks', async () => {
    const steps: WindowsProgress[] = []
    const o = options('avwv-win10')
    domains.push('avwv-win10')
    // The "installed Windows" comes up once the command waits for it.
    let agentStarted = false
    const progress = (p: WindowsProgress): void => {
      steps.push(p)
      if (p.step === 'install' && !agentStarted) {
        agentStarted = true
        void guest.startAgent([process.execPath, path.join(ROOT, 'bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000'], { cwd: ROOT })
      }
    }
    await expect(createWindowsMachine(o, progress)).rejects.toThrow(/^ejecting the Windows ISO: this function is not supported by the connection driver: virDomainUpdateDeviceFlags/)
    expect([...new Set(steps.map((s) => s.step))]).toEqual(['check', 'edition', 'medium', 'disk', 'define', 'install', 'eject'])
    expect(steps.find((s) => s.message.startsWith('installing Windows 10 Pro'))?.message).toBe('installing Windows 10 Pro (image 2 of 2)')
    expect(steps.some((s) => /^the agent answers on 10\.204\.55\.2:8000/.test(s.message))).toBe(true)

    expect((await listIsoRoot(path.join(o.dir, 'answer.iso'))).map((e) => e.name).sort()).toEqual(['Autounattend.xml', 'guestd.exe', 'guestsetup.cmd'])
    const info = JSON.parse((await run('qemu-img', ['info', '--output=json', path.join(o.dir, 'disk.qcow2')])).stdout) as { format: string; 'virtual-size': number }
    expect(info).toMatchObject({ format: 'qcow2', 'virtual-size': 64 * 2 ** 30 })
    expect((await virsh('domstate', 'avwv-win10')).trim()).toBe('running')
    const xml = await virsh('dumpxml', 'avwv-win10')
    expect(xml).toContain(`<source file='${iso}'/>`)
    expect(xml).toContain(`<source file='${path.join(o.dir, 'answer.iso')}'/>`)
  }, 120_000)

  it('then takes the snapshot and registers the machine in machines.json beside the others', async () => {
    const o = options('avwv-win10')
    const plan = { spec: checkWindowsInput(o.input), edition: { index: 2, name: 'Windows 10 Pro', editionId: 'Professional', arch: 9, build: 19045 }, files: { disk: '', answerIso: '', domainXml: '' } }
    const created = await snapshotAndRegister(plan, o, () => undefined)
    expect(created).toMatchObject({ name: 'avwv-win10', ip: guest.guestIp, snapshot: 'clean' })
    expect((await virsh('snapshot-list', 'avwv-win10', '--name')).trim()).toBe('clean')
    const fleet = parseFleetConfig(JSON.parse(readFileSync(machinesFile, 'utf8')))
    expect(fleet.machines.map((m) => m.name)).toEqual(['other', 'avwv-win10'])
    expect(fleet.machines[1]).toMatchObject({ label: 'avwv-win10', platform: 'windows', ip: guest.guestIp, snapshot: 'clean', driver: 'kvm', tags: ['win10'] })
    // machines.json names the machine once: a second registration is refused.
    await expect(snapshotAndRegister(plan, { ...o, snapshot: 'again' }, () => undefined)).rejects.toThrow(/name: machines\.json got a machine 'avwv-win10'/)
  }, 60_000)

  it.each([
    ['iso', { iso: '/nonexistent/Win10.iso' }, /^iso: \/nonexistent\/Win10\.iso is not a file$/],
    ['name', { input: { name: 'other' } }, /^name: machines\.json already has a machine 'other'$/],
    ['ip', { input: { ip: '10.9.9.9', gateway: '10.9.9.1' } }, /^ip: 10\.9\.9\.9 is already the address of 'other'/],
    ['name', { input: { name: 'avwv-win10', ip: '10.204.55.3' } }, /^name: machines\.json already has a machine 'avwv-win10'|^name: libvirt .* already has a domain 'avwv-win10'$/],
    ['edition', { input: { edition: 'Windows 10 Enterprise' } }, /^edition: the ISO has no edition 'Windows 10 Enterprise' \(it has 1: Windows 10 Home; 2: Windows 10 Pro\)$/],
    ['password', { input: { password: '' } }, /^password: /]
  ] as [string, Partial<CreateWindowsOptions> & { input?: Partial<CreateWindowsOptions['input']> }, RegExp][])('refuses a bad %s before making anything', async (field, change, message) => {
    const base = options('avwv-bad', { ip: '10.204.55.4' })
    const o: CreateWindowsOptions = { ...base, ...change, input: { ...base.input, ...(change.input ?? {}) } }
    const domainsBefore = await virsh('list', '--all', '--name')
    const dirBefore = existsSync(o.dir) ? readdirSync(o.dir).sort() : null
    const fileBefore = readFileSync(machinesFile, 'utf8')
    const err = await prepareWindowsMachine(o, () => undefined).then(() => null, (e: unknown) => e)
    expect(err).toBeInstanceOf(WindowsSpecError)
    expect((err as WindowsSpecError).field).toBe(field)
    expect((err as Error).message).toMatch(message)
    expect(existsSync(o.dir) ? readdirSync(o.dir).sort() : null).toEqual(dirBefore)
    expect(await virsh('list', '--all', '--name')).toBe(domainsBefore)
    expect(readFileSync(machinesFile, 'utf8')).toBe(fileBefore)
  }, 60_000)

  it('says where the machine is when its agent never answers, and leaves it for a look', async () => {
    const o = { ...options('avwv-silent', { ip: '10.204.55.5' }), installTimeoutMs: 1500 }
    domains.push('avwv-silent')
    const plan = await prepareWindowsMachine(o, () => undefined)
    await expect(installWindows(plan, o, () => undefined)).rejects.toThrow(/^the agent did not answer on 10\.204\.55\.5:8000 within \d+ min; the domain and .* are left as they are: .* virsh -c test\+unix:\/\/\/default undefine avwv-silent/)
    expect((await virsh('domstate', 'avwv-silent')).trim()).toBe('running')
    await expect(ejectMedia(plan, o, () => undefined)).rejects.toThrow(/^ejecting the Windows ISO: /)
  }, 60_000)
})
