// The report's `suricata` section and how it is read from Suricata's eve.json: Cuckoo 2.0.7's shape
// (processing/suricata.py: alerts{sid, signature, category, src_ip, src_port, dst_ip, dst_port,
// protocol, timestamp}, http{...}, tls{...}, files{...}) plus what CAPEv2 and Cortex read (an
// alert's `severity`, a TLS handshake's JA3) and DNS, which Cuckoo 2.0.7 did not keep. Timestamps
// are Suricata's, as Cuckoo keeps them. eve.json was written by Suricata from traffic the sample
// shaped: every event is read field by field, lines and lists are bounded.
import { createReadStream, existsSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { Closed, Nullable, Type, type Static } from '../schema'
import { isSuppressed, type SuricataSettings } from './settings'

/** Where an event's traffic came from: the task's capture, or the proxy's decrypted HTTPS (mitm=1). */
const Source = Type.Union([Type.Literal('capture'), Type.Literal('decrypted')])

const Ends = {
  src_ip: Type.String(),
  src_port: Nullable(Type.Integer()),
  dst_ip: Type.String(),
  dst_port: Nullable(Type.Integer())
}

export const SuricataAlertSchema = Closed({
  sid: Type.Integer(),
  signature: Type.String(),
  category: Type.String(),
  /** Suricata's: 1 high, 2 medium, 3 low (and higher, less), from the rule's classtype priority. */
  severity: Type.Integer(),
  ...Ends,
  protocol: Type.String(),
  timestamp: Type.String(),
  /**
   * Aviary: the rule's generator and revision, the flow's application protocol, and the packet's
   * number in the pcap it came from (dump.pcap; suricata/decrypted.pcap for `decrypted`), null for
   * an alert Suricata raised at a flow's end rather than on a packet.
   */
  gid: Type.Integer(),
  rev: Type.Integer(),
  app_proto: Nullable(Type.String()),
  pcap_cnt: Nullable(Type.Integer()),
  source: Source
})
export type SuricataAlert = Static<typeof SuricataAlertSchema>

export const SuricataHttpSchema = Closed({
  ...Ends,
  timestamp: Type.String(),
  method: Nullable(Type.String()),
  hostname: Nullable(Type.String()),
  url: Nullable(Type.String()),
  /** The response's status as a string (Cuckoo's `"%s"`), '' without a response. */
  status: Type.String(),
  content_type: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  referer: Nullable(Type.String()),
  length: Nullable(Type.Integer()),
  protocol: Nullable(Type.String()),
  source: Source
})
export type SuricataHttp = Static<typeof SuricataHttpSchema>

const Ja3Schema = Nullable(Closed({ hash: Type.String(), string: Type.String() }))

export const SuricataTlsSchema = Closed({
  ...Ends,
  timestamp: Type.String(),
  /** The server certificate's SHA-1, issuer and subject (Cuckoo's keys). */
  fingerprint: Nullable(Type.String()),
  issuer: Nullable(Type.String()),
  version: Nullable(Type.String()),
  subject: Nullable(Type.String()),
  sni: Nullable(Type.String()),
  /** The client's JA3 and the server's JA3S fingerprints (hash and the string it hashes). */
  ja3: Ja3Schema,
  ja3s: Ja3Schema,
  source: Source
})
export type SuricataTls = Static<typeof SuricataTlsSchema>

export const SuricataDnsSchema = Closed({
  ...Ends,
  timestamp: Type.String(),
  /** `query` (the guest's question) or `answer`. */
  type: Type.String(),
  id: Nullable(Type.Integer()),
  rrname: Nullable(Type.String()),
  rrtype: Nullable(Type.String()),
  rcode: Nullable(Type.String()),
  answers: Type.Array(Closed({ rrname: Type.String(), rrtype: Type.String(), ttl: Nullable(Type.Integer()), rdata: Type.String() })),
  source: Source
})
export type SuricataDns = Static<typeof SuricataDnsSchema>

export const SuricataFileSchema = Closed({
  /** Suricata's file id where it gives one (7.0 does not without a file store), else the file's number in this list. */
  id: Type.Integer(),
  filesize: Type.Integer(),
  filename: Type.String(),
  hostname: Nullable(Type.String()),
  uri: Nullable(Type.String()),
  md5: Nullable(Type.String()),
  sha1: Nullable(Type.String()),
  sha256: Nullable(Type.String()),
  magic: Nullable(Type.String()),
  referer: Nullable(Type.String()),
  /** Suricata's file state (CLOSED: whole; TRUNCATED: cut), and whether the transfer had gaps. */
  state: Nullable(Type.String()),
  gaps: Type.Boolean(),
  source: Source
})
export type SuricataFile = Static<typeof SuricataFileSchema>

/** The report's `suricata` key. */
export const SuricataSchema = Closed({
  alerts: Type.Array(SuricataAlertSchema),
  http: Type.Array(SuricataHttpSchema),
  tls: Type.Array(SuricataTlsSchema),
  dns: Type.Array(SuricataDnsSchema),
  files: Type.Array(SuricataFileSchema),
  /** Aviary: why Suricata did not run (not installed, no rules, capture too large, ...), else null. */
  skipped: Nullable(Type.String()),
  /** Suricata's version, the rule sets loaded (name and enabled rules), what Suricata loaded in all. */
  version: Nullable(Type.String()),
  rulesets: Type.Array(Closed({ name: Type.String(), rules: Type.Integer() })),
  rules_loaded: Nullable(Type.Integer()),
  rules_failed: Nullable(Type.Integer()),
  /** Alerts left out as noise (settings' suppress lists): sid → count. */
  suppressed: Type.Record(Type.String(), Type.Integer()),
  /** Events past the per-list bound (MAX_EVENTS) that were not kept. */
  dropped_events: Type.Integer()
})
export type SuricataReport = Static<typeof SuricataSchema>

export function emptySuricataReport(skipped: string | null = null): SuricataReport {
  return { alerts: [], http: [], tls: [], dns: [], files: [], skipped, version: null, rulesets: [], rules_loaded: null, rules_failed: null, suppressed: {}, dropped_events: 0 }
}

/** Entries kept per list; the rest are counted in dropped_events. */
export const MAX_EVENTS = 5_000
const MAX_LINE = 1024 * 1024
const MAX_TEXT = 4096

type Json = Record<string, unknown>
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {})
const text = (v: unknown): string | null => (typeof v === 'string' ? v.slice(0, MAX_TEXT) : null)
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null)
/** Suricata writes "<unknown>" where a header was absent (Cuckoo turns it into None). */
const known = (v: unknown): string | null => { const t = text(v); return t === '<unknown>' ? null : t }

