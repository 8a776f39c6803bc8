// Network analysis against real captures: a network-namespace guest does DNS (UDP and TCP), HTTP
// (keep-alive, POST with a body, chunked responses, a non-default port, IPv6), TLS (a real
// handshake with SNI), ICMP and UDP to a public-looking address and a dead host, all captured by
// real tcpdump on the veth (Ethernet) and on `any` (SLL and SLL2), with small and whole snap
// lengths and nanosecond timestamps. Every field of the report is compared with tshark's view of the
// same file (tshark is the oracle here, not a runtime need). Converted copies (raw IP link type, big
// endian), cut files, pcapng, garbage and empty files check the reader's edges.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net'
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import dnsPacket from 'dns-packet'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNetnsGuest, type NetnsGuest } from '../../../../test/guests/netns-guest'
import { analyzePcap, PcapFormatError, type NetworkReport } from './index'

const run = promisify(execFile)
const require = createRequire(import.meta.url)
const PUBLIC = '11.204.16.1' // "a public server" (not in Cuckoo's private ranges), on the host side
const DEAD = '11.204.16.3' // blackholed on the host: SYNs go unanswered
const V6_HOST = 'fd00:cafe:16::1'
const V6_GUEST = 'fd00:cafe:16::2'

/** tshark -T fields: one row per frame, multi-valued fields joined with '|'. */
async function tshark(file: string, filter: string, fields: string[]): Promise<string[][]> {
  const args = ['-r', file, '-n', '-o', 'frame.show_file_off:TRUE', '-T', 'fields', '-E', 'separator=\t', '-E', 'aggregator=|', '-E', 'occurrence=a']
  if (filter) args.push('-Y', filter)
  for (const f of fields) args.push('-e', f)
  const { stdout } = await run('tshark', args, { maxBuffer: 64 * 1024 * 1024 })
  return stdout.split('\n').filter((l) => l.length > 0).map((l) => l.split('\t'))
}

function waitExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
}

