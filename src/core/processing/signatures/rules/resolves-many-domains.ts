// Fires when the run resolves more than 10 distinct domain names: domain-generation algorithms and
// spam or scanning bots look up many names; ordinary installers look up a few.
import type { SignatureRule } from '../signature'
import { objs, str } from '../../../reporting/report-view'

export const MANY_DOMAINS = 10

export const resolvesManyDomains: SignatureRule = {
  name: 'resolves_many_domains',
  description: `Resolves more than ${MANY_DOMAINS} distinct domain names`,
  severity: 2,
  categories: ['network'],
  ttp: ['T1568'],
  run(report, mark) {
    const names = new Set<string>()
    for (const d of objs(report, 'network', 'dns')) {
      const r = str(d, 'request').toLowerCase().replace(/\.$/, '')
      if (r && !r.endsWith('.in-addr.arpa') && !r.endsWith('.ip6.arpa')) names.add(r)
    }
    for (const d of objs(report, 'network', 'domains')) {
      const r = str(d, 'domain').toLowerCase().replace(/\.$/, '')
      if (r) names.add(r)
    }
    if (names.size <= MANY_DOMAINS) return
    for (const n of names) mark.ioc('domain', n)
  }
}
