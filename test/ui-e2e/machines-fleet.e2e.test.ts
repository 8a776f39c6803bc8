// The fleet made and kept from the UI, as a new user meets it: the built UI served by a real
// service (engine on, libvirt's test hypervisor), in Debian's Chromium through playwright-core.
// A fresh install: the Dashboard says there is no machine and leads to the Machines page, whose
// "Create Linux machine" names a refused field and then shows a real build's steps as they come
// (it ends at its check: the test hypervisor has no network 'aviary'). Then a machine made as the
// builder makes one (a qcow2 overlay of an image, a domain with the snapshot `clean`) is added to
// machines.json: its disk use shows, prepare mode says how to reach it and is kept, it is
// deleted after a confirmation; the leftovers are listed and removed. axe-core checks each state.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Hypervisor } from '@unraid/libvirt'
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { chromium, type Browser, type Page } from 'playwright-core'
import { ensureLibvirtd } from '../fixtures/libvirtd'
import { startHarness, type Harness } from '../service-harness'

const run = promisify(execFile)
const URI = 'test+unix:///default'
const LABEL = 'avfu-deb1'
const IMAGE = 'debian-bookworm-feedfacecafebeef'
const virsh = async (...args: string[]) => (await run('virsh', ['-q', '-c', URI, ...args])).stdout.trim()
const SHOTS = path.resolve('test-results/ui-e2e')
const AXE = readFileSync(path.resolve('node_modules/axe-core/axe.min.js'), 'utf8')

interface AxeResult { violations: { id: string; impact: string | null; nodes: { target: string[]; html: string }[] }[] }
interface InPage { axe: { run(context: unknown, options: unknown): Promise<AxeResult> } }

let h: Harness
let holder: Hypervisor
let browser: Browser
let page: Page
const fleet = { driver: 'kvm', kvm: { uri: URI }, resultserver: { ip: '127.0.0.1', port: 0 }, timeouts: { vm_state: 2, critical: 1 }, machines: [] as unknown[] }

