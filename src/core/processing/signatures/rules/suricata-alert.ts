// Fire on the IDS's alerts (the report's `suricata.alerts`, processing/suricata): Suricata's
// severity is its rule's classtype priority, 1 the highest. A priority-1 alert (a trojan's
// traffic, an exploit) is a danger; a priority-2 one (bad or unknown traffic, a policy the rule
// set calls bad) is suspicious. Priority 3 and below — protocol anomalies, informational rules —
// stay on the Network tab and do not count towards the score: benign programs raise them too.
// One mark per distinct rule, with the first alert's connection.
import type { SignatureRule } from '../signature'
import { num, obj, objs, str } from '../../../reporting/report-view'

function alertsOf(report: Record<string, unknown>, keep: (severity: number) => boolean, mark: Parameters<SignatureRule['run']>[1]): void {
  const seen = new Set<number>()
  for (const a of objs(obj(report, 'suricata'), 'alerts')) {
    const sid = num(a, 'sid')
    const severity = num(a, 'severity') ?? 3
    if (sid === null || seen.has(sid) || !keep(severity)) continue
    seen.add(sid)
    mark.generic({
      sid, signature: str(a, 'signature'), category: str(a, 'category'), severity,
      src_ip: str(a, 'src_ip'), src_port: num(a, 'src_port'), dst_ip: str(a, 'dst_ip'), dst_port: num(a, 'dst_port'), protocol: str(a, 'protocol'),
      ...(str(a, 'source') === 'decrypted' ? { decrypted: true } : {})
    })
  }
}

export const suricataAlertHigh: SignatureRule = {
  name: 'suricata_alert_high',
  description: 'The IDS raised high-severity alerts on the traffic (Suricata priority 1)',
  severity: 3,
  categories: ['network', 'ids'],
  ttp: [],
  run: (report, mark) => alertsOf(report, (s) => s <= 1, mark)
}

export const suricataAlert: SignatureRule = {
  name: 'suricata_alert',
  description: 'The IDS raised alerts on the traffic (Suricata priority 2)',
  severity: 2,
  categories: ['network', 'ids'],
  ttp: [],
  run: (report, mark) => alertsOf(report, (s) => s === 2, mark)
}
