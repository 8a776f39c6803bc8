// The nftables rules of the routes, in Aviary's own table (`inet aviary`), and nothing else.
//
// The base policy denies by default: every packet that comes from a guest network (by its source
// address, or by the host interface it arrives on, whatever address it claims) or is forwarded
// towards one is dropped, IPv4 and IPv6 alike, unless a routed guest's own chains let it through.
// What passes without a route: answers to connections the host opened (the agent) and DHCP.
// Routed guests are found through verdict maps keyed by their address; turning a route on or off
// adds or deletes one guest's map elements and chains in one atomic `nft -f` run, and no rule of
// a guest ever matches another address. A drop in any base chain is final in nftables, so other
// tables' accept rules (libvirt's, Docker's) cannot reopen what this table drops.
// Scripts are built only from requests validate.ts accepted (addresses, interface names, ports)
// and from the rooter's own configuration, and passed to nft on stdin: never through a shell.
import { execFile } from 'node:child_process'
import { routeKind, type EnableRequest } from './protocol'

export const TABLE = 'inet aviary'

/** Never reached by the internet route: private, shared, loopback, link-local, multicast, reserved. */
export const NOT_OUTSIDE = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.168.0.0/16', '198.18.0.0/15', '224.0.0.0/4', '240.0.0.0/4'
]

/** Ports INetSim serves (inetsim.conf defaults); other TCP and UDP goes to its dummy service on port 1. */
export const INETSIM_TCP = [21, 25, 79, 80, 110, 113, 443, 465, 990, 995, 6667, 7, 9, 13, 17, 19, 37, 53]
export const INETSIM_UDP = [53, 69, 123, 514, 7, 9, 13, 17, 19, 37]

const MAPS = ['guest_in', 'guest_fwd', 'guest_back', 'guest_pre', 'guest_post'] as const

/** The counter of what the base policy denied (packets from no routed guest, IPv6). */
export const DENIED_COUNTER = 'denied'

const ifnames = (names: string[]): string => names.map((n) => `"${n}"`).join(', ')

/**
 * The table from scratch, as one transaction that replaces whatever table was there: sets, maps,
 * the base policy, no guest. `guestNets`: the configured guest networks (CIDR); `guestIfs`: the
 * host's interfaces on them.
 */
export function baseScript(guestNets: string[], guestIfs: string[]): string {
  const deny = `limit rate 10/second burst 20 packets log prefix "aviary denied: " level info
    counter name "${DENIED_COUNTER}" drop`
  return `add table inet aviary
delete table inet aviary
table inet aviary {
  set not_outside { type ipv4_addr; flags interval; elements = { ${NOT_OUTSIDE.join(', ')} } }
  set guest_nets { type ipv4_addr; flags interval; elements = { ${guestNets.join(', ')} } }
  set guest_ifs { type ifname; ${guestIfs.length > 0 ? `elements = { ${ifnames(guestIfs)} }` : ''} }
${MAPS.map((m) => `  map ${m} { type ipv4_addr : verdict; }`).join('\n')}
  counter ${DENIED_COUNTER} { }
  chain deny {
    ${deny}
  }
  chain input { type filter hook input priority filter - 10; policy accept;
    iifname "lo" return
    iifname @guest_ifs jump from_guest
    ip saddr @guest_nets jump from_guest
  }
  chain from_guest {
    meta nfproto ipv6 jump deny
    ip saddr vmap @guest_in
    ct state established,related accept
    udp sport 68 udp dport 67 accept
    jump deny
  }
  chain forward { type filter hook forward priority filter - 10; policy accept;
    iifname @guest_ifs jump fwd_from_guest
    ip saddr @guest_nets jump fwd_from_guest
    oifname @guest_ifs jump fwd_to_guest
    ip daddr @guest_nets jump fwd_to_guest
  }
  chain fwd_from_guest {
    meta nfproto ipv6 jump deny
    ip saddr vmap @guest_fwd
    jump deny
  }
  chain fwd_to_guest {
    meta nfproto ipv6 jump deny
    ip daddr vmap @guest_back
    jump deny
  }
  chain prerouting { type nat hook prerouting priority dstnat - 10; policy accept; ip saddr vmap @guest_pre; }
  chain postrouting { type nat hook postrouting priority srcnat - 10; policy accept; ip saddr vmap @guest_post; }
}
`
}

/** Replaces the set of guest interfaces (an interface came or went), atomically. */
export function guestIfsScript(guestIfs: string[]): string {
  return `flush set ${TABLE} guest_ifs\n${guestIfs.length > 0 ? `add element ${TABLE} guest_ifs { ${ifnames(guestIfs)} }\n` : ''}`
}

