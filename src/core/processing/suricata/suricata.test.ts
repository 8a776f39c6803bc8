// The IDS step on real traffic: a network-namespace guest (index 17) makes crafted flows against
// servers on the host — an executable and an ELF downloaded over HTTP, a dynamic-DNS lookup, an
// IRC registration, a reverse shell's `id` output, and benign traffic (a page, a lookup, a TLS
// handshake, TLS 1.2 so that the certificate is in the clear) — captured by real tcpdump on the veth, whose checksum offload leaves packets with
// checksums the NIC would have filled in. Real Suricata (Debian's 7, bookworm-backports) runs over
// the capture: exactly Aviary's expected rules fire and no checksum or stream noise is reported;
// each alert's 5-tuple and timestamp are tshark's decoding of the packet Suricata names
// (pcap_cnt = tshark's frame number); the TLS handshake's JA3 is tshark's. A mitm=1 run through a
// real mitmdump with Aviary's addon: the decrypted HTTPS is seen by the IDS on the guest's real
// connection. The pipeline's report carries the section, fits the schema, and its alerts feed the
// signatures and the score.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net'
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls'
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https'
import { Mitm } from '../../network/mitm'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNetnsGuest, type NetnsGuest } from '../../../../test/guests/netns-guest'
import { schemaProblems } from '../../../../test/report-contract'
import { missingConsumerFields } from '../../../../test/cuckoo-report-fields'
import { SuricataSchema, type SuricataReport } from './eve'
import { suricataStep } from './index'
import { importRuleSet, listRuleSets } from './rulesets'
import { processAnalysis } from '../pipeline'
import { createFileTypeDetector } from '../../hashing/magic'

const run = promisify(execFile)
const INDEX = 17
const AVIARY_SIDS = [1100001, 1100002, 1100003, 1100004, 1100005, 1100006]

/** A PE as a downloader fetches one: MZ, the DOS stub's sentence, padding. */
const PE = Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00', 'latin1'), Buffer.alloc(56), Buffer.from('\x0e\x1f\xba\x0e\x00\xb4\x09\xcd\x21This program cannot be run in DOS mode.\r\r\n$', 'latin1'), Buffer.alloc(2000, 0x41)])
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(3000, 0x42)])

function waitExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
}

async function inGuest(g: NetnsGuest, cmd: string[]): Promise<string> {
  const child = g.exec(cmd)
  let out = ''
  let err = ''
  child.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  child.stderr?.on('data', (b: Buffer) => { err += b.toString() })
  const code = await waitExit(child)
  if (code !== 0) throw new Error(`${cmd.join(' ')} exited ${code}: ${err}`)
  return out
}

