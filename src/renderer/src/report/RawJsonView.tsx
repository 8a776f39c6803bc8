// The report as it is: a collapsed tree (children are drawn only when a node is opened, so a
// 100 MB report opens at once), or pretty text up to a size guard, with the whole file downloadable.
import { useMemo, useState, type JSX } from 'react'
import { replaceInvisible } from '../../../shared/invisible'
import { SafeText } from '../components/text'
import { Download } from './common'

const MAX_CHILDREN = 1000
export const MAX_PRETTY_CHARS = 2_000_000

// JSON.stringify escapes C0 controls and lone surrogates but leaves the rest of the invisible set
// (src/shared/invisible.ts: C1 controls, bidi overrides, zero-width and tag characters) raw: written
// as \uXXXX escapes (a pair of them for an astral character) they stay valid JSON and are seen, not
// applied. A raw line feed can only be the indentation's (a string's is escaped already): it stays.
const jsonEscape = (_: number, c: string): string => c === '\n'
  ? c
  : Array.from({ length: c.length }, (_u, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')
export function escapeInvisible(json: string): string {
  return replaceInvisible(json, jsonEscape)
}

function Leaf({ value }: { value: unknown }): JSX.Element {
  if (typeof value === 'string') return <span className="text-emerald-700 dark:text-emerald-400">"<SafeText value={value.length > 5000 ? `${value.slice(0, 5000)}… (${value.length - 5000} more)` : value} />"</span>
  return <span className="text-sky-700 dark:text-sky-400">{value === null ? 'null' : String(value as number | boolean)}</span>
}

function Node({ name, value }: { name: string; value: unknown }): JSX.Element {
  const [open, setOpen] = useState(false)
  const label = <SafeText value={name} className="text-zinc-600 dark:text-zinc-400" />
  if (value === null || typeof value !== 'object') return <li>{label}: <Leaf value={value} /></li>
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value as Record<string, unknown>)
  return (
    <li>
      <details open={open} onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
        <summary className="cursor-pointer">{label} <span className="text-zinc-500">{Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`}</span></summary>
        {open && (
          <ul className="ml-4 border-l border-zinc-200 pl-2 dark:border-zinc-800">
            {entries.slice(0, MAX_CHILDREN).map(([k, v]) => <Node key={k} name={k} value={v} />)}
            {entries.length > MAX_CHILDREN && <li className="text-zinc-500">{entries.length - MAX_CHILDREN} more not shown</li>}
          </ul>
        )}
      </details>
    </li>
  )
}

export function RawJsonView({ report, download }: { report: unknown; download: string | null }): JSX.Element {
  const [mode, setMode] = useState<'tree' | 'text'>('tree')
  const { text, error } = useMemo(() => {
    if (mode !== 'text') return { text: '', error: null }
    // A hostile report can nest deeper than JSON.stringify's stack allows.
    try { return { text: escapeInvisible(JSON.stringify(report, null, 2) ?? ''), error: null } } catch (err) { return { text: '', error: (err as Error).message } }
  }, [mode, report])
  return (
    <div className="text-sm">
      <div className="mb-2 flex gap-3">
        <button type="button" aria-pressed={mode === 'tree'} onClick={() => setMode('tree')} className={mode === 'tree' ? 'font-semibold' : 'underline'}>Tree</button>
        <button type="button" aria-pressed={mode === 'text'} onClick={() => setMode('text')} className={mode === 'text' ? 'font-semibold' : 'underline'}>Text</button>
        <Download href={download} name="report.json">Download report.json</Download>
      </div>
      {error !== null && <p role="alert" className="text-amber-700 dark:text-amber-400">This report cannot be shown as text ({error}): use the tree or download it.</p>}
      {mode === 'tree' ? <ul className="font-mono text-xs"><Node name="report" value={report} /></ul> : (
        <>
          {text.length > MAX_PRETTY_CHARS && <p className="mb-1 text-amber-700 dark:text-amber-400">The report is {(text.length / 1e6).toFixed(1)} million characters: the first {MAX_PRETTY_CHARS / 1e6} million are shown. Download it for the rest.</p>}
          <pre tabIndex={0} aria-label="report.json (scrollable)" className="max-h-[70vh] overflow-auto rounded bg-zinc-50 p-2 text-xs focus-visible:outline-2 focus-visible:outline-sky-500 dark:bg-zinc-900">{text.slice(0, MAX_PRETTY_CHARS)}</pre>
        </>
      )}
    </div>
  )
}
