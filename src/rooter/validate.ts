// Every request line is checked here before anything runs: JSON of the exact shape (no extra
// keys; every request about a guest or grants names its owner), then against the rooter's
// configuration: the guest and every host address inside the guest networks, interfaces and the
// INetSim address only those configured, ports in range. A request that fails is refused with the
// reason; nothing of it reaches nft or ip.
import { isIPv4 } from 'node:net'
import { Type } from 'typebox'
import Ajv from 'ajv'
import type { RooterConfig } from './rooter-config'
import { OWNER_PATTERN, ROUTE_KINDS, routeKind, type RooterRequest } from './protocol'

const Ip = Type.String({ maxLength: 15 })
const Owner = Type.String({ pattern: OWNER_PATTERN })
const Port = Type.Integer({ minimum: 1, maximum: 65535 })
const Endpoint = Type.Object({ ip: Ip, port: Port }, { additionalProperties: false })

const Request = Type.Union([
  Type.Object({ op: Type.Literal('ping') }, { additionalProperties: false }),
  Type.Object({ op: Type.Literal('flush'), owner: Owner }, { additionalProperties: false }),
  Type.Object({ op: Type.Literal('disable'), owner: Owner, guest: Ip }, { additionalProperties: false }),
  Type.Object({ op: Type.Literal('status'), owner: Owner, guest: Ip }, { additionalProperties: false }),
  Type.Object({
    op: Type.Literal('enable'),
    owner: Owner,
    guest: Ip,
    route: Type.Union(ROUTE_KINDS.map((r) => Type.Literal(r))),
    resultserver: Endpoint,
    interface: Type.Optional(Type.String({ maxLength: 15 })),
    inetsim: Type.Optional(Ip),
    mitm: Type.Optional(Type.Object({ ip: Ip, port: Port, ports: Type.Array(Port, { minItems: 1, maxItems: 16 }) }, { additionalProperties: false }))
  }, { additionalProperties: false })
])

const check = new Ajv({ allErrors: false, strict: false }).compile<RooterRequest>(Request)

export class Refused extends Error {}

/** The request a line holds, checked; throws Refused with the reason. */
export function parseRequest(line: string, c: RooterConfig): RooterRequest {
  let raw: unknown
  try {
    raw = JSON.parse(line)
  } catch {
    throw new Refused('not a JSON object')
  }
  const op = raw !== null && typeof raw === 'object' ? (raw as { op?: unknown }).op : undefined
  if (!check(raw)) {
    const known = ['ping', 'enable', 'disable', 'status', 'flush']
    if (typeof op !== 'string' || !known.includes(op)) throw new Refused(`unknown op: one of ${known.join(', ')}`)
    throw new Refused(`malformed ${op} request: fields, types or values outside the vocabulary`)
  }
  const r = raw
  if (r.op === 'ping' || r.op === 'flush') return r
  guestAddress('guest', r.guest, c)
  if (r.op === 'disable' || r.op === 'status') return r
  guestAddress('resultserver.ip', r.resultserver.ip, c)
  if (r.resultserver.ip === r.guest) throw new Refused('resultserver.ip: the guest itself')
  if (r.mitm !== undefined) {
    guestAddress('mitm.ip', r.mitm.ip, c)
    if (routeKind(r.route).closed) throw new Refused(`mitm: the ${r.route} route has no traffic to decrypt`)
  }
  switch (r.route) {
    case 'none':
    case 'drop':
      if (r.interface !== undefined || r.inetsim !== undefined) throw new Refused(`${r.route}: takes no interface and no inetsim address`)
      break
    case 'internet':
      if (r.inetsim !== undefined) throw new Refused('internet: takes no inetsim address')
      if (r.interface === undefined || !c.interfaces.includes(r.interface)) {
        throw new Refused(`interface: not one the internet route may use (${c.interfaces.join(', ') || 'none configured'})`)
      }
      break
    case 'vpn':
      if (r.inetsim !== undefined) throw new Refused('vpn: takes no inetsim address')
      if (r.interface === undefined || !c.vpn.has(r.interface)) {
        throw new Refused(`interface: not a configured VPN interface (${[...c.vpn.keys()].join(', ') || 'none configured'})`)
      }
      break
    case 'inetsim':
      if (r.interface !== undefined) throw new Refused('inetsim: takes no interface')
      if (c.inetsim === null) throw new Refused('inetsim: this rooter runs no INetSim')
      if (r.inetsim !== c.inetsim) throw new Refused(`inetsim: INetSim answers on ${c.inetsim}, not there`)
      break
  }
  return r
}

function guestAddress(field: string, ip: string, c: RooterConfig): void {
  if (!isIPv4(ip)) throw new Refused(`${field}: not an IPv4 address`)
  if (!c.inGuestNetworks(ip)) throw new Refused(`${field}: ${ip} is not a host address of the guest networks`)
}