async function axeFindings(): Promise<string[]> {
  await page.evaluate(AXE)
  const r = await page.evaluate(() => (globalThis as unknown as InPage).axe.run('main', { resultTypes: ['violations'] }))
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => `${n.target.join(' ')} ${n.html.slice(0, 160)}`).join(', ')}`)
}

async function checkState(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true })
  expect(await axeFindings()).toEqual([])
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  await ensureLibvirtd(URI)
  const { Hypervisor: Binding } = await import('@unraid/libvirt')
  holder = new Binding({ uri: URI })
  await holder.connectOpen()
  h = await startHarness({ engine: true, machines: fleet, configPollMs: 200 })
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 1000 } })
  page.on('pageerror', (err) => { throw err })
}, 90_000)

afterAll(async () => {
  await browser?.close()
  await h?.stop()
  await virsh('destroy', LABEL).catch(() => undefined)
  await virsh('undefine', LABEL, '--snapshots-metadata').catch(() => undefined)
  await holder?.connectClose()
})

describe('machines made and kept from the UI', () => {
  it('a fresh install says there is no machine, and creating one shows the build as it goes', async () => {
    await page.goto(`${h.url}/#/`)
    const note = page.getByTestId('first-run')
    await note.waitFor({ timeout: 15_000 })
    expect(await note.textContent()).toMatch(/no analysis machine/)
    await note.getByRole('link', { name: 'Create a Linux machine' }).click()
    await page.getByRole('heading', { name: 'Machines', level: 1 }).waitFor()
    expect(await page.getByTestId('no-machines').textContent()).toMatch(/nothing can be analysed yet\. Create a Linux machine below/)

    const form = page.getByRole('region', { name: 'Create Linux machine' })
    await form.getByLabel('Count').fill('0')
    await form.getByRole('button', { name: 'Create Linux machine' }).click()
    const alert = form.getByRole('alert')
    await alert.waitFor()
    expect(await alert.textContent()).toBe('count: 0 is not a whole number from 1 to 32')
    expect(await form.getByLabel('Count').getAttribute('aria-invalid')).toBe('true')
    await checkState('machines-create-refused')

    await form.getByLabel('Name').fill('deb')
    await form.getByLabel('Count').fill('2')
    await form.getByRole('button', { name: 'Create Linux machine' }).click()
    const build = page.getByRole('region', { name: 'Machine build' })
    await build.locator('[data-build-state="failed"]').or(page.locator('section[data-build-state="failed"]')).first().waitFor({ timeout: 30_000 })
    const steps = await build.getByRole('list', { name: 'Steps' }).locator('li').allTextContents()
    expect(steps[0]).toMatch(/^✓ Checking the host: checking: deb-1, deb-2 on network aviary/)
    expect(steps.at(-1)).toMatch(/Cleaning up: check failed/)
    expect(await build.getByRole('alert').textContent()).toMatch(/libvirt has no network 'aviary'.*aviary setup --user/)
    await checkState('machines-build-failed')
  }, 90_000)

  it("shows a made machine's disk use; prepare mode says how to reach it and keeps; delete asks first", async () => {
    const dir = path.join(h.dataDir, 'machines', 'deb1')
    mkdirSync(path.join(h.dataDir, 'images', IMAGE), { recursive: true })
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', path.join(h.dataDir, 'images', IMAGE, 'disk.qcow2'), '64M'])
    mkdirSync(dir, { recursive: true })
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', path.join(h.dataDir, 'images', IMAGE, 'disk.qcow2'), path.join(dir, 'disk.qcow2')])
    writeFileSync(path.join(dir, 'console.log'), Buffer.alloc(3 * 2 ** 20, 0x61))
    writeFileSync(path.join(dir, 'domain.xml'), `<domain type='test'><name>${LABEL}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os>` +
      `<devices><disk type='file' device='disk'><source file='${path.join(dir, 'disk.qcow2')}'/><target dev='vda' bus='virtio'/></disk></devices></domain>`)
    await virsh('destroy', LABEL).catch(() => undefined)
    await virsh('undefine', LABEL, '--snapshots-metadata').catch(() => undefined)
    await virsh('define', path.join(dir, 'domain.xml'))
    await virsh('start', LABEL)
    await virsh('snapshot-create-as', LABEL, 'clean')
    await virsh('destroy', LABEL)
    mkdirSync(path.join(h.dataDir, 'machines', 'crashed'), { recursive: true })
    writeFileSync(path.join(h.dataDir, 'machines.json'), JSON.stringify({ ...fleet, machines: [{ name: 'deb1', label: LABEL, ip: '192.0.2.51', platform: 'linux', snapshot: 'clean', tags: ['debian'] }] }))

    await page.goto(`${h.url}/#/machines`)
    await page.reload() // a page opened now, not the one the first test left
    const cell = page.locator('td[data-disk="deb1"]')
    await cell.waitFor({ timeout: 20_000 })
    expect(await cell.textContent()).toMatch(/^3\.\d MiB$/)
    expect(await page.getByTestId('images-disk').textContent()).toMatch(new RegExp(`${IMAGE} .* \\(deb1\\)`))
    const leftovers = page.getByRole('region', { name: 'Leftovers' })
    await leftovers.getByRole('button', { name: 'Look for leftovers' }).click()
    await leftovers.locator('[data-leftover="crashed"]').waitFor()

    await page.getByRole('button', { name: 'deb1' }).click()
    const panel = page.getByRole('region', { name: 'Machine deb1' })
    await panel.getByRole('button', { name: 'Prepare' }).click()
    const reach = panel.getByTestId('prepare-reach')
    await reach.waitFor({ timeout: 20_000 })
    expect(await reach.textContent()).toMatch(/no task is given this machine.*virsh -c test\+unix:\/\/\/default console avfu-deb1.*192\.0\.2\.51:8000/s)
    expect(await virsh('domstate', LABEL)).toBe('running')
    await checkState('machines-prepare')

    await panel.getByRole('button', { name: 'Keep changes' }).click()
    const confirmKeep = panel.getByRole('alertdialog', { name: 'Confirm keep' })
    expect(await confirmKeep.textContent()).toMatch(/Its snapshot is replaced/)
    await confirmKeep.getByRole('button', { name: 'Yes, keep' }).click()
    await panel.getByRole('status').filter({ hasText: 'kept' }).waitFor({ timeout: 20_000 })
    expect(await virsh('domstate', LABEL)).toBe('shut off')
    expect(await virsh('snapshot-dumpxml', LABEL, 'clean')).toMatch(/kept after prepare mode/)

    await panel.getByRole('button', { name: 'Delete' }).click()
    const confirmDelete = panel.getByRole('alertdialog', { name: 'Confirm delete' })
    await confirmDelete.getByRole('button', { name: 'Cancel' }).click()
    expect(existsSync(dir)).toBe(true) // cancelled: nothing removed
    await panel.getByRole('button', { name: 'Delete' }).click()
    await checkState('machines-delete-confirm')
    await panel.getByRole('alertdialog', { name: 'Confirm delete' }).getByRole('button', { name: 'Yes, delete' }).click()
    await page.getByTestId('no-machines').waitFor({ timeout: 20_000 })
    expect(existsSync(dir)).toBe(false)
    await expect(virsh('dominfo', LABEL)).rejects.toThrow()

    // The image the deleted machine was made of is now a leftover too, beside the crashed folder.
    await page.reload()
    await leftovers.getByRole('button', { name: 'Look for leftovers' }).click()
    await leftovers.locator(`[data-leftover="${IMAGE}"]`).waitFor({ timeout: 20_000 })
    await leftovers.getByRole('button', { name: 'Remove leftovers' }).click()
    await leftovers.getByRole('button', { name: 'Yes, remove' }).click()
    await leftovers.getByRole('status').filter({ hasText: 'nothing is left over' }).waitFor({ timeout: 20_000 })
    expect(existsSync(path.join(h.dataDir, 'machines', 'crashed'))).toBe(false)
    expect(existsSync(path.join(h.dataDir, 'images', IMAGE))).toBe(false)
  }, 120_000)
})
