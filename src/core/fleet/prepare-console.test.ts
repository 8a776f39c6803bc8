// Prepare mode's live console on a real service (engine on, libvirt's test hypervisor): the
// machine's domain declares a VNC display on a UNIX socket where QEMU's own VNC server listens (a
// QEMU stopped before its first instruction still serves its VGA screen), so the kvm driver's
// consoleEndpoint reads it from the live XML as it does for a real guest. After prepare, the
// machine's console state says available and the websocket is accepted and speaks RFB; after keep
// and after discard, both are refused (409).
import type { Hypervisor } from '@unraid/libvirt'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { ensureLibvirtd } from '../../../test/fixtures/libvirtd'
import { startHarness, type Harness } from '../../../test/service-harness'
import { CONSOLE_PROTOCOLS } from '../../shared/api/console'

const run = promisify(execFile)
const URI = 'test+unix:///default'
const LABEL = 'avpc-prep'
const virsh = async (...args: string[]) => (await run('virsh', ['-q', '-c', URI, ...args])).stdout.trim()

let h: Harness
let holder: Hypervisor
let qemu: ChildProcess
let dir: string

interface MachineConsole { available: boolean; reason: string | null; task: number | null }

async function call<T>(method: string, p: string): Promise<{ status: number; body: T }> {
  const res = await fetch(h.url + p, { method })
  return { status: res.status, body: (await res.json()) as T }
}

/** The websocket's answer: open (with the first 12 bytes the server sent: RFB's version) or the refusal's status. */
function openWs(): Promise<{ version: string; protocol: string } | { status: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${h.url.replace(/^http/, 'ws')}/aviary/machines/prep/console/ws`, [CONSOLE_PROTOCOLS.interactive, CONSOLE_PROTOCOLS.view])
    let buf = Buffer.alloc(0)
    ws.on('unexpected-response', (_req, res) => { res.resume(); resolve({ status: res.statusCode ?? 0 }) })
    ws.on('message', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      if (buf.length >= 12) { resolve({ version: buf.subarray(0, 12).toString(), protocol: ws.protocol }); ws.close() }
    })
    // Closed before RFB's version came (a later resolve is ignored): the close code stands for the answer.
    ws.on('close', (code) => resolve({ status: code }))
    ws.on('error', (err) => { if (!/Unexpected server response/.test(err.message)) reject(err) })
  })
}

beforeAll(async () => {
  await ensureLibvirtd(URI)
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-prepcon-'))
  const sock = path.join(dir, 'vnc.sock')
  qemu = spawn('qemu-system-x86_64', ['-machine', 'pc', '-accel', 'tcg', '-m', '32', '-nodefaults', '-vga', 'std', '-display', 'none', '-S', '-vnc', `unix:${sock}`], { stdio: 'ignore' })
  for (let i = 0; i < 100 && !existsSync(sock); i++) await sleep(100)
  // The test driver forgets its domains when its last connection closes: hold one open.
  const { Hypervisor: Binding } = await import('@unraid/libvirt')
  holder = new Binding({ uri: URI })
  await holder.connectOpen()
  await virsh('destroy', LABEL).catch(() => undefined)
  await virsh('undefine', LABEL, '--snapshots-metadata').catch(() => undefined)
  writeFileSync(path.join(dir, 'domain.xml'), `<domain type='test'><name>${LABEL}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os>` +
    `<devices><graphics type='vnc'><listen type='socket' socket='${sock}'/></graphics></devices></domain>`)
  await virsh('define', path.join(dir, 'domain.xml'))
  await virsh('start', LABEL)
  await virsh('snapshot-create-as', LABEL, 'clean')
  await virsh('destroy', LABEL)
  h = await startHarness({
    engine: true,
    machines: {
      driver: 'kvm', kvm: { uri: URI }, resultserver: { ip: '127.0.0.1', port: 0 }, timeouts: { vm_state: 2, critical: 1 },
      machines: [{ name: 'prep', label: LABEL, ip: '192.0.2.41', snapshot: 'clean', platform: 'linux', driver: 'kvm' }]
    }
  })
}, 120_000)

afterAll(async () => {
  await h?.stop()
  await virsh('destroy', LABEL).catch(() => undefined)
  await virsh('undefine', LABEL, '--snapshots-metadata').catch(() => undefined)
  await holder?.connectClose()
  qemu?.kill('SIGKILL')
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe("prepare mode's console", () => {
  it('is open while the machine is prepared and closed after keep and after discard', async () => {
    const before = await call<MachineConsole>('GET', '/aviary/machines/prep/console')
    expect(before.body.available).toBe(false)
    expect(await openWs()).toMatchObject({ status: 409 })

    for (const end of ['keep', 'discard'] as const) {
      expect((await call('POST', '/aviary/machines/prep/prepare')).status).toBe(200)
      const state = await call<MachineConsole>('GET', '/aviary/machines/prep/console')
      expect(state.status).toBe(200)
      expect(state.body).toMatchObject({ available: true, reason: null, task: null })
      // The upgrade is accepted with control, and QEMU's VNC server answers through it.
      expect(await openWs()).toEqual({ version: 'RFB 003.008\n', protocol: CONSOLE_PROTOCOLS.interactive })

      expect((await call('POST', `/aviary/machines/prep/${end}`)).status).toBe(200)
      const after = await call<MachineConsole>('GET', '/aviary/machines/prep/console')
      expect(after.body.available).toBe(false)
      expect(after.body.reason).toMatch(/not running an analysis \(or being prepared\)/)
      expect(await openWs()).toMatchObject({ status: 409 })
    }
  })
})
