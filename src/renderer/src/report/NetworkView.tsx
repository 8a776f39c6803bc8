// Network: the route the task's traffic took, the IDS's alerts (IdsAlerts.tsx), contacted hosts, DNS queries with their answers,
// resolved domains, HTTP requests seen in the capture, the exchanges the decrypting proxy saw
// (mitm=1: https_ex and http_ex, each with its headers and the start of its bodies on demand, and
// the flows file), the TLS handshakes the guest refused, TLS server names (SNI), and the TCP and
// UDP flows with byte counts. Tables sort by any column and scroll virtually when long. All of it
// is the sample's doing: every string goes through SafeText or SafeLines.
import { useId, useState, type JSX } from 'react'
import { SafeLines, SafeText, Bytes } from '../components/text'
import { isObj, num, obj, objs, str, strs, textOf, type Obj, type ReportSources } from './model'
import { DataTable, Download, KeyValues, Mono, Section, Tags, type Column } from './common'
import { CapturedHttp } from './CapturedHttp'
import { IdsAlerts } from './IdsAlerts'

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

/** What a route name means, for the routes every Aviary host has (VPNs are named by their owner). */
const ROUTE_NOTES: Record<string, string> = {
  none: 'no network: only the result server and the agent',
  drop: 'no network (Cuckoo\'s name for none)',
  internet: 'the internet, through NAT',
  inetsim: 'a simulated internet (INetSim)'
}

/** Key of a request in both the capture's `http` and the proxy's exchanges (both Cuckoo's shape). */
const requestKey = (h: Obj) => `${str(h, 'method')} ${str(h, 'uri')}`