function ends(e: Json): { src_ip: string; src_port: number | null; dst_ip: string; dst_port: number | null } {
  return { src_ip: text(e.src_ip) ?? '', src_port: int(e.src_port), dst_ip: text(e.dest_ip) ?? '', dst_port: int(e.dest_port) }
}

function ja3(v: unknown): { hash: string; string: string } | null {
  const j = obj(v)
  const hash = text(j.hash)
  return hash === null ? null : { hash, string: text(j.string) ?? '' }
}

/** Adds what one eve.json says to `into`. A missing file adds nothing. */
export async function readEve(file: string, into: SuricataReport, o: { settings: Pick<SuricataSettings, 'suppressSids' | 'suppressPrefixes'>; source: 'capture' | 'decrypted' }): Promise<void> {
  if (!existsSync(file)) return
  const push = <T>(list: T[], entry: T): void => {
    if (list.length < MAX_EVENTS) list.push(entry)
    else into.dropped_events++
  }
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity })
  for await (const line of lines) {
    if (line.length > MAX_LINE) { into.dropped_events++; continue }
    let e: Json
    try {
      e = obj(JSON.parse(line))
    } catch {
      continue
    }
    const timestamp = text(e.timestamp) ?? ''
    switch (e.event_type) {
      case 'alert': {
        const a = obj(e.alert)
        const sid = int(a.signature_id)
        const signature = text(a.signature) ?? ''
        if (sid === null) continue
        if (isSuppressed(o.settings, sid, signature)) {
          into.suppressed[String(sid)] = (into.suppressed[String(sid)] ?? 0) + 1
          continue
        }
        push(into.alerts, {
          sid, signature, category: text(a.category) || 'undefined', severity: int(a.severity) ?? 3, ...ends(e),
          protocol: text(e.proto) ?? '', timestamp, gid: int(a.gid) ?? 1, rev: int(a.rev) ?? 0, app_proto: text(e.app_proto),
          pcap_cnt: int(e.pcap_cnt), source: o.source
        })
        break
      }
      case 'http': {
        const h = obj(e.http)
        const status = int(h.status)
        push(into.http, {
          ...ends(e), timestamp, method: text(h.http_method), hostname: text(h.hostname), url: text(h.url), status: status === null ? '' : String(status),
          content_type: known(h.http_content_type), user_agent: known(h.http_user_agent), referer: known(h.http_refer ?? h.http_referer),
          length: int(h.length), protocol: text(h.protocol), source: o.source
        })
        break
      }
      case 'tls': {
        const t = obj(e.tls)
        push(into.tls, {
          ...ends(e), timestamp, fingerprint: text(t.fingerprint), issuer: text(t.issuerdn), version: text(t.version), subject: text(t.subject),
          sni: text(t.sni), ja3: ja3(t.ja3), ja3s: ja3(t.ja3s), source: o.source
        })
        break
      }
      case 'dns': {
        const d = obj(e.dns)
        const type = text(d.type) ?? ''
        // Version 2 answers: `answers` [{rrname, rrtype, ttl, rdata}] (the `detailed` format).
        const answers = Array.isArray(d.answers)
          ? d.answers.slice(0, 100).map(obj).map((x) => ({ rrname: text(x.rrname) ?? '', rrtype: text(x.rrtype) ?? '', ttl: int(x.ttl), rdata: text(x.rdata) ?? '' }))
          : []
        // A query's own record has rrname at the top; an answer's, in `queries` (7.0) or at the top.
        const q = obj(Array.isArray(d.queries) ? d.queries[0] : undefined)
        push(into.dns, {
          ...ends(e), timestamp, type, id: int(d.id), rrname: text(d.rrname) ?? text(q.rrname), rrtype: text(d.rrtype) ?? text(q.rrtype),
          rcode: text(d.rcode), answers, source: o.source
        })
        break
      }
      case 'fileinfo': {
        const f = obj(e.fileinfo)
        const h = obj(e.http)
        const name = text(f.filename) ?? ''
        push(into.files, {
          id: int(f.file_id) ?? into.files.length + 1, filesize: int(f.size) ?? 0, filename: name.split('/').pop() || name, hostname: text(h.hostname), uri: text(h.url),
          md5: text(f.md5), sha1: text(f.sha1), sha256: text(f.sha256), magic: text(f.magic), referer: known(h.http_refer ?? h.http_referer),
          state: text(f.state), gaps: f.gaps === true, source: o.source
        })
        break
      }
    }
  }
}
