// The servers of a routed lab's "internet" and "LAN" (test/guests/routed-lab.ts), run inside their
// namespaces: HTTP on 80, HTTPS on 443 (a certificate of the lab's own), a UDP echo on 7, and with
// --dns a DNS server on 53 that answers every A question with this server's address. Every
// contact is logged as a JSON line (proto, port, client address, and the path or name asked for),
// so a test can see who reached it and from which address (the NAT's or the guest's).
//   node lab-servers.mjs --ip 198.51.100.7 --name upstream --log FILE [--cert C --key K] [--dns]
import { appendFileSync, readFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import dgram from 'node:dgram'
import { parseArgs } from 'node:util'
import dnsPacket from 'dns-packet'

const { values: o } = parseArgs({ options: { ip: { type: 'string' }, name: { type: 'string' }, log: { type: 'string' }, cert: { type: 'string' }, key: { type: 'string' }, dns: { type: 'boolean' } } })
const log = (entry) => appendFileSync(o.log, JSON.stringify({ time: Date.now(), ...entry }) + '\n')
const client = (req) => (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '')

const handler = (proto) => (req, res) => {
  log({ proto, port: proto === 'https' ? 443 : 80, client: client(req), path: req.url, host: req.headers.host ?? null })
  req.resume()
  // /big?bytes=N: N bytes of zeros, for throughput measurements (bench/routes.bench.mjs).
  const big = /^\/big\?bytes=(\d+)$/.exec(req.url ?? '')
  if (big) {
    let left = Number(big[1])
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': left })
    const chunk = Buffer.alloc(1024 * 1024)
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length)
        left -= n
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return
      }
      res.end()
    }
    res.on('drain', pump)
    pump()
    return
  }
  const body = req.url === '/secret' ? 'secret payload over tls\n' : `${o.name} answers ${client(req)}\n`
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), 'x-lab': o.name })
  res.end(body)
}
http.createServer(handler('http')).listen(80, o.ip)
if (o.cert && o.key) https.createServer({ cert: readFileSync(o.cert), key: readFileSync(o.key) }, handler('https')).listen(443, o.ip)

const echo = dgram.createSocket('udp4')
echo.on('message', (msg, r) => {
  log({ proto: 'udp', port: 7, client: r.address })
  echo.send(msg, r.port, r.address)
})
echo.bind(7, o.ip)

if (o.dns) {
  const dns = dgram.createSocket('udp4')
  dns.on('message', (msg, r) => {
    let q
    try { q = dnsPacket.decode(msg) } catch { return }
    const questions = q.questions ?? []
    log({ proto: 'dns', port: 53, client: r.address, name: questions[0]?.name ?? null })
    dns.send(dnsPacket.encode({
      id: q.id, type: 'response', flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE, questions,
      answers: questions.filter((x) => x.type === 'A').map((x) => ({ type: 'A', name: x.name, ttl: 60, data: o.ip }))
    }), r.port, r.address)
  })
  dns.bind(53, o.ip)
}
process.stdout.write('ready\n')
