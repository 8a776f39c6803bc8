// Network: contacted hosts, DNS queries with their answers, resolved domains, HTTP requests, TLS
// server names (SNI), and the TCP and UDP flows with byte counts. Tables sort by any column and
// scroll virtually when long.
import type { JSX } from 'react'
import { SafeText, Bytes } from '../components/text'
import { isObj, num, obj, objs, str, strs, textOf, type Obj } from './model'
import { DataTable, Mono, Section, Tags, type Column } from './common'

const endpoint = (o: Obj, ip: string, port: string) => `${str(o, ip)}${num(o, port) !== null ? `:${num(o, port)}` : ''}`

function flowColumns(): Column<Obj>[] {
  return [
    { title: 'source', cell: (f) => <Mono value={endpoint(f, 'src', 'sport')} />, sort: (f) => str(f, 'src') },
    { title: 'destination', cell: (f) => <Mono value={endpoint(f, 'dst', 'dport')} />, sort: (f) => str(f, 'dst') },
    { title: 'port', cell: (f) => num(f, 'dport'), sort: (f) => num(f, 'dport') ?? -1 },
    { title: 'sent', cell: (f) => num(f, 'bytes_sent') !== null && <Bytes value={num(f, 'bytes_sent')} />, sort: (f) => num(f, 'bytes_sent') ?? -1 },
    { title: 'received', cell: (f) => num(f, 'bytes_received') !== null && <Bytes value={num(f, 'bytes_received')} />, sort: (f) => num(f, 'bytes_received') ?? -1 },
    { title: 'packets', cell: (f) => num(f, 'packets'), sort: (f) => num(f, 'packets') ?? -1 },
    { title: 'time', cell: (f) => (num(f, 'time') !== null ? `${(num(f, 'time') as number).toFixed(3)} s` : ''), sort: (f) => num(f, 'time') ?? -1 }
  ]
}

export function NetworkView({ report }: { report: unknown }): JSX.Element {
  const net = obj(report, 'network')
  const hosts = (Array.isArray(net.hosts) ? net.hosts : []).map((h) => (typeof h === 'string' ? h : str(isObj(h) ? h : {}, 'ip'))).filter((h) => h !== '')
  const http = [...objs(net, 'http'), ...objs(net, 'http_ex'), ...objs(net, 'https_ex')]
  const tls = objs(net, 'tls')
  return (
    <>
      <Section title="Hosts" count={hosts.length}>{hosts.length > 0 ? <Tags values={hosts} /> : <p className="text-sm text-zinc-500">No hosts.</p>}</Section>
      <Section title="DNS" count={objs(net, 'dns').length}>
        <DataTable rows={objs(net, 'dns')} label="DNS queries" columns={[
          { title: 'request', cell: (d) => <Mono value={str(d, 'request')} />, sort: (d) => str(d, 'request') },
          { title: 'type', cell: (d) => <SafeText value={str(d, 'type')} />, sort: (d) => str(d, 'type') },
          { title: 'answers', cell: (d) => objs(d, 'answers').slice(0, 20).map((a, i) => <div key={i}><span className="mr-1 text-xs text-zinc-500"><SafeText value={str(a, 'type')} /></span><Mono value={textOf(a.data, 300)} /></div>) }
        ]} />
      </Section>
      {objs(net, 'domains').length > 0 && (
        <Section title="Domains" count={objs(net, 'domains').length}>
          <DataTable rows={objs(net, 'domains')} label="domains" columns={[
            { title: 'domain', cell: (d) => <Mono value={str(d, 'domain')} />, sort: (d) => str(d, 'domain') },
            { title: 'ip', cell: (d) => <Mono value={str(d, 'ip')} />, sort: (d) => str(d, 'ip') }
          ]} />
        </Section>
      )}
      <Section title="HTTP" count={http.length}>
        <DataTable rows={http} label="HTTP requests" columns={[
          { title: 'method', cell: (h) => <SafeText value={str(h, 'method')} />, sort: (h) => str(h, 'method') },
          { title: 'host', cell: (h) => <Mono value={`${str(h, 'host')}${num(h, 'port') !== null && num(h, 'port') !== 80 ? `:${num(h, 'port')}` : ''}`} />, sort: (h) => str(h, 'host') },
          { title: 'uri', cell: (h) => <Mono value={textOf(str(h, 'uri') || str(h, 'path'), 1000)} />, sort: (h) => str(h, 'uri') },
          { title: 'user agent', cell: (h) => <Mono value={textOf(h['user-agent'], 300)} /> },
          { title: 'status', cell: (h) => textOf(h.status), sort: (h) => num(h, 'status') ?? -1 }
        ]} />
      </Section>
      <Section title="TLS" count={tls.length}>
        <DataTable rows={tls} label="TLS connections" columns={[
          { title: 'server name (SNI)', cell: (t) => <Mono value={str(t, 'sni') || str(t, 'server_name')} />, sort: (t) => str(t, 'sni') || str(t, 'server_name') },
          { title: 'destination', cell: (t) => <Mono value={endpoint(t, 'dst', 'dport')} />, sort: (t) => str(t, 'dst') },
          { title: 'version', cell: (t) => <SafeText value={str(t, 'version')} /> }
        ]} />
      </Section>
      <Section title="TCP" count={objs(net, 'tcp').length}><DataTable rows={objs(net, 'tcp')} label="TCP flows" columns={flowColumns()} /></Section>
      <Section title="UDP" count={objs(net, 'udp').length}><DataTable rows={objs(net, 'udp')} label="UDP flows" columns={flowColumns()} /></Section>
      {strs(net, 'dns_servers').length > 0 && <Section title="DNS servers"><Tags values={strs(net, 'dns_servers')} /></Section>}
    </>
  )
}
