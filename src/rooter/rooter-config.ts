// The rooter's own configuration (root-owned, e.g. /etc/aviary/rooter.json, or the same keys as
// command-line flags): what the service may ask for. Nothing a request says widens it.
//   guest_networks  the networks the guests are on (CIDR); every guest and host address named in
//                   a request must be inside one
//   interfaces      interfaces the internet route may leave through
//   vpn             VPN interfaces and the routing table each one's default route is in
//   inetsim         the address INetSim answers on (on the guests' network); the rooter runs it
//   socket, group   where the service talks to the rooter, and the group allowed to (mode 0660)
//   state           where the rooter keeps the grants of runs in progress, so that a restarted
//                   rooter puts them back (default: rooter-state.json next to the socket)
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { BlockList, isIPv4 } from 'node:net'
import { Type, type Static } from 'typebox'
import Ajv from 'ajv'
import { DEFAULT_ROOTER_SOCKET } from './protocol'

const Iface = Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,15}$' })

const RooterFile = Type.Object({
  socket: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  state: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  group: Type.Optional(Type.String({ pattern: '^[a-z_][a-z0-9_-]{0,31}$' })),
  guest_networks: Type.Array(Type.String({ maxLength: 18 }), { minItems: 1 }),
  interfaces: Type.Optional(Type.Array(Iface)),
  vpn: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,15}$' }), Type.Integer({ minimum: 1, maximum: 252 }))),
  inetsim: Type.Optional(Type.Object({ address: Type.String({ maxLength: 15 }) }, { additionalProperties: false }))
}, { additionalProperties: false })
export type RooterFile = Static<typeof RooterFile>

export interface RooterConfig {
  socket: string
  state: string
  group: string | null
  networks: { address: string; prefix: number }[]
  interfaces: string[]
  vpn: Map<string, number>
  inetsim: string | null
  /** A host address of one of the guest networks (not its network or broadcast address). */
  inGuestNetworks(ip: string): boolean
}

const toInt = (ip: string): number => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0)

export class RooterConfigError extends Error {}

const check = new Ajv({ allErrors: false, strict: false }).compile<RooterFile>(RooterFile)

export function parseRooterConfig(raw: unknown): RooterConfig {
  if (!check(raw)) {
    const e = check.errors?.[0]
    const where = e?.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'the top level'
    const extra = e?.keyword === 'additionalProperties' ? ` '${String(e.params.additionalProperty)}'` : ''
    throw new RooterConfigError(`rooter configuration: ${where}: ${e?.message ?? 'invalid'}${extra}`)
  }
  const list = new BlockList()
  const networks = raw.guest_networks.map((cidr) => {
    const m = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(cidr)
    const prefix = Number(m?.[2])
    if (m === null || !isIPv4(m[1]!) || prefix < 8 || prefix > 30) {
      throw new RooterConfigError(`rooter configuration: guest_networks: '${cidr}' is not an IPv4 network from /8 to /30`)
    }
    list.addSubnet(m[1]!, prefix, 'ipv4')
    // The network's own address, whatever host address the CIDR was written with.
    const base = (toInt(m[1]!) & (prefix === 0 ? 0 : (~0 << (32 - prefix)))) >>> 0
    return { address: [24, 16, 8, 0].map((s) => (base >>> s) & 255).join('.'), prefix }
  })
  const inetsim = raw.inetsim?.address ?? null
  if (inetsim !== null && (!isIPv4(inetsim) || !list.check(inetsim, 'ipv4'))) {
    throw new RooterConfigError(`rooter configuration: inetsim.address: '${inetsim}' is not an address in the guest networks`)
  }
  const socket = raw.socket ?? DEFAULT_ROOTER_SOCKET
  return {
    socket,
    state: raw.state ?? path.join(path.dirname(socket), 'rooter-state.json'),
    group: raw.group ?? null,
    networks,
    interfaces: raw.interfaces ?? [],
    vpn: new Map(Object.entries(raw.vpn ?? {})),
    inetsim,
    inGuestNetworks: (ip) => isIPv4(ip) && list.check(ip, 'ipv4') && networks.some((n) => {
      const size = 2 ** (32 - n.prefix)
      const offset = (toInt(ip) - toInt(n.address) + 2 ** 32) % 2 ** 32
      return offset > 0 && offset < size - 1
    })
  }
}

export function loadRooterConfig(file: string): RooterConfig {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new RooterConfigError(`rooter configuration ${file}: ${(err as Error).message}`)
  }
  return parseRooterConfig(raw)
}