async function tcpdump(args: string[]): Promise<{ stop(): Promise<void> }> {
  const p = spawn('tcpdump', ['-U', '-n', '-Z', 'root', ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  await new Promise<void>((resolve, reject) => {
    p.stderr.on('data', (b: Buffer) => { err += b.toString(); if (err.includes('listening on')) resolve() })
    p.once('exit', (code) => reject(new Error(`tcpdump exited ${code}: ${err}`)))
  })
  return {
    stop: async () => {
      await new Promise((r) => setTimeout(r, 1500))
      p.kill('SIGTERM')
      await waitExit(p)
    }
  }
}

/** tshark's fields of one frame. */
async function frame(file: string, n: number, fields: string[]): Promise<string[]> {
  const args = ['-r', file, '-n', '-Y', `frame.number == ${n}`, '-T', 'fields', '-E', 'separator=\t', '-E', 'occurrence=f']
  for (const f of fields) args.push('-e', f)
  const { stdout } = await run('tshark', args)
  return stdout.replace(/\n$/, '').split('\t')
}

/** Suricata's "2026-11-28T09:08:00.212709+0000" as microseconds since the epoch. */
function micros(ts: string): bigint {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{6})([+-]\d\d)(\d\d)$/.exec(ts)
  if (m === null) throw new Error(`not a Suricata timestamp: ${ts}`)
  return BigInt(Date.parse(`${m[1]}${m[3]}:${m[4]}`)) * 1000n + BigInt(m[2]!)
}
/** tshark's frame.time_epoch ("1764320880.212709000") as microseconds. */
const epochMicros = (s: string): bigint => { const [a = '0', b = ''] = s.split('.'); return BigInt(a) * 1_000_000n + BigInt((b + '000000').slice(0, 6)) }

let work = ''
let guest: NetnsGuest
let pcap = ''
let certFile = ''
let keyFile = ''
const servers: (HttpServer | TcpServer | TlsServer)[] = []
const listen = (s: HttpServer | TcpServer | TlsServer, ip: string, port: number): Promise<void> =>
  new Promise((resolve, reject) => { s.once('error', reject); s.listen(port, ip, () => resolve()); servers.push(s) })

function dataDir(name: string): { dir: string; suricataDir: string } {
  const dir = path.join(work, name)
  mkdirSync(dir, { recursive: true })
  copyFileSync(pcap, path.join(dir, 'dump.pcap'))
  return { dir, suricataDir: path.join(work, `${name}-data`, 'suricata') }
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'aviary-suricata-'))
  certFile = path.join(work, 'cert.pem')
  keyFile = path.join(work, 'key.pem')
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=ids.test', '-keyout', keyFile, '-out', certFile])
  guest = await createNetnsGuest({ index: INDEX })
  const ip = guest.internetIp
  await listen(createHttpServer((req, res) => {
    const body = req.url === '/setup.exe' ? PE : req.url === '/tool' ? ELF : Buffer.from('<html><body>hello</body></html>')
    res.writeHead(200, { 'content-type': req.url === '/setup.exe' || req.url === '/tool' ? 'application/octet-stream' : 'text/html', 'content-length': body.length })
    res.end(body)
  }), ip, 8080)
  // IRC and the reverse shell's listener: read, answer a line, close.
  await listen(createTcpServer((s) => { s.once('data', () => s.end(':irc.test 001 bot :Welcome\r\n')); s.on('error', () => undefined) }), ip, 6667)
  await listen(createTcpServer((s) => { s.once('data', () => s.end()); s.on('error', () => undefined) }), ip, 4444)
  await listen(createTlsServer({ key: readFileSync(keyFile), cert: readFileSync(certFile), maxVersion: 'TLSv1.2' }, (s) => { s.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'); s.on('error', () => undefined) }), ip, 8443)

  pcap = path.join(work, 'lab.pcap')
  const cap = await tcpdump(['-i', guest.hostIf, '-w', pcap, 'not', 'arp'])
  try {
    await inGuest(guest, ['curl', '-s', '-o', '/dev/null', `http://${ip}:8080/index.html`])
    await inGuest(guest, ['getent', 'ahostsv4', 'www.example.org'])
    await inGuest(guest, ['curl', '-s', '-k', '-o', '/dev/null', `https://${ip}:8443/`])
    await inGuest(guest, ['curl', '-s', '-o', '/dev/null', `http://${ip}:8080/setup.exe`])
    await inGuest(guest, ['curl', '-s', '-o', '/dev/null', '--resolve', `updates.test:8080:${ip}`, 'http://updates.test:8080/tool'])
    await inGuest(guest, ['getent', 'ahostsv4', 'c2-node.duckdns.org'])
    const node = process.execPath
    await inGuest(guest, [node, '-e', `const s=require('net').connect(6667,'${ip}',()=>s.write('NICK bot123\\r\\nUSER bot 0 * :bot\\r\\n'));s.on('data',()=>s.end());s.on('error',()=>{})`])
    await inGuest(guest, [node, '-e', `const s=require('net').connect(4444,'${ip}',()=>s.end('uid=0(root) gid=0(root) groups=0(root)\\n'));s.on('error',()=>{})`])
  } finally {
    await cap.stop()
  }
}, 120_000)

afterAll(async () => {
  for (const s of servers) {
    s.close()
    if ('closeAllConnections' in s) s.closeAllConnections()
  }
  await guest?.close()
  if (work) rmSync(work, { recursive: true, force: true })
})

describe('the IDS step on crafted flows', () => {
  let report: SuricataReport
  let dir = ''

  beforeAll(async () => {
    const d = dataDir('lab')
    dir = d.dir
    const errors: string[] = []
    report = await suricataStep({ dir, suricataDir: d.suricataDir, log: () => undefined, errors })
    expect(errors).toEqual([])
  }, 120_000)

  it('the capture really has checksum-offloaded packets (so "no checksum noise" means something)', async () => {
    const { stdout } = await run('tshark', ['-r', pcap, '-n', '-o', 'tcp.check_checksum:TRUE', '-Y', 'tcp.checksum.status == 0', '-T', 'fields', '-e', 'frame.number'])
    expect(stdout.trim().split('\n').filter(Boolean).length).toBeGreaterThan(10)
  })

  it('gives exactly the expected alerts of Aviary\'s rules, once each, and no noise', () => {
    expect(report.skipped).toBeNull()
    expect(schemaProblems(report, SuricataSchema)).toEqual([])
    expect(report.version).toMatch(/^7\./)
    expect(report.rulesets.map((s) => s.name)).toEqual(['bundled', 'aviary'])
    expect(report.rules_loaded).toBeGreaterThan(300)
    expect(report.rules_failed).toBe(0)
    expect(report.alerts.map((a) => a.sid).sort()).toEqual(AVIARY_SIDS)
    expect(report.alerts.every((a) => a.source === 'capture')).toBe(true)
    // Nothing had to be suppressed: checksum checks are off, the flows are whole.
    expect(report.suppressed).toEqual({})
    const bySid = new Map(report.alerts.map((a) => [a.sid, a]))
    expect(bySid.get(1100001)).toMatchObject({ signature: 'AVIARY HTTP download of a Windows executable', category: 'Potentially Bad Traffic', severity: 2, protocol: 'TCP', app_proto: 'http', src_ip: guest.internetIp, src_port: 8080, dst_ip: guest.guestIp })
    expect(bySid.get(1100003)).toMatchObject({ protocol: 'UDP', src_ip: guest.guestIp, dst_ip: guest.internetIp, dst_port: 53, app_proto: 'dns' })
    expect(bySid.get(1100004)).toMatchObject({ category: 'A Network Trojan was detected', severity: 1, dst_port: 6667 })
    expect(bySid.get(1100005)).toMatchObject({ severity: 1, dst_port: 4444, src_ip: guest.guestIp })
  })

  it('each alert\'s 5-tuple and timestamp are those tshark decodes from the packet Suricata names', async () => {
    for (const a of report.alerts) {
      expect(a.pcap_cnt, String(a.sid)).not.toBeNull()
      const [src, dst, tsport, tdport, usport, udport, proto, epoch] = await frame(pcap, a.pcap_cnt!, ['ip.src', 'ip.dst', 'tcp.srcport', 'tcp.dstport', 'udp.srcport', 'udp.dstport', 'ip.proto', 'frame.time_epoch'])
      expect({ sid: a.sid, src: a.src_ip, dst: a.dst_ip, sport: a.src_port, dport: a.dst_port, proto: a.protocol }).toEqual({
        sid: a.sid, src, dst, sport: Number(tsport || usport), dport: Number(tdport || udport), proto: proto === '6' ? 'TCP' : proto === '17' ? 'UDP' : proto
      })
      expect(micros(a.timestamp)).toBe(epochMicros(epoch!))
    }
  })

  it('reads HTTP, DNS, TLS with JA3 (tshark\'s) and the files, in Cuckoo\'s keys', async () => {
    const urls = report.http.map((h) => `${h.hostname ?? ''}${h.url ?? ''} ${h.status}`).sort()
    expect(urls).toEqual([`${guest.internetIp}/index.html 200`, `${guest.internetIp}/setup.exe 200`, 'updates.test/tool 200'])
    expect(report.http.find((h) => h.url === '/setup.exe')).toMatchObject({ method: 'GET', content_type: 'application/octet-stream', user_agent: expect.stringMatching(/^curl\//) as unknown, referer: null, length: PE.length })
    const names = new Set(report.dns.map((d) => d.rrname))
    expect(names).toEqual(new Set(['www.example.org', 'c2-node.duckdns.org']))
    const answer = report.dns.find((d) => d.type === 'answer' && d.rrname === 'c2-node.duckdns.org')
    expect(answer?.answers.map((x) => x.rdata)).toEqual([guest.internetIp])
    expect(report.tls).toHaveLength(1)
    const tls = report.tls[0]!
    expect(tls).toMatchObject({ dst_port: 8443, subject: 'CN=ids.test', issuer: 'CN=ids.test' })
    const { stdout } = await run('tshark', ['-r', pcap, '-n', '-Y', 'tls.handshake.type == 1', '-T', 'fields', '-e', 'tls.handshake.ja3', '-e', 'tls.handshake.ja3_full'])
    const [hash, full] = stdout.trim().split('\t')
    expect(tls.ja3).toEqual({ hash, string: full })
    expect(tls.ja3s?.hash).toMatch(/^[0-9a-f]{32}$/)
    const exe = report.files.find((f) => f.filename === 'setup.exe')
    expect(exe).toMatchObject({ filesize: PE.length, hostname: guest.internetIp, uri: '/setup.exe', state: 'CLOSED', gaps: false })
    const { createHash } = await import('node:crypto')
    expect(exe?.sha256).toBe(createHash('sha256').update(PE).digest('hex'))
    expect(exe?.md5).toBe(createHash('md5').update(PE).digest('hex'))
  })

  it('keeps Suricata\'s configuration, log and eve.json in the analysis folder', () => {
    for (const f of ['suricata.yaml', 'suricata.log', 'eve.json']) expect(existsSync(path.join(dir, 'suricata', f)), f).toBe(true)
  })
})

describe('noise, settings and rule sets', () => {
  it('suppresses by sid and by signature text as suricata.json says, and counts what it left out', async () => {
    const d = dataDir('suppress')
    mkdirSync(d.suricataDir, { recursive: true })
    writeFileSync(path.join(d.suricataDir, 'suricata.json'), JSON.stringify({ suppress: { sids: [1100003], signatures: ['AVIARY IRC'] } }))
    const r = await suricataStep({ dir: d.dir, suricataDir: d.suricataDir, log: () => undefined, errors: [] })
    expect(r.alerts.map((a) => a.sid).sort()).toEqual([1100001, 1100002, 1100005, 1100006])
    expect(r.suppressed).toEqual({ 1100003: 1, 1100004: 1 })
  }, 60_000)

  it('is skipped with a reason: no Suricata, no rules, a capture too large, a wrong settings file', async () => {
    const d = dataDir('skips')
    mkdirSync(d.suricataDir, { recursive: true })
    const settings = path.join(d.suricataDir, 'suricata.json')
    const step = (): Promise<SuricataReport> => suricataStep({ dir: d.dir, suricataDir: d.suricataDir, log: () => undefined, errors: [] })
    writeFileSync(settings, JSON.stringify({ binary: '/nonexistent/suricata' }))
    expect((await step()).skipped).toMatch(/^Suricata is not installed \(no '\/nonexistent\/suricata'\): scripts\/install-debian-deps.sh/)
    writeFileSync(settings, JSON.stringify({ bundled_rules: false }))
    const none = await suricataStep({ dir: d.dir, suricataDir: d.suricataDir, log: () => undefined, errors: [], aviaryRules: path.join(work, 'no-such.rules') })
    expect(none.skipped).toMatch(/^no rules/)
    writeFileSync(settings, JSON.stringify({ max_pcap_size: '1K' }))
    expect((await step()).skipped).toMatch(/^the capture \(\d+ bytes\) is larger than max_pcap_size \(1024 bytes\)$/)
    writeFileSync(settings, JSON.stringify({ suppress: { sids: ['x'] } }))
    expect((await step()).skipped).toBe('the settings are wrong: suricata.json: suppress.sids: must be a list of signature ids')
    writeFileSync(settings, JSON.stringify({ timeout: 0.001 }))
    const errors: string[] = []
    const cut = await suricataStep({ dir: d.dir, suricataDir: d.suricataDir, log: () => undefined, errors })
    expect(cut.skipped).toBeNull()
    expect(errors).toEqual(['suricata: stopped after 0.001 s on the capture; its results are partial'])
  }, 60_000)

  it('imports an ET-style tarball (rules/*.rules only) and its rules fire; a hostile entry name cannot escape', async () => {
    const d = dataDir('imported')
    const src = path.join(work, 'et')
    mkdirSync(path.join(src, 'rules'), { recursive: true })
    writeFileSync(path.join(src, 'rules', 'emerging-test.rules'), [
      '# ET-style set',
      'alert http any any -> any any (msg:"ET TEST index page"; http.uri; content:"/index.html"; classtype:policy-violation; sid:2999001; rev:1;)',
      '#alert http any any -> any any (msg:"ET TEST disabled"; http.uri; content:"/"; sid:2999002; rev:1;)', ''].join('\n'))
    writeFileSync(path.join(src, 'rules', 'evil.rules'), 'alert tcp any any -> any any (msg:"ET TEST never"; content:"zzzz-never-zzzz"; sid:2999003; rev:1;)\n')
    writeFileSync(path.join(src, 'rules', 'classification.config'), 'config classification: x,y,1\n')
    const tarball = path.join(work, 'emerging.rules.tar.gz')
    // A hostile member name (../../escape.rules): the import keeps base names only.
    await run('tar', ['-czf', tarball, '-C', src, '--transform', 's,^rules/evil.rules$,../../escape.rules,', 'rules/emerging-test.rules', 'rules/evil.rules', 'rules/classification.config'])
    const { set } = await importRuleSet(d.suricataDir, tarball, { fileName: 'emerging.rules.tar.gz' })
    expect(set).toMatchObject({ name: 'emerging', kind: 'imported', rules: 2, source: 'emerging.rules.tar.gz' })
    expect(set.files.map((f) => path.basename(f))).toEqual(['emerging-test.rules', 'escape.rules'])
    for (const f of set.files) expect(f.startsWith(path.join(d.suricataDir, 'rules', 'emerging') + path.sep)).toBe(true)
    expect(existsSync(path.join(work, 'escape.rules'))).toBe(false)
    expect(listRuleSets(d.suricataDir, { bundledRules: '/etc/suricata/rules' }).map((s) => s.name)).toEqual(['bundled', 'aviary', 'emerging'])
    const r = await suricataStep({ dir: d.dir, suricataDir: d.suricataDir, log: () => undefined, errors: [] })
    expect(r.rulesets.map((s) => s.name)).toEqual(['bundled', 'aviary', 'emerging'])
    expect(r.alerts.filter((a) => a.sid === 2999001).map((a) => a.dst_port)).toEqual([8080])
    await expect(importRuleSet(d.suricataDir, tarball, { fileName: 'emerging.rules.tar.gz' })).rejects.toThrow(/^name: a rule set named 'emerging' exists/)
    await expect(importRuleSet(d.suricataDir, Buffer.from('not rules'), { fileName: 'x.txt' })).rejects.toThrow(/^file: neither/)
    await expect(importRuleSet(d.suricataDir, Buffer.from('# nothing\n'), { fileName: 'x.rules' })).rejects.toThrow(/^file: holds no rules/)
    await expect(importRuleSet(d.suricataDir, tarball, { fileName: 'e.tar.gz', name: 'aviary' })).rejects.toThrow(/built-in set/)
  }, 60_000)
})

describe('mitm=1: the decrypted HTTPS', () => {
  it('is seen by the IDS on the guest\'s real connection, as a pcap tshark reads as HTTP', async () => {
    const d = dataDir('mitm')
    const upstream = createHttpsServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (req, res) => {
      const body = req.url === '/setup.exe' ? PE : Buffer.from('fine')
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
      res.end(body)
    })
    await listen(upstream, '127.0.0.1', 0)
    const upPort = (upstream.address() as { port: number }).port
    const mitm = new Mitm({ mitmdump: 'mitmdump', ip: '127.0.0.1', confdir: path.join(work, 'mitm-conf'), analysisDir: d.dir, mode: `reverse:https://127.0.0.1:${upPort}` })
    let clientPort = 0
    await mitm.start()
    try {
      for (const p of ['/page', '/setup.exe']) {
        await new Promise<void>((resolve, reject) => {
          const req = httpsRequest({ host: '127.0.0.1', port: mitm.port, path: p, servername: 'downloads.test', headers: { host: 'downloads.test' }, ca: readFileSync(mitm.caCert!), agent: false }, (res) => {
            if (p === '/setup.exe') clientPort = res.socket.localPort ?? 0
            res.resume()
            res.on('end', () => resolve())
          })
          req.on('error', reject)
          req.end()
        })
      }
    } finally {
      await mitm.stop()
    }
    const errors: string[] = []
    const r = await suricataStep({ dir: d.dir, suricataDir: d.suricataDir, log: () => undefined, errors })
    expect(errors).toEqual([])
    // The capture's alerts, and the decrypted exchange's: the executable that came over HTTPS.
    expect(r.alerts.filter((a) => a.source === 'capture').map((a) => a.sid).sort()).toEqual(AVIARY_SIDS)
    const decrypted = r.alerts.filter((a) => a.source === 'decrypted')
    expect(decrypted.map((a) => a.sid)).toEqual([1100001])
    expect(decrypted[0]).toMatchObject({ src_ip: '127.0.0.1', src_port: upPort, dst_ip: '127.0.0.1', dst_port: clientPort, app_proto: 'http' })
    expect(r.http.filter((h) => h.source === 'decrypted').map((h) => `${h.hostname ?? ''}${h.url ?? ''} ${h.status}`).sort()).toEqual(['downloads.test/page 200', 'downloads.test/setup.exe 200'])
    expect(r.files.find((f) => f.source === 'decrypted' && f.filename === 'setup.exe')?.filesize).toBe(PE.length)
    // The pcap written for Suricata is one tshark reads: HTTP on those ports, every checksum right (status 1: good).
    const decryptedPcap = path.join(d.dir, 'suricata', 'decrypted.pcap')
    const { stdout } = await run('tshark', ['-r', decryptedPcap, '-n', '-o', 'tcp.check_checksum:TRUE', '-o', 'ip.check_checksum:TRUE', '-d', `tcp.port==${upPort},http`,
      '-Y', 'http.request', '-T', 'fields', '-e', 'tcp.srcport', '-e', 'tcp.dstport', '-e', 'http.request.uri', '-e', 'tcp.checksum.status', '-e', 'ip.checksum.status'])
    expect(stdout.trim().split('\n').map((l) => l.split('\t'))).toEqual([
      [expect.any(String), String(upPort), '/page', '1', '1'], [String(clientPort), String(upPort), '/setup.exe', '1', '1']
    ])
    upstream.close()
  }, 90_000)

  it('without a capture (tcpdump failed), the decrypted exchanges are still read; with neither, the step says so', async () => {
    const dir = path.join(work, 'no-capture')
    mkdirSync(path.join(dir, 'mitm'), { recursive: true })
    const step = () => suricataStep({ dir, suricataDir: null, log: () => undefined, errors: [] })
    expect((await step()).skipped).toBe('the task has no packet capture')
    const failed = { type: 'tls_failed', time: 1764320000, client: ['10.0.0.5', 40001], server: ['198.51.100.8', 443], sni: 'pinned.example', error: 'certificate unknown' }
    writeFileSync(path.join(dir, 'mitm', 'flows.jsonl'), JSON.stringify(failed) + '\n')
    expect((await step()).skipped).toBe('the task has no packet capture, and the proxy decrypted nothing')
    const flow = { type: 'flow', time: 1764320001.5, client: ['10.0.0.5', 40002], server: ['198.51.100.7', 443], sni: 'dl.example', scheme: 'https', method: 'GET',
      host: 'dl.example', port: 443, path: '/setup.exe', http_version: 'HTTP/2.0',
      request: { headers: [[':authority', 'dl.example'], ['user-agent', 'curl/8.5']], body_b64: '', body_size: 0, truncated: false },
      response: { status: 200, reason: '', headers: [['content-type', 'application/octet-stream'], ['transfer-encoding', 'chunked']], body_b64: PE.toString('base64'), body_size: PE.length, truncated: false },
      error: null }
    writeFileSync(path.join(dir, 'mitm', 'flows.jsonl'), [failed, flow].map((f) => JSON.stringify(f)).join('\n') + '\n')
    const r = await step()
    expect(r.skipped).toBeNull()
    expect(r.alerts.map((a) => [a.sid, a.source, a.src_ip, a.src_port, a.dst_ip, a.dst_port])).toEqual([[1100001, 'decrypted', '198.51.100.7', 443, '10.0.0.5', 40002]])
    expect(r.http.map((h) => [h.hostname, h.url, h.status, h.user_agent, h.length])).toEqual([['dl.example', '/setup.exe', '200', 'curl/8.5', PE.length]])
  }, 60_000)
})

describe('the report', () => {
  it('carries the section; its alerts feed the signatures and the score', async () => {
    const d = dataDir('report')
    const task = { id: 7, category: 'file', guest: {}, errors: [] }
    copyFileSync('/bin/true', path.join(d.dir, 'binary'))
    const detectType = createFileTypeDetector()
    const result = await processAnalysis({ taskId: 7, dir: d.dir, task, sample: { path: path.join(d.dir, 'binary'), name: 'true', type: null }, url: null, yaraRules: null,
      suricataDir: d.suricataDir, log: () => undefined }, { detectType, aviaryVersion: '0.0.0-test' })
    const r = JSON.parse(readFileSync(path.join(d.dir, 'reports/report.json'), 'utf8')) as Record<string, unknown>
    expect(schemaProblems(r)).toEqual([])
    expect(Object.keys(r).indexOf('suricata')).toBe(Object.keys(r).indexOf('network') + 1)
    expect(((r.suricata as SuricataReport).alerts).map((a) => a.sid).sort()).toEqual(AVIARY_SIDS)
    const sigs = r.signatures as { name: string; severity: number; marks: { sid?: number }[] }[]
    const high = sigs.find((s) => s.name === 'suricata_alert_high')
    const medium = sigs.find((s) => s.name === 'suricata_alert')
    expect(high?.severity).toBe(3)
    expect(high?.marks.map((m) => m.sid).sort()).toEqual([1100004, 1100005])
    expect(medium?.severity).toBe(2)
    expect(medium?.marks.map((m) => m.sid).sort()).toEqual([1100001, 1100002, 1100003, 1100006])
    expect(result.score).toBeGreaterThanOrEqual(1)
    // Cortex's analyzer reads signature, dst_ip, dst_port and severity of every alert.
    expect(missingConsumerFields(r, 'file', ['Cortex'])).toEqual([])
    expect(readFileSync(path.join(d.dir, 'reports/report.html'), 'utf8')).toContain('AVIARY reverse shell: id output sent to a remote host')
  }, 120_000)
})
