// report.html's IDS section: Suricata's alerts on the capture (and on the decrypted HTTPS of mitm=1
// tasks), or why Suricata did not run. Its HTTP/TLS/DNS records are in report.json and the UI.
import { text } from './escape'
import type { PageWriter } from './page-writer'
import { table, type Obj } from './blocks'
import { num, obj, objs, str } from '../report-view'

const ends = (a: Obj, side: 'src' | 'dst'): string => {
  const port = num(a, `${side}_port`)
  return `${text(str(a, `${side}_ip`), 60)}${port === null ? '' : `:${port}`}`
}

export async function suricataSection(w: PageWriter, report: Obj): Promise<void> {
  const s = obj(report, 'suricata')
  const skipped = str(s, 'skipped')
  const alerts = objs(s, 'alerts')
  if (Object.keys(s).length === 0) return
  w.put(`<section id="suricata"><h2>IDS alerts (${alerts.length})</h2>`)
  if (skipped !== '') w.put(`<p class="muted">Suricata did not run: ${text(skipped, 500)}</p>`)
  else if (alerts.length === 0) w.put('<p class="muted">No alerts.</p>')
  else {
    await table(w, alerts, [
      { title: 'severity', cell: (a) => text(num(a, 'severity')) },
      { title: 'sid', cell: (a) => text(num(a, 'sid')) },
      { title: 'signature', cell: (a) => text(str(a, 'signature'), 300) },
      { title: 'category', cell: (a) => text(str(a, 'category'), 100) },
      { title: 'from', cell: (a) => ends(a, 'src') },
      { title: 'to', cell: (a) => ends(a, 'dst') },
      { title: 'protocol', cell: (a) => text(str(a, 'protocol'), 20) + (str(a, 'source') === 'decrypted' ? ' (decrypted)' : '') },
      { title: 'time', cell: (a) => text(str(a, 'timestamp'), 40) }
    ], 'alerts')
  }
  w.put('</section>')
}
