// IDS rules: the rule sets the IDS step loads on this workstation (Debian's protocol rules,
// Aviary's own, the ones imported), each with its rule count and age, an "Import a rule set"
// button taking an ET Open/ET Pro tarball or a .rules file from disk, and Remove for an imported
// set. Rule sets are this workstation's, so these calls always go to the local service
// (/aviary/ids/rules; `aviary rules` does the same from a terminal).
import { useRef, useState, type JSX } from 'react'
import { useQuery, useQueryClient } from '@tanstack/react-query'
import { fetchJson, sendJson } from '../api/http'
import { SafeText } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'
import { ErrorBody } from '../../../shared/api/schemas'
import { RuleSetImported, RuleSetList, type RuleSetView as RuleSet } from '../../../shared/api/ids'
import { counted } from '../format'

const KIND: Record<RuleSet['kind'], string> = { bundled: "Debian's suricata package", aviary: "Aviary's own", imported: 'imported' }
const key = ['ids', 'rules'] as const

/** The file's bytes (FileReader: every browser engine and the test's DOM have it; Blob.arrayBuffer not all). */
function readBytes(file: Blob): Promise<Uint8Array<ArrayBuffer>> {
  return new Promise((resolve, reject) => {
    const r = new FileReader()
    r.onload = () => resolve(new Uint8Array(r.result as ArrayBuffer))
    r.onerror = () => reject(r.error ?? new Error('the file could not be read'))
    r.readAsArrayBuffer(file)
  })
}

function age(ms: number): string {
  const days = Math.floor((Date.now() - ms) / 86_400_000)
  return days >= 1 ? `${days} day${days === 1 ? '' : 's'} ago` : 'today'
}

export function IdsRulesPage(): JSX.Element {
  const qc = useQueryClient()
  const sets = useQuery({ queryKey: key, queryFn: ({ signal }) => fetchJson(null, '/aviary/ids/rules', RuleSetList, {}, signal).then((r) => r.rulesets) })
  const input = useRef<HTMLInputElement>(null)
  const [busy, setBusy] = useState(false)
  const [note, setNote] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const act = async (work: () => Promise<string>): Promise<void> => {
    setBusy(true)
    setError(null)
    setNote(null)
    try {
      setNote(await work())
      await qc.invalidateQueries({ queryKey: key })
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err))
    } finally {
      setBusy(false)
    }
  }
  const upload = (file: File) => act(async () => {
    const r = await fetchJson(null, `/aviary/ids/rules?filename=${encodeURIComponent(file.name)}&replace=true`, RuleSetImported, {
      method: 'POST', body: await readBytes(file), headers: { 'Content-Type': 'application/octet-stream' }
    })
    return `${r.replaced ? 'Replaced' : 'Imported'} ${r.ruleset.name}: ${counted(r.ruleset.rules, 'rule')} in ${counted(r.ruleset.files, 'file')}.`
  })
  const remove = (name: string) => act(async () => {
    await sendJson(null, 'DELETE', `/aviary/ids/rules/${encodeURIComponent(name)}`, ErrorBody)
    return `Removed ${name}.`
  })
  return (
    <div className="max-w-4xl">
      <h1 className="mb-1 text-xl font-semibold">IDS rules</h1>
      <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">
        Suricata runs over every task&apos;s capture with these rule sets. Rule sets are not downloaded: import an ET Open or ET Pro
        tarball (its <code>rules/*.rules</code>) or a <code>.rules</code> file. A set of the same name is replaced.
      </p>
      <div className="mb-3 flex items-center gap-2">
        <button type="button" className="rounded bg-sky-700 px-3 py-1.5 text-sm text-white disabled:opacity-50" disabled={busy} onClick={() => input.current?.click()}>
          Import a rule set…
        </button>
        <input ref={input} type="file" aria-label="Rule set file" accept=".gz,.tgz,.tar,.rules" className="hidden"
          onChange={(e) => { const f = e.target.files?.[0]; e.target.value = ''; if (f) void upload(f) }} />
        {note !== null && <span role="status" className="text-sm text-emerald-700 dark:text-emerald-400"><SafeText value={note} /></span>}
      </div>
      {error !== null && <ErrorNote prefix="Not done" error={new Error(error)} />}
      {sets.error && <ErrorNote prefix="Could not list the rule sets" error={sets.error} />}
      <table className="w-full text-sm" aria-label="IDS rule sets">
        <thead><tr className="text-left text-zinc-500"><th className="py-1">set</th><th>rules</th><th>from</th><th>age</th><th><span className="sr-only">actions</span></th></tr></thead>
        <tbody>
          {(sets.data ?? []).map((s) => (
            <tr key={s.name} className="border-t border-zinc-200 dark:border-zinc-800">
              <td className="py-1 font-mono"><SafeText value={s.name} /></td>
              <td>{s.rules.toLocaleString('en-US')}</td>
              <td>{KIND[s.kind]}{s.source !== null && <> (<SafeText value={s.source} />)</>}</td>
              <td>{age(s.updated)}</td>
              <td className="text-right">
                {s.kind === 'imported' && (
                  <button type="button" className="text-sm text-red-700 underline disabled:opacity-50 dark:text-red-400" disabled={busy} onClick={() => void remove(s.name)}>
                    Remove<span className="sr-only"> {s.name}</span>
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
