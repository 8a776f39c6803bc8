// The Tasks page's compare bar: the tasks picked in the list (a row's checkbox, or Space on the
// selected row), at most two and from any connection (pick one, switch server, pick another), and
// the button that opens them side by side.
import type { JSX } from 'react'
import { useNavigate } from 'react-router'
import { useConnections } from '../components/ConnectionPicker'
import { SafeText } from '../components/text'
import { compareHref, usePicked } from './refs'

export function CompareBar(): JSX.Element {
  const picked = usePicked((s) => s.picked)
  const toggle = usePicked((s) => s.toggle)
  const clear = usePicked((s) => s.clear)
  const navigate = useNavigate()
  const { data } = useConnections()
  const serverName = (c: number | null) => (c === null ? 'This computer' : data?.find((x) => x.id === c)?.name ?? `connection ${c}`)
  const ready = picked.length === 2
  return (
    <div role="group" aria-label="Compare" className="flex flex-wrap items-center gap-2 text-sm">
      <button type="button" disabled={!ready} onClick={() => void navigate(compareHref(picked[0] ?? null, picked[1] ?? null))}
        title={ready ? 'Open the two tasks side by side' : 'Pick two tasks with their checkboxes (or Space on a row) to compare them'}
        className="rounded bg-sky-700 px-2 py-0.5 text-white hover:bg-sky-800 disabled:cursor-not-allowed disabled:bg-zinc-400 disabled:text-zinc-900">
        Compare{picked.length > 0 ? ` (${picked.length} of 2)` : ''}
      </button>
      {picked.length === 0 && <span className="text-zinc-600 dark:text-zinc-400">Pick two tasks to compare them.</span>}
      {picked.map((r) => (
        <span key={`${r.connection ?? 'local'}:${r.id}`} className="inline-flex items-center gap-1 rounded bg-zinc-100 px-1.5 dark:bg-zinc-800" data-testid="picked">
          task {r.id} · <SafeText value={serverName(r.connection)} />
          <button type="button" aria-label={`Do not compare task ${r.id}`} onClick={() => toggle(r)} className="px-0.5 text-zinc-700 hover:text-black dark:text-zinc-300 dark:hover:text-white">×</button>
        </span>
      ))}
      {picked.length > 0 && <button type="button" onClick={clear} className="text-sky-800 underline dark:text-sky-300">clear</button>}
    </div>
  )
}
