// `aviary doctor` findings for the local service: each check marked ok / warn / fail (a word as
// well as a colour), with the reason and the fix for each failure.
import { useState, type JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { keys } from '../api/live'
import { SafeText } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'
import { levelOf, loadDoctor, type Finding } from './api'

const MARK = {
  ok: { sign: '✓', cls: 'text-emerald-700 dark:text-emerald-400' },
  warn: { sign: '!', cls: 'text-amber-700 dark:text-amber-400' },
  fail: { sign: '✗', cls: 'text-red-700 dark:text-red-400' }
} as const

function FindingRow({ f }: { f: Finding }): JSX.Element {
  const level = levelOf(f)
  return (
    <li data-level={level} className="flex gap-2 py-0.5">
      <span className={`w-12 shrink-0 font-semibold ${MARK[level].cls}`}>{MARK[level].sign} {level}</span>
      <span className="min-w-0">
        <span className="font-medium"><SafeText value={f.check} /></span>
        <span className="text-zinc-600 dark:text-zinc-300">: <SafeText value={f.detail} /></span>
        {f.fix && <span className="block text-xs text-zinc-500">Fix: <SafeText value={f.fix} /></span>}
      </span>
    </li>
  )
}

export function Doctor(): JSX.Element {
  const [deep, setDeep] = useState(false)
  const q = useQuery({
    queryKey: [...keys.all(null), 'doctor', deep],
    queryFn: ({ signal }) => loadDoctor(deep, signal),
    staleTime: 30_000,
    retry: false
  })
  return (
    <section aria-labelledby="doctor-title" className="flex flex-col gap-2">
      <header className="flex flex-wrap items-center gap-3">
        <h2 id="doctor-title" className="font-semibold">Doctor</h2>
        {q.data && <span className={`text-sm font-medium ${q.data.ok ? MARK.ok.cls : MARK.fail.cls}`}>{q.data.ok ? 'every check passed' : 'some checks failed'}</span>}
        <button type="button" onClick={() => void q.refetch()} disabled={q.isFetching}
          className="rounded border border-zinc-300 px-2 py-0.5 text-sm disabled:opacity-50 dark:border-zinc-700">{q.isFetching ? 'Checking…' : 'Check again'}</button>
        <label className="flex items-center gap-1 text-sm" title="Also reverts, starts and stops each machine and waits for its agent (slow)">
          <input type="checkbox" checked={deep} onChange={(e) => setDeep(e.target.checked)} /> deep
        </label>
      </header>
      {q.isPending && <p role="status" className="text-sm text-zinc-500">Checking the machines{deep ? ' (deep: this takes a while)' : ''}…</p>}
      {q.isError && <ErrorNote prefix="The doctor's findings are not available" error={q.error} />}
      {q.data && (
        <div className="flex flex-col gap-2 text-sm">
          <ul aria-label="machines.json"><FindingRow f={q.data.config} /></ul>
          {(q.data.routes ?? []).length > 0 && (
            <div>
              <h3 className="font-medium">Routes</h3>
              <ul aria-label="Findings for the routes" className="ml-2">
                {(q.data.routes ?? []).map((f, i) => <FindingRow key={`${f.check}-${i}`} f={f} />)}
              </ul>
            </div>
          )}
          {q.data.machines.map((m) => (
            <div key={m.name}>
              <h3 className="font-medium"><SafeText value={m.name} /> <span className="text-xs text-zinc-500">(<SafeText value={m.driver} />)</span></h3>
              <ul aria-label={`Findings for ${m.name}`} className="ml-2">
                {m.findings.map((f, i) => <FindingRow key={`${f.check}-${i}`} f={f} />)}
              </ul>
            </div>
          ))}
        </div>
      )}
    </section>
  )
}
