// The screenshot gallery: thumbnails (the `_small` picture when the source has one, else the shot
// itself), and a full-size view in a modal dialog driven by the keyboard: Left/Right move, Escape
// closes and gives focus back to the thumbnail it came from.
import { useEffect, useRef, useState, type JSX } from 'react'
import { SafeText } from '../components/text'
import { shotNames, type ReportSources } from './model'
import { Empty, Section } from './common'

const PAGE = 120

function Thumb({ name, sources, onOpen, index }: { name: string; sources: ReportSources; onOpen(i: number): void; index: number }): JSX.Element {
  const full = sources.screenshot(name, false)
  const [src, setSrc] = useState(sources.screenshot(name, true) ?? full)
  return (
    <button type="button" data-shot={index} onClick={() => onOpen(index)} aria-label={`Screenshot ${name}, open full size`}
      className="flex flex-col items-center gap-1 rounded border border-zinc-200 p-1 hover:border-sky-500 dark:border-zinc-800">
      {src ? <img src={src} alt="" loading="lazy" className="h-28 w-40 object-contain" onError={() => { if (src !== full) setSrc(full) }} /> : <span className="flex h-28 w-40 items-center justify-center text-xs text-zinc-500">not available</span>}
      <span className="text-xs"><SafeText value={name} /></span>
    </button>
  )
}

export function ScreenshotsView({ report, sources }: { report: unknown; sources: ReportSources }): JSX.Element {
  const names = shotNames(report, sources)
  const [open, setOpen] = useState<number | null>(null)
  const [limit, setLimit] = useState(PAGE)
  const grid = useRef<HTMLDivElement>(null)
  const dialog = useRef<HTMLDivElement>(null)
  const last = useRef<number | null>(null)

  useEffect(() => {
    if (open === null) {
      // Focus goes back to the thumbnail the viewer was opened from (or where it ended).
      if (last.current !== null) grid.current?.querySelector<HTMLButtonElement>(`[data-shot="${last.current}"]`)?.focus()
      return undefined
    }
    last.current = open
    dialog.current?.focus()
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') { e.preventDefault(); setOpen(null) }
      else if (e.key === 'ArrowRight') { e.preventDefault(); setOpen((i) => (i === null ? i : Math.min(names.length - 1, i + 1))) }
      else if (e.key === 'ArrowLeft') { e.preventDefault(); setOpen((i) => (i === null ? i : Math.max(0, i - 1))) }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [open, names.length])

  const current = open === null ? null : names[open]
  return (
    <Section title="Screenshots" count={names.length}>
      {names.length === 0 ? <Empty>No screenshots.</Empty> : (
        <div ref={grid} className="flex flex-wrap gap-2">
          {names.slice(0, limit).map((n, i) => <Thumb key={n} name={n} index={i} sources={sources} onOpen={setOpen} />)}
        </div>
      )}
      {names.length > limit && <button type="button" className="mt-2 text-sm text-sky-700 underline dark:text-sky-400" onClick={() => setLimit((l) => l + PAGE)}>show {Math.min(PAGE, names.length - limit)} more</button>}
      {current !== undefined && current !== null && open !== null && (
        <div className="fixed inset-0 z-50 flex items-center justify-center bg-black/80 p-4" onClick={() => setOpen(null)}>
          <div ref={dialog} role="dialog" aria-modal="true" aria-label={`Screenshot ${open + 1} of ${names.length}`} tabIndex={-1}
            className="flex max-h-full max-w-full flex-col items-center gap-2 text-white outline-none" onClick={(e) => e.stopPropagation()}>
            {sources.screenshot(current, false) ? <img src={sources.screenshot(current, false) ?? ''} alt={`Screenshot ${current}`} className="max-h-[85vh] max-w-full object-contain" /> : <p>Not available.</p>}
            <div className="flex items-center gap-3 text-sm">
              <button type="button" onClick={() => setOpen(Math.max(0, open - 1))} disabled={open === 0} aria-label="Previous screenshot">◀</button>
              <span><SafeText value={current} /> · {open + 1} / {names.length} · ←/→ to move, Esc to close</span>
              <button type="button" onClick={() => setOpen(Math.min(names.length - 1, open + 1))} disabled={open === names.length - 1} aria-label="Next screenshot">▶</button>
              <button type="button" onClick={() => setOpen(null)} aria-label="Close">✕</button>
            </div>
          </div>
        </div>
      )}
    </Section>
  )
}