/** tcpdump until stop(); resolves once it says it is listening. */
async function tcpdump(args: string[]): Promise<{ stop(): Promise<void> }> {
  const p = spawn('tcpdump', ['-U', '-n', '-Z', 'root', ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  await new Promise<void>((resolve, reject) => {
    p.stderr.on('data', (b: Buffer) => { err += b.toString(); if (err.includes('listening on')) resolve() })
    p.once('exit', (code) => reject(new Error(`tcpdump exited ${code}: ${err}`)))
  })
  return {
    stop: async () => {
      await new Promise((r) => setTimeout(r, 1500)) // libpcap hands over its last block after ≤ 1 s
      p.kill('SIGTERM')
      await waitExit(p)
    }
  }
}

/** Runs a command in the guest to completion; its stdout. Rejects on an unexpected exit code. */
async function inGuest(g: NetnsGuest, cmd: string[], okCodes = [0]): Promise<string> {
  const child = g.exec(cmd)
  let out = ''
  let err = ''
  child.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  child.stderr?.on('data', (b: Buffer) => { err += b.toString() })
  const code = await waitExit(child)
  if (!okCodes.includes(code ?? -1)) throw new Error(`${cmd.join(' ')} exited ${code}: ${err}`)
  return out
}

/** Rewrites a little-endian Ethernet pcap as big-endian, optionally as raw IP (link type 101). */
function convertPcap(src: Buffer, o: { bigEndian: boolean; rawIp: boolean }): Buffer {
  const out: Buffer[] = []
  const gh = Buffer.alloc(24)
  const w32 = (b: Buffer, v: number, off: number): void => { if (o.bigEndian) b.writeUInt32BE(v, off); else b.writeUInt32LE(v, off) }
  const w16 = (b: Buffer, v: number, off: number): void => { if (o.bigEndian) b.writeUInt16BE(v, off); else b.writeUInt16LE(v, off) }
  w32(gh, src.readUInt32LE(0), 0)
  w16(gh, 2, 4); w16(gh, 4, 6)
  w32(gh, src.readUInt32LE(16), 16)
  w32(gh, o.rawIp ? 101 : src.readUInt32LE(20), 20)
  out.push(gh)
  for (let off = 24; off + 16 <= src.length;) {
    const caplen = src.readUInt32LE(off + 8)
    let data = src.subarray(off + 16, off + 16 + caplen)
    let orig = src.readUInt32LE(off + 12)
    off += 16 + caplen
    if (o.rawIp) {
      const type = data.readUInt16BE(12)
      if (type !== 0x0800 && type !== 0x86dd) continue
      data = data.subarray(14); orig -= 14
    }
    const rh = Buffer.alloc(16)
    w32(rh, src.readUInt32LE(off - 16 - caplen), 0)
    w32(rh, src.readUInt32LE(off - 16 - caplen + 4), 4)
    w32(rh, data.length, 8); w32(rh, orig, 12)
    out.push(rh, data)
  }
  return Buffer.concat(out)
}

/** Everything but offsets and times, which depend on the link layer and the file. */
function linkIndependent(r: NetworkReport): unknown {
  const flows = (l: NetworkReport['tcp']): unknown => l.map(({ offset: _o, time: _t, ...rest }) => rest)
  return { ...r, pcap_sha256: '', tcp: flows(r.tcp), udp: flows(r.udp) }
}

describe('analyzePcap on real captures', () => {
  let g: NetnsGuest
  let dir: string
  const servers: (HttpServer | TcpServer | TlsServer)[] = []
  let report: NetworkReport
  const pcap = (name: string): string => path.join(dir, name)

  beforeAll(async () => {
    g = await createNetnsGuest({ index: 16, prefix: 'avnw' })
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-network-'))
    await run('ip', ['addr', 'add', `${PUBLIC}/32`, 'dev', g.hostIf])
    await run('ip', ['route', 'add', 'blackhole', `${DEAD}/32`])
    await run('ip', ['-6', 'addr', 'add', `${V6_HOST}/64`, 'dev', g.hostIf, 'nodad'])
    await run('ip', ['-n', g.ns, '-6', 'addr', 'add', `${V6_GUEST}/64`, 'dev', `${g.ns}g`, 'nodad'])

    // A chunked HTTP server on a non-default port, over IPv4 and IPv6.
    const chunked = (): HttpServer => createHttpServer((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(req.url === '/missing' ? 404 : 201, { 'content-type': 'text/plain' })
        res.write('part one\n')
        setTimeout(() => res.end('part two\n'), 10)
      })
    })
    const listen = (s: HttpServer | TcpServer | TlsServer, port: number, host: string): Promise<void> =>
      new Promise((r) => { servers.push(s); s.listen(port, host, r) })
    await listen(chunked(), 8080, PUBLIC)
    await listen(chunked(), 8080, V6_HOST)
    // A real TLS server (self-signed), so the capture has a ClientHello and a ServerHello.
    await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=tls.example.test', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')])
    const tls = createTlsServer({ key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) }, (s) => {
      s.on('data', () => s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok'))
      s.on('error', () => undefined)
    })
    await listen(tls, 443, PUBLIC)
    // DNS over TCP on the public address.
    const dnsTcp = createTcpServer((c) => {
      let buf = Buffer.alloc(0)
      c.on('data', (b: Buffer) => {
        buf = Buffer.concat([buf, b])
        if (buf.length < 2 || buf.length < 2 + buf.readUInt16BE(0)) return
        const q = dnsPacket.decode(buf.subarray(2, 2 + buf.readUInt16BE(0)))
        c.end(dnsPacket.streamEncode({ id: q.id, type: 'response', flags: dnsPacket.RECURSION_DESIRED, questions: q.questions,
          answers: [{ type: 'CNAME', name: q.questions?.[0]?.name ?? '', data: 'alias.example.test' },
            { type: 'A', name: 'alias.example.test', data: '11.204.16.7' }] }))
      })
      c.on('error', () => undefined)
    })
    await listen(dnsTcp, 53, PUBLIC)

    const caps = [
      await tcpdump(['-s', '0', '-i', g.hostIf, '-w', pcap('eth.pcap')]),
      await tcpdump(['-s', '120', '-i', g.hostIf, '-w', pcap('snap.pcap')]),
      await tcpdump(['-s', '0', '--time-stamp-precision=nano', '-i', g.hostIf, '-w', pcap('nano.pcap')]),
      await tcpdump(['-s', '0', '-i', 'any', '-y', 'LINUX_SLL', '-w', pcap('sll.pcap'), `host ${g.guestIp} or host ${V6_GUEST}`]),
      await tcpdump(['-s', '0', '-i', 'any', '-y', 'LINUX_SLL2', '-w', pcap('sll2.pcap'), `host ${g.guestIp} or host ${V6_GUEST}`])
    ]
    try {
      const node = process.execPath
      await inGuest(g, ['getent', 'ahosts', 'first.example.test'])
      await inGuest(g, ['curl', '-s', '-A', 'Aviary-UA/1.0', 'http://www.example.test/path?q=1', 'http://www.example.test/second'])
      await inGuest(g, ['curl', '-s', '--resolve', `post.example.test:8080:${PUBLIC}`, '-d', 'hello=world&x=1',
        'http://post.example.test:8080/post', 'http://post.example.test:8080/missing'])
      await inGuest(g, ['curl', '-s', '-g', `http://[${V6_HOST}]:8080/v6`])
      await inGuest(g, ['curl', '-sk', '--max-time', '5', '--resolve', `tls.example.test:443:${PUBLIC}`, 'https://tls.example.test/'])
      await inGuest(g, [node, '-e', `
        const s = require('dgram').createSocket('udp4')
        s.send(Buffer.from('aviary datagram'), 9999, '${PUBLIC}', () => setTimeout(() => s.close(), 300))`])
      await inGuest(g, [node, '-e', `
        const dp = require(${JSON.stringify(require.resolve('dns-packet'))})
        const c = require('net').connect(53, '${PUBLIC}', () => c.write(dp.streamEncode({ type: 'query', id: 7, questions: [{ type: 'A', name: 'tcp.example.test' }] })))
        c.on('data', () => c.end()); c.on('error', () => {})`])
      await inGuest(g, ['/usr/bin/python3', '-c', `
import socket, struct
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.settimeout(1)
for seq in (1, 2):
    payload = b'aviary-ping!\\x00\\x01'
    h = struct.pack('!BBHHH', 8, 0, 0, 0x4156, seq)
    h = struct.pack('!BBHHH', 8, 0, csum(h + payload), 0x4156, seq)
    s.sendto(h + payload, ('${PUBLIC}', 0))
    try: s.recv(2048)
    except Exception: pass
`])
      await inGuest(g, ['curl', '-s', '--connect-timeout', '5', `http://${DEAD}:81/`], [28])
    } finally {
      for (const c of caps) await c.stop()
    }
    report = await analyzePcap(pcap('eth.pcap'))
  }, 60_000)

  afterAll(async () => {
    for (const s of servers) s.close()
    await run('ip', ['route', 'del', 'blackhole', `${DEAD}/32`]).catch(() => undefined)
    await g?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('hashes the pcap and lists public destinations in first-seen order', async () => {
    expect(report.pcap_sha256).toBe(createHash('sha256').update(readFileSync(pcap('eth.pcap'))).digest('hex'))
    const dsts = (await tshark(pcap('eth.pcap'), 'ip or ipv6', ['ip.dst', 'ipv6.dst'])).map((r) => r[0] || r[1] || '')
    const expected = [...new Set(dsts)].filter((ip) => ip.startsWith('11.'))
    expect(expected).toEqual([PUBLIC, DEAD])
    expect(report.hosts).toEqual(expected)
  })

  it('lists TCP and UDP flows at their first data packet, with byte counts, like tshark', async () => {
    for (const proto of ['tcp', 'udp'] as const) {
      const len = proto === 'tcp' ? 'tcp.len' : 'udp.length'
      const rows = await tshark(pcap('eth.pcap'), `${proto} and not icmp and not icmpv6`, [`${proto}.stream`, 'ip.src', 'ipv6.src', `${proto}.srcport`,
        'ip.dst', 'ipv6.dst', `${proto}.dstport`, 'frame.file_off', 'frame.time_relative', len])
      type Exp = { src: string; sport: number; dst: string; dport: number; offset: number; time: number; bytes_sent: number; bytes_received: number; packets: number }
      const streams = new Map<string, Exp>()
      for (const r of rows) {
        const bytes = Number(r[9]) - (proto === 'udp' ? 8 : 0)
        if (bytes <= 0) continue
        const src = r[1] || r[2] || ''
        const sport = Number(r[3])
        let e = streams.get(r[0] ?? '')
        if (!e) {
          e = { src, sport, dst: r[4] || r[5] || '', dport: Number(r[6]), offset: Number(r[7]), time: Number(r[8]), bytes_sent: 0, bytes_received: 0, packets: 0 }
          streams.set(r[0] ?? '', e)
        }
        e.packets++
        if (src === e.src && sport === e.sport) e.bytes_sent += bytes
        else e.bytes_received += bytes
      }
      const expected = [...streams.values()]
      const got = report[proto]
      expect(got.map(({ time: _t, ...x }) => x)).toEqual(expected.map(({ time: _t, ...x }) => x))
      got.forEach((f, i) => expect(f.time).toBeCloseTo(expected[i]?.time ?? -1, 5))
      expect(expected.length).toBeGreaterThanOrEqual(proto === 'tcp' ? 5 : 3)
    }
  })

  it('reports DNS queries merged per (type, request), their answers, servers and domains like tshark', async () => {
    const TYPES: Record<string, string> = { 1: 'A', 28: 'AAAA', 5: 'CNAME', 65: 'HTTPS', 12: 'PTR' }
    const rows = await tshark(pcap('eth.pcap'), 'dns', ['dns.qry.name', 'dns.qry.type', 'dns.flags.response', 'ip.dst', 'dns.resp.type', 'dns.a', 'dns.aaaa', 'dns.cname'])
    const entries = new Map<string, { request: string; type: string; answers: { type: string; data: string }[] }>()
    const servers: string[] = []
    for (const r of rows) {
      const [name = '', qtype = '', response, dst = ''] = r
      if (response === '0' && !servers.includes(dst)) servers.push(dst)
      const answers: { type: string; data: string }[] = []
      const a = (r[5] ?? '').split('|').filter(Boolean)
      const aaaa = (r[6] ?? '').split('|').filter(Boolean)
      const cname = (r[7] ?? '').split('|').filter(Boolean)
      for (const t of (r[4] ?? '').split('|').filter(Boolean)) {
        const type = TYPES[t] ?? t
        answers.push({ type, data: (type === 'A' ? a : type === 'AAAA' ? aaaa : cname).shift() ?? '' })
      }
      const key = `${qtype}|${name}`
      const e = entries.get(key)
      if (!e) entries.set(key, { request: name, type: TYPES[qtype] ?? qtype, answers })
      else for (const x of answers) if (!e.answers.some((y) => y.type === x.type && y.data === x.data)) e.answers.push(x)
    }
    expect(report.dns).toEqual([...entries.values()])
    expect(report.dns_servers).toEqual(servers)
    expect(report.dns.map((d) => d.request)).toEqual(expect.arrayContaining(['first.example.test', 'www.example.test', 'tcp.example.test']))
    expect(report.dns.find((d) => d.request === 'tcp.example.test')?.answers).toEqual([
      { type: 'CNAME', data: 'alias.example.test' }, { type: 'A', data: '11.204.16.7' }])
    const domains = [...new Set([...entries.values()].map((e) => e.request))]
      .map((domain) => ({ domain, ip: [...entries.values()].filter((e) => e.request === domain)
        .flatMap((e) => e.answers).find((x) => x.type === 'A' || x.type === 'AAAA')?.data ?? '' }))
    expect(report.domains).toEqual(domains)
    expect(report.domains.find((d) => d.domain === 'www.example.test')?.ip).toBe(g.internetIp)
  })

  it('reports HTTP requests (method, host, URI, user agent, body, head) and response status like tshark', async () => {
    const req = await tshark(pcap('eth.pcap'), 'http.request', ['frame.number', 'http.request.method', 'http.host', 'http.request.uri',
      'http.request.version', 'http.user_agent', 'http.request.full_uri', 'tcp.dstport', 'http.file_data', 'http.request.line'])
    const res = await tshark(pcap('eth.pcap'), 'http.response', ['http.request_in', 'http.response.code'])
    const status = new Map(res.map((r) => [r[0], Number(r[1])]))
    const expected = req.map((r) => {
      const [frame = '', method = '', host = '', uri = '', version = '', ua = '', full = '', port = '', body = '', lines = ''] = r
      const data = `${method} ${uri} ${version}\r\n${lines.split('|').join('')}\r\n`.replace(/\\r\\n/g, '\r\n')
      return { count: 1, host, port: Number(port), data, uri: full, body, path: uri, 'user-agent': ua,
        version: version.replace('HTTP/', ''), method, ...(status.has(frame) ? { status: status.get(frame) } : {}) }
    })
    expect(expected.length).toBe(5)
    expect(report.http).toEqual(expected)
    expect(report.http.map((h) => h.status)).toEqual([200, 200, 201, 404, 201])
    expect(report.http[2]?.uri).toBe('http://post.example.test:8080/post')
  })

  it('reports the TLS ClientHello server name and version, and the ServerHello, like tshark', async () => {
    const ch = await tshark(pcap('eth.pcap'), 'tls.handshake.type == 1', ['ip.src', 'tcp.srcport', 'ip.dst', 'tcp.dstport',
      'tls.handshake.extensions_server_name', 'tls.handshake.extensions.supported_version'])
    const sh = await tshark(pcap('eth.pcap'), 'tls.handshake.type == 2', ['tls.handshake.random', 'tls.handshake.session_id', 'tls.handshake.extensions.supported_version'])
    const names: Record<string, string> = { '0x0304': 'TLS 1.3', '0x0303': 'TLS 1.2' }
    expect(ch.length).toBe(1)
    expect(sh.length).toBe(1)
    const [src = '', sport = '', dst = '', dport = '', sni = '', versions = ''] = ch[0] ?? []
    const best = versions.split('|').filter((v) => names[v]).sort().pop() ?? ''
    expect(report.tls).toEqual([{ src, sport: Number(sport), dst, dport: Number(dport), sni, version: names[best],
      server_version: names[sh[0]?.[2] ?? ''], server_random: sh[0]?.[0]?.replace(/:/g, ''), session_id: sh[0]?.[1]?.replace(/:/g, '') }])
    expect(sni).toBe('tls.example.test')
  })

  it('reports ICMP (echo data, port unreachable) and the dead host like tshark', async () => {
    const rows = await tshark(pcap('eth.pcap'), 'icmp', ['ip.src', 'ip.dst', 'icmp.type', 'data.data'])
    expect(report.icmp.map(({ data: _d, ...x }) => x)).toEqual(rows.map((r) => ({ src: r[0]?.split('|')[0], dst: r[1]?.split('|')[0], type: Number(r[2]?.split('|')[0]) })))
    const echo = report.icmp.filter((i) => i.type === 8 || i.type === 0)
    expect(echo.length).toBe(4)
    expect(echo.every((e) => e.data === 'aviary-ping!\\x00\\x01')).toBe(true)
    expect(rows.filter((r) => r[2] === '8').map((r) => r[3])).toEqual(Array(2).fill(Buffer.from('aviary-ping!\x00\x01').toString('hex')))
    expect(report.icmp.some((i) => i.type === 3 && i.src === PUBLIC)).toBe(true)
    const syns = await tshark(pcap('eth.pcap'), `ip.dst == ${DEAD} and tcp.flags.syn == 1`, ['tcp.dstport'])
    expect(syns.length).toBeGreaterThanOrEqual(3)
    expect(report.dead_hosts).toEqual([[DEAD, 81]])
  })

  it('gives the same report for SLL, SLL2, nanosecond, raw-IP and big-endian files of the same traffic', async () => {
    const base = linkIndependent(report)
    for (const f of ['sll.pcap', 'sll2.pcap', 'nano.pcap']) expect(linkIndependent(await analyzePcap(pcap(f)))).toEqual(base)
    const eth = readFileSync(pcap('eth.pcap'))
    writeFileSync(pcap('raw.pcap'), convertPcap(eth, { bigEndian: false, rawIp: true }))
    writeFileSync(pcap('be.pcap'), convertPcap(eth, { bigEndian: true, rawIp: false }))
    expect(linkIndependent(await analyzePcap(pcap('raw.pcap')))).toEqual(base)
    const be = await analyzePcap(pcap('be.pcap'))
    expect({ ...be, pcap_sha256: '' }).toEqual({ ...report, pcap_sha256: '' })
    const nano = await analyzePcap(pcap('nano.pcap'))
    const times = await tshark(pcap('nano.pcap'), 'tcp.len > 0', ['frame.time_relative'])
    expect(nano.tcp[0]?.time).toBeCloseTo(Number(times[0]?.[0]), 8)
  })

  it('survives a small snap length and still reads what the first bytes hold', async () => {
    const snap = await analyzePcap(pcap('snap.pcap'))
    expect(snap.hosts).toEqual(report.hosts)
    // Byte counts come from the IP headers, so cut packets still count in full.
    expect(snap.tcp.map(({ offset: _o, time: _t, ...x }) => x)).toEqual(report.tcp.map(({ offset: _o, time: _t, ...x }) => x))
    const methods = await tshark(pcap('snap.pcap'), 'http.request', ['http.request.method', 'http.request.uri'])
    for (const [m, u] of methods) expect(snap.http.some((h) => h.method === m && h.path === u)).toBe(true)
    expect(snap.tls[0]?.sni ?? '').toBe('') // the ClientHello's extensions are past 120 bytes
  })

  it('reads a file cut in the middle of a packet up to the cut', async () => {
    const eth = readFileSync(pcap('eth.pcap'))
    const rows = await tshark(pcap('eth.pcap'), 'frame', ['frame.file_off'])
    const cutAt = Number(rows[Math.floor(rows.length / 2)]?.[0]) + 20
    writeFileSync(pcap('cut.pcap'), eth.subarray(0, cutAt))
    const cut = await analyzePcap(pcap('cut.pcap'))
    expect(cut.tcp.length).toBeGreaterThan(0)
    expect(cut.tcp.every((f) => f.offset < cutAt)).toBe(true)
    expect(report.tcp.slice(0, cut.tcp.length).map((f) => f.offset)).toEqual(cut.tcp.map((f) => f.offset))
  })

  it('refuses pcapng, garbage, empty files and unknown link types with a clear error; a missing file is an empty report', async () => {
    await run('editcap', ['-F', 'pcapng', pcap('eth.pcap'), pcap('ng.pcapng')])
    await expect(analyzePcap(pcap('ng.pcapng'))).rejects.toThrow(/pcapng is not supported/)
    writeFileSync(pcap('garbage.pcap'), Buffer.from('this is not a capture at all, just some text\n'))
    await expect(analyzePcap(pcap('garbage.pcap'))).rejects.toThrow(PcapFormatError)
    writeFileSync(pcap('empty.pcap'), Buffer.alloc(0))
    await expect(analyzePcap(pcap('empty.pcap'))).rejects.toThrow(/empty file/)
    const weird = Buffer.from(readFileSync(pcap('eth.pcap')).subarray(0, 24))
    weird.writeUInt32LE(147, 20)
    writeFileSync(pcap('weird.pcap'), weird)
    await expect(analyzePcap(pcap('weird.pcap'))).rejects.toThrow(/unsupported pcap link type 147/)
    const huge = Buffer.concat([readFileSync(pcap('eth.pcap')).subarray(0, 24), Buffer.alloc(16, 0xff)])
    writeFileSync(pcap('huge.pcap'), huge)
    await expect(analyzePcap(pcap('huge.pcap'))).rejects.toThrow(/corrupt pcap/)
    expect(await analyzePcap(pcap('does-not-exist.pcap'))).toMatchObject({ hosts: [], tcp: [], pcap_sha256: '' })
  })

  it('does not crash on packets with random bytes', async () => {
    const eth = Buffer.from(readFileSync(pcap('eth.pcap')))
    let seed = 16
    const rnd = (): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed }
    for (let round = 0; round < 5; round++) {
      const copy = Buffer.from(eth)
      for (let off = 24; off + 16 <= copy.length;) {
        const caplen = copy.readUInt32LE(off + 8)
        // Every packet gets a few random bytes past its Ethernet header.
        for (let k = 0; k < 4 && caplen > 14; k++) copy[off + 16 + 14 + (rnd() % (caplen - 14))] = rnd() & 0xff
        off += 16 + caplen
      }
      writeFileSync(pcap('fuzz.pcap'), copy)
      const logs: string[] = []
      const r = await analyzePcap(pcap('fuzz.pcap'), { log: (m) => logs.push(m) })
      expect(r.pcap_sha256).toMatch(/^[0-9a-f]{64}$/)
      expect(logs.filter((l) => !/malformed packets skipped/.test(l))).toEqual([])
    }
  })

  it('leaves out safelisted addresses and domains', async () => {
    const r = await analyzePcap(pcap('eth.pcap'), { safelist: [DEAD, 'www.example.test'] })
    expect(r.hosts).toEqual([PUBLIC])
    expect(r.dead_hosts).toEqual([])
    expect(r.dns.some((d) => d.request === 'www.example.test')).toBe(false)
    expect(r.domains.some((d) => d.domain === 'www.example.test')).toBe(false)
  })
})
