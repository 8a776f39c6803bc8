// `aviary doctor`'s IDS lines: whether Suricata is there (and which), and each rule set the IDS
// step loads with its rule count and age (processing/suricata). The IDS is optional — a task
// without it still has its report, its `suricata.skipped` saying why — so these lines inform and
// never fail the doctor.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type { Finding } from '../machinery/driver'
import { findBinary } from '../processing/suricata'
import { listRuleSets } from '../processing/suricata/rulesets'
import { loadSuricataSettings, type SuricataSettings } from '../processing/suricata/settings'

const run = promisify(execFile)

/** "3 days", "5 hours", "12 minutes": how long ago `then` was. */
export function age(then: number, now = Date.now()): string {
  const s = Math.max(0, (now - then) / 1000)
  const [n, unit] = s >= 86_400 ? [s / 86_400, 'day'] : s >= 3600 ? [s / 3600, 'hour'] : [s / 60, 'minute']
  const k = Math.floor(n)
  return `${k} ${unit}${k === 1 ? '' : 's'}`
}

export async function checkIds(suricataDir: string, now = Date.now()): Promise<Finding[]> {
  let settings: SuricataSettings
  try {
    settings = loadSuricataSettings(suricataDir)
  } catch (err) {
    return [{ check: 'IDS settings', ok: false, detail: (err as Error).message, fix: 'correct the field named above (docs/network.md, "The IDS step")' }]
  }
  const out: Finding[] = []
  if (!settings.enabled) return [{ check: 'suricata', ok: true, detail: 'turned off in suricata.json: tasks are not given to the IDS' }]
  const binary = findBinary(settings.binary)
  if (binary === null) {
    out.push({ check: 'suricata', ok: false, detail: `not installed (no '${settings.binary}'): tasks' reports say the IDS was skipped`,
      fix: 'sudo scripts/install-debian-deps.sh (Suricata 7 from bookworm-backports)' })
  } else {
    const version = await run(binary, ['-V'], { timeout: 10_000 }).then((r) => /version (\S+)/.exec(r.stdout)?.[1] ?? 'unknown version', () => null)
    out.push(version === null
      ? { check: 'suricata', ok: false, detail: `${binary} does not run`, fix: 'reinstall it: sudo apt-get install --reinstall -t bookworm-backports suricata' }
      : { check: 'suricata', ok: true, detail: `${version} (${binary})` })
  }
  const sets = listRuleSets(suricataDir, { bundledRules: settings.bundledRules })
  if (sets.length === 0) out.push({ check: 'rules', ok: false, detail: 'no rule set: the IDS step is skipped', fix: 'aviary rules import <ET Open tarball or .rules file>' })
  for (const s of sets) {
    const from = s.kind === 'bundled' ? `Debian's suricata package, ${s.files.length} files` : s.kind === 'aviary' ? "Aviary's own" : `imported from ${s.source ?? 'a file'}`
    out.push({ check: `rules: ${s.name}`, ok: true, detail: `${s.rules} rules, ${s.kind === 'imported' ? 'imported' : 'updated'} ${age(s.updated, now)} ago (${new Date(s.updated).toISOString().slice(0, 10)}; ${from})` })
  }
  return out
}
