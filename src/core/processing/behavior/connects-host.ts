// behavior.summary.connects_host: the host names the run connected to. Cuckoo 2.0.7 fills it with
// the name a program handed to InternetConnect; Aviary's monitors see the addresses connected to
// (connects_ip), so an address gets a name only from a DNS answer of the same run (network.dns,
// read from the capture): each address a process connected to is named by the questions whose
// answers held it, narrowed to the names that process looked up itself (its resolves_host) when it
// looked up any of them. An address no answer gave stays in connects_ip only.
// It runs once the network section exists (pipeline.ts, after phase 2), and only adds names.
import type { Behavior } from '../types'

type Summary = Behavior['summary']

/** Answer address → the questions whose answers held it (A and AAAA, CNAME chains under the name asked). */
export function namesByAddress(dns: readonly { request: string; answers: readonly { type: string; data: string }[] }[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  for (const d of dns) {
    const name = d.request.replace(/\.$/, '')
    if (name === '') continue
    for (const a of d.answers) {
      if (a.type !== 'A' && a.type !== 'AAAA') continue
      let names = out.get(a.data)
      if (names === undefined) out.set(a.data, (names = new Set()))
      names.add(name)
    }
  }
  return out
}

const strings = (s: Summary, key: string): string[] => (s[key] ?? []).filter((v): v is string => typeof v === 'string')

/** The names `summary`'s connections (connects_ip) went to, as above. */
function hostsOf(summary: Summary, byAddress: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const looked = new Set(strings(summary, 'resolves_host').map((n) => n.replace(/\.$/, '')))
  const out = new Set<string>()
  for (const ip of strings(summary, 'connects_ip')) {
    const names = [...(byAddress.get(ip) ?? [])]
    const own = names.filter((n) => looked.has(n))
    for (const n of own.length > 0 ? own : names) out.add(n)
  }
  return [...out]
}

/**
 * Adds to connects_host of the run's summary and of each process's (behavior.generic) the names the
 * run's DNS answers give its connections; names already there (Cuckoo monitor logs: InternetConnect's
 * host name) stay.
 */
export function nameConnectedHosts(behavior: Behavior, dns: Parameters<typeof namesByAddress>[0]): void {
  const byAddress = namesByAddress(dns)
  const put = (summary: Summary): void => {
    const hosts = new Set([...strings(summary, 'connects_host'), ...hostsOf(summary, byAddress)])
    if (hosts.size > 0) summary.connects_host = [...hosts]
  }
  put(behavior.summary)
  for (const g of behavior.generic) put(g.summary)
}
