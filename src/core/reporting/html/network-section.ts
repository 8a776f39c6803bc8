// The network part of report.html: contacted hosts, DNS queries with their answers, resolved
// domains, HTTP requests, TLS server names and the TCP/UDP flows (with byte counts when the
// network module gives them). Every table is capped (blocks.ts); every value is escaped.
import { size, text } from './escape'
import { table, tags, type Obj } from './blocks'
import type { PageWriter } from './page-writer'
import { num, obj, objs, str, strs } from '../report-view'

function bytesOf(f: Obj): string {
  const parts: string[] = []
  for (const k of ['bytes', 'bytes_sent', 'bytes_out', 'bytes_received', 'bytes_in', 'size']) {
    const v = num(f, k)
    if (v !== null) parts.push(`${k === 'bytes' || k === 'size' ? '' : text(k.replace('bytes_', '')) + ' '}${size(v)}`)
  }
  return parts.join(', ')
}

export async function networkSection(w: PageWriter, report: Obj): Promise<void> {
  const net = obj(report, 'network')
  w.put('<section id="network"><h2>Network</h2>')
  const hosts = (Array.isArray(net.hosts) ? net.hosts : []).map((h) => (typeof h === 'string' ? h : str(obj(h), 'ip')))
  w.put(`<h3>Hosts (${hosts.length})</h3>${hosts.length > 0 ? `<p>${tags(hosts)}</p>` : '<p class="muted">No hosts.</p>'}`)

  const dns = objs(net, 'dns')
  w.put(`<h3>DNS (${dns.length})</h3>`)
  await table(w, dns, [
    { title: 'request', cell: (d) => `<code>${text(str(d, 'request'), 500)}</code>` },
    { title: 'type', cell: (d) => text(str(d, 'type')) },
    { title: 'answers', cell: (d) => objs(d, 'answers').slice(0, 20).map((a) => `<span class="tag">${text(str(a, 'type'))}</span><code>${text(a.data, 300)}</code>`).join(' ') }
  ], 'DNS queries')

  const domains = objs(net, 'domains')
  if (domains.length > 0) {
    w.put(`<h3>Domains (${domains.length})</h3>`)
    await table(w, domains, [
      { title: 'domain', cell: (d) => `<code>${text(str(d, 'domain'), 500)}</code>` },
      { title: 'ip', cell: (d) => `<code>${text(str(d, 'ip'))}</code>` }
    ], 'domains')
  }

  const http = [...objs(net, 'http'), ...objs(net, 'http_ex')]
  w.put(`<h3>HTTP (${http.length})</h3>`)
  await table(w, http, [
    { title: 'method', cell: (h) => text(str(h, 'method')) },
    { title: 'host', cell: (h) => `<code>${text(str(h, 'host'), 300)}${num(h, 'port') !== null && num(h, 'port') !== 80 ? ':' + text(num(h, 'port')) : ''}</code>` },
    { title: 'uri', cell: (h) => `<code>${text(str(h, 'uri') || str(h, 'path'), 1000)}</code>` },
    { title: 'user agent', cell: (h) => `<code>${text(h['user-agent'], 300)}</code>` },
    { title: 'status', cell: (h) => text(h.status ?? '') }
  ], 'HTTP requests')

  const tls = objs(net, 'tls').filter((t) => str(t, 'sni') !== '' || str(t, 'server_name') !== '')
  if (tls.length > 0) {
    w.put(`<h3>TLS (${tls.length})</h3>`)
    await table(w, tls, [
      { title: 'server name', cell: (t) => `<code>${text(str(t, 'sni') || str(t, 'server_name'), 300)}</code>` },
      { title: 'destination', cell: (t) => `<code>${text(str(t, 'dst'))}${num(t, 'dport') !== null ? ':' + text(num(t, 'dport')) : ''}</code>` },
      { title: 'version', cell: (t) => text(str(t, 'version')) }
    ], 'TLS connections')
  }

  for (const proto of ['tcp', 'udp'] as const) {
    const flows = objs(net, proto)
    w.put(`<h3>${proto.toUpperCase()} (${flows.length})</h3>`)
    await table(w, flows, [
      { title: 'source', cell: (f) => `<code>${text(str(f, 'src'))}:${text(num(f, 'sport') ?? '')}</code>` },
      { title: 'destination', cell: (f) => `<code>${text(str(f, 'dst'))}:${text(num(f, 'dport') ?? '')}</code>` },
      { title: 'bytes', cell: bytesOf },
      { title: 'packets', cell: (f) => text(num(f, 'packets') ?? '') },
      { title: 'time', cell: (f) => (num(f, 'time') !== null ? `${text((num(f, 'time') as number).toFixed(3))} s` : '') }
    ], `${proto.toUpperCase()} flows`)
  }
  const servers = strs(net, 'dns_servers')
  if (servers.length > 0) w.put(`<h3>DNS servers</h3><p>${tags(servers)}</p>`)
  w.put('</section>')
}