export function NetworkView({ report, sources, taskRoute = null }: { report: unknown; sources?: ReportSources; taskRoute?: string | null }): JSX.Element {
  const net = obj(report, 'network')
  const hosts = (Array.isArray(net.hosts) ? net.hosts : []).map((h) => (typeof h === 'string' ? h : str(isObj(h) ? h : {}, 'ip'))).filter((h) => h !== '')
  // The proxy's exchanges get their own list; requests the capture saw too are not listed twice.
  const exchanges = [...objs(net, 'https_ex'), ...objs(net, 'http_ex')]
  const exchanged = new Set(exchanges.map(requestKey))
  const captured = objs(net, 'http')
  const http = exchanged.size > 0 ? captured.filter((h) => !exchanged.has(requestKey(h))) : captured
  const refused = strs(net, 'mitm')
  const tls = objs(net, 'tls')
  const route = str(obj(report, 'info'), 'route') || (taskRoute ?? '')
  const flows = sources?.flows ? sources.flows() : undefined
  const pcap = sources ? sources.pcap() : null
  // Cuckoo's `hosts` leaves out private and local addresses; the flows may reach only those.
  const shown = new Set(hosts)
  const others = [...new Set([...objs(net, 'tcp'), ...objs(net, 'udp')].map((f) => str(f, 'dst')).filter((d) => d !== '' && !shown.has(d)))].slice(0, 500)
  return (
    <>
      <div className="mb-4">
        <KeyValues rows={[
          ['Route', route !== '' && (
            <span key="r"><Mono value={route} />{ROUTE_NOTES[route] ? <span className="text-zinc-600 dark:text-zinc-400"> — {ROUTE_NOTES[route]}</span> : null}</span>
          )],
          ['Capture', pcap !== null
            ? <Download key="p" href={pcap} name="dump.pcap">download dump.pcap</Download>
            : <span key="p" className="text-zinc-600 dark:text-zinc-400">no packet capture from this source</span>]
        ]} />
      </div>
      <IdsAlerts report={report} />
      <Section title="Hosts" count={hosts.length}>
        {hosts.length > 0 && <Tags values={hosts} />}
        {others.length > 0 && (
          <div className="mt-1 text-sm">
            <p className="mb-0.5 text-zinc-600 dark:text-zinc-400">{hosts.length > 0 ? 'Also reached by the flows' : 'No public host; the flows below reached'} (private or local addresses, which Cuckoo&apos;s host list leaves out):</p>
            <Tags values={others} />
          </div>
        )}
        {hosts.length === 0 && others.length === 0 && <p className="text-sm text-zinc-600 dark:text-zinc-400">No host was contacted.</p>}
      </Section>
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
        {captured.length > http.length && (
          <p className="mb-1 text-sm text-zinc-600 dark:text-zinc-400">
            {captured.length - http.length} more captured request{captured.length - http.length === 1 ? ' is' : 's are'} listed under Decrypted HTTP(S), with {captured.length - http.length === 1 ? 'its answer' : 'their answers'}.
          </p>
        )}
        <CapturedHttp rows={http} />
      </Section>
      {exchanges.length > 0 && (
        <Section title="Decrypted HTTP(S)" count={exchanges.length}>
          <div className="mb-1.5 flex flex-wrap items-baseline justify-between gap-x-4 gap-y-1 text-sm">
            <p className="text-zinc-600 dark:text-zinc-400">Requests and answers as the decrypting proxy saw them. Open one for its headers and the start of each body.</p>
            {flows !== undefined && <Download href={flows} name="dump.mitm">download the flows (mitmproxy)</Download>}
          </div>
          <ExchangeList rows={exchanges} />
        </Section>
      )}
      {refused.length > 0 && (
        <Section title="Failed TLS handshakes" count={refused.length}>
          <p className="mb-1.5 text-sm text-zinc-600 dark:text-zinc-400">
            The proxy could not complete these handshakes, so this traffic was not decrypted. Each says which side ended it (the guest, or the upstream server) and the TLS alert or error the proxy saw.
          </p>
          <ul aria-label="Failed TLS handshakes" className="flex flex-col gap-1">
            {refused.slice(0, MAX_NOTES).map((line, i) => (
              <li key={i} className="rounded border-l-4 border-amber-500 bg-amber-50 px-2 py-1 text-sm text-amber-950 dark:bg-amber-950/40 dark:text-amber-100">
                <span aria-hidden className="mr-1">⚠</span><SafeText value={textOf(line, 1000)} />
              </li>
            ))}
          </ul>
          {refused.length > MAX_NOTES && <p className="text-xs text-zinc-500">and {refused.length - MAX_NOTES} more</p>}
        </Section>
      )}
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

const MAX_NOTES = 500
/** Exchanges drawn at first, and added per "show more" (a report holds up to 5,000). */
const EXCHANGES_PAGE = 200

/** The proxy's exchanges, one line each (method, URI, status); a line opens to its details. */
function ExchangeList({ rows }: { rows: Obj[] }): JSX.Element {
  const [shown, setShown] = useState(EXCHANGES_PAGE)
  const base = useId()
  const more = rows.length - shown
  return (
    <>
      <ul aria-label="Decrypted requests" className="divide-y divide-zinc-100 rounded border border-zinc-200 dark:divide-zinc-900 dark:border-zinc-800">
        {rows.slice(0, shown).map((e, i) => <Exchange key={i} e={e} n={i + 1} id={`${base}-x${i}`} />)}
      </ul>
      {more > 0 && (
        <button type="button" onClick={() => setShown((n) => n + EXCHANGES_PAGE)}
          className="mt-1.5 rounded border border-zinc-300 px-2 py-0.5 text-sm hover:bg-zinc-100 focus-visible:outline-2 focus-visible:outline-sky-500 dark:border-zinc-700 dark:hover:bg-zinc-800">
          Show {Math.min(more, EXCHANGES_PAGE)} more ({more} not shown)
        </button>
      )}
    </>
  )
}

function statusTone(status: number | null): string {
  if (status === null) return 'text-red-700 dark:text-red-400'
  if (status < 300) return 'text-emerald-700 dark:text-emerald-400'
  if (status < 400) return 'text-sky-700 dark:text-sky-400'
  return 'text-red-700 dark:text-red-400'
}

/** Headers as [name, value] pairs (Aviary's request_headers/response_headers), read defensively. */
function pairs(v: unknown): [string, string][] {
  if (!Array.isArray(v)) return []
  const out: [string, string][] = []
  for (const h of v.slice(0, 500)) if (Array.isArray(h) && h.length >= 2) out.push([textOf(h[0], 1000), textOf(h[1], 8000)])
  return out
}

function Exchange({ e, n, id }: { e: Obj; n: number; id: string }): JSX.Element {
  const [open, setOpen] = useState(false)
  const method = str(e, 'method')
  const request = str(e, 'request')
  // Aviary and Cuckoo both give the full URI; else the host and the request line's target.
  const uri = str(e, 'uri') || `${str(e, 'host')}${request.split(/\r?\n/, 1)[0]?.split(' ')[1] ?? ''}`
  const protocol = str(e, 'protocol') || (uri.startsWith('https:') ? 'https' : 'http')
  const status = num(e, 'status')
  const error = str(e, 'error')
  const src = str(e, 'src')
  const dst = str(e, 'dst')
  return (
    <li>
      <button type="button" aria-expanded={open} aria-controls={open ? id : undefined} onClick={() => setOpen((o) => !o)}
        className="flex w-full items-baseline gap-2 px-2 py-1 text-left text-sm hover:bg-zinc-50 focus-visible:outline-2 focus-visible:outline-sky-500 dark:hover:bg-zinc-900">
        <span aria-hidden className="w-3 shrink-0 text-zinc-500">{open ? '▾' : '▸'}</span>
        <span className="w-12 shrink-0 text-xs text-zinc-500"><SafeText value={protocol} /></span>
        <span className="w-16 shrink-0 font-medium break-all"><SafeText value={method || '?'} /></span>
        <span className="min-w-0 flex-1 break-all"><Mono value={textOf(uri, 2000)} /></span>
        <span className={`shrink-0 tabular-nums ${statusTone(status)}`}>{status ?? (error ? 'failed' : 'no answer')}</span>
      </button>
      {open && (
        <div id={id} className="flex flex-col gap-3 border-t border-zinc-100 bg-zinc-50 px-3 py-2 dark:border-zinc-900 dark:bg-zinc-900/50">
          {(src || dst) && (
            <p className="text-xs text-zinc-500"><Mono value={endpoint(e, 'src', 'sport')} /> → <Mono value={endpoint(e, 'dst', 'dport')} /></p>
          )}
          {error && <p className="text-sm text-red-700 dark:text-red-400">Error: <SafeText value={textOf(error, 1000)} /></p>}
          <Message title="Request" n={n} text={request} headers={pairs(e.request_headers)} body={str(e, 'request_body')} meta={obj(e, 'req')} />
          <Message title="Response" n={n} text={str(e, 'response')} headers={pairs(e.response_headers)} body={str(e, 'response_body')} meta={obj(e, 'resp')} />
        </div>
      )}
    </li>
  )
}

/** One side of an exchange: its first line, its headers, and its body (size, hashes, printable start). */
function Message({ title, n, text, headers, body, meta }: { title: string; n: number; text: string; headers: [string, string][]; body: string; meta: Obj }): JSX.Element {
  const lines = text.split(/\r\n|\n/)
  const first = lines[0] ?? ''
  const rest = lines.slice(1).join('\n')
  const size = num(meta, 'size')
  const md5 = str(meta, 'md5')
  const sha1 = str(meta, 'sha1')
  return (
    <div className="text-sm">
      <h4 className="mb-0.5 text-xs font-semibold uppercase tracking-wide text-zinc-600 dark:text-zinc-400">{title}</h4>
      {first !== '' && <p className="mb-1 break-all"><Mono value={textOf(first, 2000)} /></p>}
      {headers.length > 0 ? (
        <table aria-label={`${title} headers`} className="mb-1 w-full text-xs">
          <tbody>
            {headers.map(([k, v], i) => (
              <tr key={i} className="align-top">
                <th scope="row" className="w-1/4 py-px pr-3 text-left font-mono font-medium break-all text-zinc-600 dark:text-zinc-400"><SafeText value={k} /></th>
                <td className="py-px font-mono break-all"><SafeText value={v} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : rest.trim() !== '' ? (
        <pre className="mb-1 font-mono text-xs whitespace-pre-wrap break-all"><SafeLines value={rest} /></pre>
      ) : (
        <p className="mb-1 text-xs text-zinc-500">No headers.</p>
      )}
      {(body !== '' || (size ?? 0) > 0) && (
        <>
          <p className="text-xs text-zinc-500">
            Body: {size !== null ? <Bytes value={size} /> : 'size unknown'}
            {meta.truncated === true ? ', cut by the proxy' : ''}
            {body !== '' && size !== null && size > PREVIEW_BYTES ? `, the first ${PREVIEW_BYTES / 1024} KiB shown` : ''}
            {md5 && <> · md5 <Mono value={md5} /></>}
            {sha1 && <> · sha1 <Mono value={sha1} /></>}
          </p>
          {body !== '' && (
            // Focusable: the box scrolls, and keyboard users must be able to scroll it.
            <pre role="region" aria-label={`${title} body, request ${n}`} tabIndex={0}
              className="mt-1 max-h-64 overflow-auto rounded border border-zinc-200 bg-white p-2 font-mono text-xs whitespace-pre-wrap break-all focus-visible:outline-2 focus-visible:outline-sky-500 dark:border-zinc-800 dark:bg-zinc-950">
              <SafeLines value={body} />
            </pre>
          )}
        </>
      )}
    </div>
  )
}

/** What Aviary's report keeps of each body as text (mitm-flows.ts). */
const PREVIEW_BYTES = 4096
