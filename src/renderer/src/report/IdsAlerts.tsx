// The Network tab's IDS part: what Suricata said about the traffic (the report's `suricata`,
// processing/suricata): its alerts — the decrypted HTTPS of mitm=1 tasks marked — and the TLS
// handshakes' JA3 fingerprints, or why the IDS did not run. The alerts' text is the rule sets',
// their addresses the sample's: all of it goes through SafeText.
import type { JSX } from 'react'
import { SafeText } from '../components/text'
import { num, obj, objs, str, type Obj } from './model'
import { DataTable, Mono, Section } from './common'

const SEVERITY: Record<number, string> = { 1: 'high', 2: 'medium', 3: 'low' }
const endpoint = (o: Obj, side: 'src' | 'dst') => `${str(o, `${side}_ip`)}${num(o, `${side}_port`) !== null ? `:${num(o, `${side}_port`)}` : ''}`

export function IdsAlerts({ report }: { report: unknown }): JSX.Element | null {
  const s = obj(report, 'suricata')
  if (Object.keys(s).length === 0) return null
  const alerts = objs(s, 'alerts')
  const tls = objs(s, 'tls').filter((t) => str(obj(t, 'ja3'), 'hash') !== '')
  const skipped = str(s, 'skipped')
  const suppressed = Object.values(obj(s, 'suppressed')).reduce<number>((n, v) => n + (typeof v === 'number' ? v : 0), 0)
  const sets = objs(s, 'rulesets').map((r) => `${str(r, 'name')} (${num(r, 'rules') ?? 0})`).join(', ')
  return (
    <Section title="IDS alerts" count={alerts.length}>
      {skipped !== ''
        ? <p className="text-sm text-zinc-600 dark:text-zinc-400">Suricata did not run: <SafeText value={skipped} /></p>
        : (
          <>
            <p className="mb-1 text-sm text-zinc-600 dark:text-zinc-400">
              Suricata {str(s, 'version') || ''} with the rule sets {sets || 'none'}
              {suppressed > 0 ? `; ${suppressed} noise alert${suppressed === 1 ? '' : 's'} (checksum, stream) left out` : ''}.
            </p>
            <DataTable rows={alerts} label="IDS alerts" empty="No alerts." columns={[
              { title: 'severity', cell: (a) => SEVERITY[num(a, 'severity') ?? 3] ?? String(num(a, 'severity')), sort: (a) => num(a, 'severity') ?? 9 },
              { title: 'signature', cell: (a) => <><SafeText value={str(a, 'signature')} />{str(a, 'source') === 'decrypted' && <span className="ml-1 rounded bg-zinc-200 px-1 text-xs dark:bg-zinc-700">decrypted</span>}</>, sort: (a) => str(a, 'signature') },
              { title: 'sid', cell: (a) => num(a, 'sid'), sort: (a) => num(a, 'sid') ?? 0 },
              { title: 'category', cell: (a) => <SafeText value={str(a, 'category')} />, sort: (a) => str(a, 'category') },
              { title: 'source', cell: (a) => <Mono value={endpoint(a, 'src')} />, sort: (a) => str(a, 'src_ip') },
              { title: 'destination', cell: (a) => <Mono value={endpoint(a, 'dst')} />, sort: (a) => str(a, 'dst_ip') },
              { title: 'protocol', cell: (a) => <SafeText value={str(a, 'app_proto') || str(a, 'protocol')} />, sort: (a) => str(a, 'protocol') },
              { title: 'time', cell: (a) => <Mono value={str(a, 'timestamp')} />, sort: (a) => str(a, 'timestamp') }
            ]} />
            {tls.length > 0 && (
              <DataTable rows={tls} label="TLS fingerprints (JA3)" columns={[
                { title: 'server', cell: (t) => <Mono value={str(t, 'sni') || endpoint(t, 'dst')} />, sort: (t) => str(t, 'sni') },
                { title: 'JA3', cell: (t) => <Mono value={str(obj(t, 'ja3'), 'hash')} />, sort: (t) => str(obj(t, 'ja3'), 'hash') },
                { title: 'JA3S', cell: (t) => <Mono value={str(obj(t, 'ja3s'), 'hash')} /> },
                { title: 'version', cell: (t) => <SafeText value={str(t, 'version')} /> }
              ]} />
            )}
          </>
        )}
    </Section>
  )
}
