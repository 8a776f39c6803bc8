// The real test guest under libvirt + QEMU (TCG) does what the kvm driver relies on, through the
// same virsh operations Cuckoo's kvm machinery performs: revert the running snapshot (the agent
// answers, no reboot), a screenshot, a memory-only ELF dump, a capture on the tap that sees what
// the guest sends, destroy. Timings are printed, never asserted (the machine is shared).
// The agent is the stand-in, or Aviary's agent binary when AVIARY_KVM_AGENT names it.
import { spawn, type ChildProcess } from 'node:child_process'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { aviaryAgent, consoleTail, ensureKvmGuest, head, standInAgent, waitForAgent, type KvmGuest } from './kvm-guest'
import { destroyIfRunning, domState, virsh } from './kvm/virsh'

const run = promisify(execFile)
const MEMORY_MIB = 512
const times: Record<string, number> = {}
const timed = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
  const t = performance.now()
  try {
    return await f()
  } finally {
    times[name] = Math.round(performance.now() - t)
  }
}

/** Starts tcpdump on `iface` writing `file`; resolves once it reports that it listens. */
function startCapture(iface: string, file: string): Promise<ChildProcess> {
  // --immediate-mode: without it the kernel hands packets over in blocks (up to 1 s later), and
  // packets still in a block when SIGINT arrives are counted "received by filter" but never written.
  const p = spawn('tcpdump', ['-i', iface, '-n', '-U', '--immediate-mode', '-s', '0', '-w', file], { stdio: ['ignore', 'ignore', 'pipe'] })
  return new Promise((resolve, reject) => {
    let err = ''
    p.stderr.on('data', (d: Buffer) => {
      err += d.toString()
      if (err.includes('listening on')) resolve(p)
    })
    p.on('exit', (code) => reject(new Error(`tcpdump exited ${code}: ${err}`)))
  })
}

describe('the kvm test guest (libvirt qemu:///system, TCG)', () => {
  let guest: KvmGuest
  let work: string

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'aviary-kvm-guest-'))
    const agent = process.env.AVIARY_KVM_AGENT ? aviaryAgent(process.env.AVIARY_KVM_AGENT) : standInAgent()
    guest = await ensureKvmGuest({ ...agent, memoryMiB: MEMORY_MIB })
    for (const [k, v] of Object.entries(guest.timings)) times[`ensure: ${k}`] = v
    times[`image ${guest.image.cached ? 'cached' : 'built'}`] = guest.timings.build ?? -1
  }, 1_800_000)

  afterAll(async () => {
    if (guest) {
      await destroyIfRunning(guest.uri, guest.domain).catch(() => undefined)
      guest.release()
    }
    if (work) rmSync(work, { recursive: true, force: true })
    console.log(`kvm test guest timings (ms):\n${Object.entries(times).map(([k, v]) => `  ${k}: ${v}`).join('\n')}`)
  }, 120_000)

  it('is shut off with a running snapshot, and reverting it resumes the agent without a reboot', async () => {
    expect(await domState(guest.uri, guest.domain)).toBe('shut off')
    expect(await virsh(guest.uri, ['snapshot-info', guest.domain, guest.snapshot])).toMatch(/^State:\s+running/m)
    const boots = () => readFileSync(guest.consoleLog, 'utf8').split('aviary-guest: stage 1').length - 1
    const bootsBefore = boots()
    await timed('revert', () => virsh(guest.uri, ['snapshot-revert', guest.domain, guest.snapshot]))
    expect(await domState(guest.uri, guest.domain)).toBe('running')
    const up = await timed('agent answering after revert', () => waitForAgent(guest.ip, guest.agentPort, 120_000))
    expect(up, consoleTail(guest.consoleLog)).toBe(true)
    // A reverted guest continues from the snapshot: the console shows no new boot.
    expect(boots()).toBe(bootsBefore)
  }, 300_000)

  it('gives a screenshot of its display', async () => {
    const file = path.join(work, 'screen')
    await timed('screenshot', () => virsh(guest.uri, ['screenshot', guest.domain, file]))
    const magic = head(file, 8)
    // QEMU hands libvirt a PPM (P6) or, with newer displays, a PNG.
    const isPpm = magic.subarray(0, 2).toString() === 'P6'
    const isPng = magic.equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    expect(isPpm || isPng, `unexpected image header ${magic.toString('hex')}`).toBe(true)
    if (isPpm) {
      const [, w, h] = /^P6\s+(\d+)\s+(\d+)/.exec(head(file, 32).toString('latin1')) ?? []
      expect(Number(w)).toBeGreaterThan(0)
      expect(statSync(file).size).toBeGreaterThanOrEqual(Number(w) * Number(h) * 3)
    }
  })

  it('writes a memory-only ELF core dump', async () => {
    const file = path.join(work, 'memory.dmp')
    await timed('dump --memory-only', () => virsh(guest.uri, ['dump', guest.domain, file, '--memory-only', '--format', 'elf'], 300_000))
    const h = head(file, 18)
    expect(h.subarray(0, 4).toString('latin1')).toBe('\x7fELF')
    expect(h.readUInt16LE(16)).toBe(4) // e_type ET_CORE
    expect(statSync(file).size).toBeGreaterThanOrEqual(MEMORY_MIB * 2 ** 20)
    rmSync(file)
    expect(await domState(guest.uri, guest.domain)).toBe('running')
  }, 300_000)

  it('lets tcpdump on the tap see a request the guest makes to the host', async () => {
    const seen: string[] = []
    const server: Server = createServer((req, res) => {
      seen.push(`${req.socket.remoteAddress} ${req.url}`)
      res.end('hello-from-host\n')
    })
    await new Promise<void>((r) => server.listen(0, guest.hostIp, r))
    const port = (server.address() as AddressInfo).port
    const pcap = path.join(work, 'dump.pcap')
    const tcpdump = await startCapture(guest.tap, pcap)
    try {
      // Cuckoo's agent protocol: POST /execute with `shell` runs the command through a shell.
      const body = new URLSearchParams({ command: `wget -q -O - http://${guest.hostIp}:${port}/from-guest`, shell: '1' })
      const res = await fetch(`http://${guest.ip}:${guest.agentPort}/execute`, { method: 'POST', body })
      const out = (await res.json()) as { stdout?: string; stderr?: string }
      expect(out.stdout, JSON.stringify(out)).toContain('hello-from-host')
      expect(seen).toContain(`${guest.ip} /from-guest`)
    } finally {
      const exited = new Promise((r) => tcpdump.on('exit', r))
      tcpdump.kill('SIGINT')
      await exited
      server.close()
    }
    const { stdout } = await run('tcpdump', ['-r', pcap, '-n', 'tcp'])
    const escaped = guest.ip.replace(/\./g, '\\.')
    // The guest's SYN to the host's port, as seen on the host side of its NIC.
    expect(stdout).toMatch(new RegExp(`IP ${escaped}\\.\\d+ > ${guest.hostIp.replace(/\./g, '\\.')}\\.${port}: Flags \\[S\\]`))
  }, 120_000)

  it('stops on destroy', async () => {
    await timed('destroy', () => virsh(guest.uri, ['destroy', guest.domain]))
    expect(await domState(guest.uri, guest.domain)).toBe('shut off')
  }, 120_000)
})
