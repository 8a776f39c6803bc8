// A listener on every address of the routed lab's host namespace (test/guests/routed-lab.ts),
// IPv4 and IPv6: TCP on --port and UDP on --port + 1. It stands for the analyst host's own
// services (its bridge, uplink and LAN addresses, link-local ones included): every contact is
// logged as a JSON line (proto, the local address it reached, the client), so a test sees from
// outside the guest whether anything of a guest got through.
//   node host-listener.mjs --log FILE --port 7000
import { appendFileSync } from 'node:fs'
import net from 'node:net'
import dgram from 'node:dgram'
import { parseArgs } from 'node:util'

const { values: o } = parseArgs({ options: { log: { type: 'string' }, port: { type: 'string' } } })
const port = Number(o.port ?? 7000)
const plain = (a) => (a ?? '').replace(/^::ffff:/, '')
const log = (entry) => appendFileSync(o.log, JSON.stringify({ time: Date.now(), ...entry }) + '\n')

const tcp = net.createServer((s) => {
  log({ proto: 'tcp', port, local: plain(s.localAddress), client: plain(s.remoteAddress) })
  s.on('error', () => undefined)
  s.end('host answers\n')
})
tcp.listen({ port, host: '::', ipv6Only: false })

const udp = dgram.createSocket({ type: 'udp6', ipv6Only: false })
udp.on('message', (msg, r) => {
  log({ proto: 'udp', port: port + 1, client: plain(r.address) })
  udp.send(msg, r.port, r.address)
})
udp.bind(port + 1, '::')
tcp.once('listening', () => process.stdout.write('ready\n'))