const id = (guest: string): string => `g_${guest.replace(/\./g, '_')}`

/** The guest's chains and map elements for its route. `hostNetworks`: this host's own networks (CIDR). */
export function enableScript(r: EnableRequest, hostNetworks: string[]): string {
  const g = id(r.guest)
  const rs = r.resultserver
  const out: string[] = [`add counter ${TABLE} c_${g}`]
  const chain = (name: string, rules: string[]): void => {
    out.push(`add chain ${TABLE} ${g}_${name}`)
    for (const rule of rules) out.push(`add rule ${TABLE} ${g}_${name} ${rule}`)
  }
  const drop = (where: string): string[] => [
    `limit rate 20/second burst 20 packets log prefix "aviary ${r.guest} ${where}: " level info`,
    `counter name "c_${g}" drop`
  ]
  const outside = routeKind(r.route).leavesHost
  const inetsim = routeKind(r.route).inetsim ? r.inetsim! : null
  // To the host: the result server, DHCP, answers to what the host opened (the agent), and what
  // the prerouting rules below sent to INetSim or the proxy.
  chain('in', [
    'ct state established,related accept',
    `ip daddr ${rs.ip} tcp dport ${rs.port} accept`,
    'udp sport 68 udp dport 67 accept',
    ...(inetsim !== null || r.mitm !== undefined ? ['ct status dnat accept'] : []),
    // A connection to INetSim's own address on one of its ports needs no rewriting (so it has no
    // dnat status); every other port of that address was rewritten to INetSim's dummy service.
    ...(inetsim !== null ? [`ip daddr ${inetsim} meta l4proto { tcp, udp } accept`] : []),
    ...drop('to the host')
  ])
  const hostNets = hostNetworks.length > 0 ? [`ip daddr { ${hostNetworks.join(', ')} } counter name "c_${g}" drop`] : []
  chain('fwd', outside
    ? [`ip daddr @not_outside counter name "c_${g}" drop`, ...hostNets, `oifname "${r.interface!}" accept`, ...drop('forwarded')]
    : drop('forwarded'))
  // Nothing but answers reaches the guest from elsewhere (the LAN, another guest).
  chain('back', ['ct state established,related accept', `counter name "c_${g}" drop`])
  // The result server is never redirected; under inetsim everything else is, the host's own
  // address included (so no other service of the host is reachable on it).
  const pre: string[] = [`ip daddr ${rs.ip} tcp dport ${rs.port} return`]
  if (r.mitm !== undefined) {
    const to = `dnat ip to ${r.mitm.ip}:${r.mitm.port}`
    const ports = `tcp dport { ${r.mitm.ports.join(', ')} }`
    pre.push(inetsim !== null ? `${ports} ${to}` : `ip daddr != @not_outside ${ports} ${to}`)
  }
  if (inetsim !== null) {
    pre.push(
      `tcp dport { ${INETSIM_TCP.join(', ')} } dnat ip to ${inetsim}`,
      `udp dport { ${INETSIM_UDP.join(', ')} } dnat ip to ${inetsim}`,
      `meta l4proto { tcp, udp } dnat ip to ${inetsim}:1`
    )
  }
  chain('pre', pre)
  chain('post', outside ? [`oifname "${r.interface!}" masquerade`] : [])
  for (const m of MAPS) out.push(`add element ${TABLE} ${m} { ${r.guest} : jump ${g}_${m.slice('guest_'.length)} }`)
  return out.join('\n') + '\n'
}

/** Removes the guest's map elements, chains and counter. */
export function disableScript(guest: string): string {
  const g = id(guest)
  return [
    ...MAPS.map((m) => `delete element ${TABLE} ${m} { ${guest} }`),
    ...MAPS.map((m) => `delete chain ${TABLE} ${g}_${m.slice('guest_'.length)}`),
    `delete counter ${TABLE} c_${g}`
  ].join('\n') + '\n'
}

export function counterName(guest: string): string {
  return `c_${id(guest)}`
}

/** Runs `nft` with `args`, the script (if any) on stdin; rejects with nft's own words. */
export function nft(args: string[], script?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('nft', args, { timeout: 10_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`nft ${args.join(' ')}: ${(stderr || err.message).trim().split('\n').slice(0, 3).join(' ')}`))
      else resolve(stdout)
    })
    // nft may exit before it reads (a listing reads no stdin): a broken pipe here is not an error.
    child.stdin?.on('error', () => undefined)
    child.stdin?.end(script ?? '')
  })
}
