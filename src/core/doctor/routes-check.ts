// `aviary doctor`'s checks of the routes (docs/network.md): that this host routes at all, that the
// rooter answers, and that it offers each route machines.json names, as configured (the internet
// interface, forwarding, the VPN interfaces, INetSim's address), and the decrypting proxy.
import { execFile } from 'node:child_process'
import type { Finding } from '../machinery/driver'
import type { RoutingSettings } from '../network/routing-config'
import type { RooterAbilities } from '../../rooter/protocol'
import { rooter } from '../network/rooter-client'
import { ROOTER_VERSION } from '../../rooter/protocol'
import { routeKind } from '../../shared/route-kinds'

function runs(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 20_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout)))
  })
}

/** The base policy: which networks and interfaces are denied by default, and IPv6 where a guest network carries it. */
function containment(a: RooterAbilities): Finding[] {
  const nets = a.guestNetworks.join(', ')
  if (a.guestInterfaces.length === 0) {
    return [{
      check: 'containment', ok: false,
      detail: `no interface of this host is on the guest networks (${nets}): no guest can reach the result server`,
      fix: 'start the machines\' network (e.g. virsh net-start default), or run the rooter with the guests\' network as --guest-network'
    }]
  }
  const out: Finding[] = [{
    check: 'containment', ok: true,
    detail: `everything from ${nets} (on ${a.guestInterfaces.map((i) => i.name).join(', ')}) is denied but what a running task's route allows, IPv6 included`
  }]
  for (const i of a.guestInterfaces.filter((x) => x.ipv6)) {
    out.push({
      check: `IPv6 on ${i.name}`, ok: false,
      detail: `${i.name} carries a guest network and has IPv6: the rooter drops all of it, but a guest network should have none`,
      fix: `sudo sysctl -w net.ipv6.conf.${i.name}.disable_ipv6=1 (and the same line in /etc/sysctl.d/; on a libvirt network, remove its <ip family='ipv6'> element)`
    })
  }
  return out
}

export async function checkRoutes(routing: RoutingSettings | null): Promise<Finding[]> {
  if (routing === null) {
    return [{
      check: 'routes', ok: false,
      detail: 'machines.json has no routing section: the guests\' traffic goes wherever their network sends it, the internet included',
      fix: 'add "routing": {"default": "none"} to machines.json and install the rooter (sudo aviary rooter install …, docs/network.md)'
    }]
  }
  const out: Finding[] = []
  let abilities
  try {
    abilities = await rooter.abilities(routing.rooter)
    out.push({ check: 'rooter', ok: true, detail: `answers on ${routing.rooter}; it offers ${abilities.routes.join(', ')}` })
  } catch (err) {
    return [{ check: 'rooter', ok: false, detail: (err as Error).message, fix: 'sudo aviary rooter install --guest-network <the guests\' network> --user $USER (docs/network.md)' }]
  }
  if (abilities.version !== ROOTER_VERSION) {
    return [...out, {
      check: 'rooter version', ok: false,
      detail: `the rooter speaks version ${abilities.version} of its vocabulary; this service needs ${ROOTER_VERSION}: tasks cannot get routes`,
      fix: 'restart the rooter from this install: sudo systemctl restart aviary-rooter (or sudo aviary rooter install … again)'
    }]
  }
  out.push(...containment(abilities))
  for (const r of routing.routes) {
    const check = `route ${r.name}`
    // One case per kind of route: a kind added to the rooter's vocabulary without its check does not compile.
    switch (r.kind) {
      case 'none':
      case 'drop':
        out.push({ check, ok: true, detail: r.description })
        break
      case 'internet':
      case 'vpn': {
        const listed = r.kind === 'internet' ? abilities.interfaces : abilities.vpn
        if (!listed.includes(r.interface!)) {
          const k = routeKind(r.kind)
          out.push({ check, ok: false, detail: `the rooter may not use ${r.interface}`, fix: `run the rooter with ${k.interfaceOption} ${r.interface}${k.ownRoutingTable ? ':<table>' : ''}` })
        } else if (routeKind(r.kind).leavesHost && !abilities.forwarding) {
          out.push({ check, ok: false, detail: 'net.ipv4.ip_forward is 0: guests\' packets are not forwarded', fix: 'sudo sysctl -w net.ipv4.ip_forward=1 (and net.ipv4.ip_forward = 1 in /etc/sysctl.d/)' })
        } else {
          out.push({ check, ok: true, detail: r.description })
        }
        break
      }
      case 'inetsim':
        out.push(abilities.inetsim === routing.inetsim
          ? { check, ok: true, detail: r.description }
          : { check, ok: false, detail: abilities.inetsim === null ? 'the rooter runs no INetSim' : `the rooter's INetSim answers on ${abilities.inetsim}, not ${routing.inetsim}`,
              fix: `install Debian's inetsim and run the rooter with --inetsim ${routing.inetsim}` })
        break
      default: {
        const unchecked: never = r.kind
        throw new Error(`no doctor check for the route kind ${String(unchecked)}`)
      }
    }
  }
  try {
    const version = (await runs(routing.mitm.mitmdump, ['--version'])).split('\n')[0]?.trim() ?? ''
    out.push({ check: 'decrypting proxy', ok: true, detail: `${version} (tasks ask for it with mitm=1)` })
  } catch {
    out.push({ check: 'decrypting proxy', ok: false, detail: `${routing.mitm.mitmdump} does not run: tasks cannot ask for mitm=1`, fix: 'apt-get install mitmproxy, or set routing.mitm.mitmdump' })
  }
  return out
}
