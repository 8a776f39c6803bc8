// Fires when the sample talks to a public IP address that no DNS answer of the run gave: hard-coded
// addresses are typical of command-and-control and of downloaders avoiding DNS-based blocking.
import type { SignatureRule } from '../signature'
import { isPublicIp, num, objs, resolvedIps, str, strs, summary } from '../../../reporting/report-view'

export const contactsBareIp: SignatureRule = {
  name: 'contacts_bare_ip',
  description: 'Connects to a public IP address that was not resolved through DNS',
  severity: 2,
  categories: ['network'],
  ttp: ['T1071'],
  run(report, mark) {
    const resolved = resolvedIps(report)
    // The resolvers the run queried: talking to them is DNS, not a bare-IP contact (the guest's
    // connection list does not say which port an address was reached on).
    const seen = new Set<string>(strs(report, 'network', 'dns_servers'))
    for (const proto of ['tcp', 'udp'] as const) {
      for (const f of objs(report, 'network', proto)) {
        const port = num(f, 'dport')
        if (port === 53 || port === 5353 || port === 853) seen.add(str(f, 'dst'))
      }
    }
    const consider = (ip: string, how: string): void => {
      if (!ip || seen.has(ip) || resolved.has(ip) || !isPublicIp(ip)) return
      seen.add(ip)
      mark.ioc('ip', ip, how)
    }
    for (const proto of ['tcp', 'udp'] as const) {
      for (const f of objs(report, 'network', proto)) {
        consider(str(f, 'dst'), `${proto} port ${num(f, 'dport') ?? '?'}`)
      }
    }
    for (const h of objs(report, 'network', 'http')) {
      const host = str(h, 'host').replace(/:\d+$/, '')
      consider(host.replace(/^\[|\]$/g, ''), 'http host')
    }
    for (const ip of summary(report, 'connects_ip')) consider(ip, 'connection seen in the guest')
  }
}
