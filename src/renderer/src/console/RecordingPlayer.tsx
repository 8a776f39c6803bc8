// The console sessions of a task, played back (docs/ui.md, "The live console"): one recording at a
// time, with play and pause, a seek bar marked where the analyst typed or clicked, and the speed.
// The same player reads the API's recordings and the files of an archive opened offline: it is
// given each recording's loader.
import { useEffect, useRef, useState, type JSX } from 'react'
import { parseRecording, type Recording } from '../../../shared/console-recording'
import { counted, formatDuration } from '../format'
import { SafeText } from '../components/text'
import { Replayer } from './replay'

export interface RecordingSource {
  name: string
  bytes: number
  load(): Promise<ArrayBuffer>
}

const SPEEDS = [0.5, 1, 2, 4, 8, 16]

export function RecordingPlayer({ recordings }: { recordings: RecordingSource[] }): JSX.Element {
  const [pick, setPick] = useState(0)
  if (recordings.length === 0) return <p className="text-sm text-zinc-500" data-testid="no-recordings">No console session was opened during this analysis.</p>
  const current = recordings[Math.min(pick, recordings.length - 1)]!
  return (
    <div className="flex flex-col gap-2" data-testid="recordings">
      <div className="flex flex-wrap gap-2 text-sm" role="tablist" aria-label="Console sessions">
        {recordings.map((r, i) => (
          <button key={r.name} type="button" role="tab" aria-selected={i === pick} onClick={() => setPick(i)}
            className={`rounded border px-2 py-0.5 ${i === pick ? 'border-sky-700 bg-sky-50 dark:bg-sky-950' : 'border-zinc-300 dark:border-zinc-700'}`}>
            Session {Number.parseInt(r.name, 10)} <span className="text-zinc-500">({formatBytes(r.bytes)})</span>
          </button>
        ))}
      </div>
      <Player key={current.name} source={current} />
    </div>
  )
}

function formatBytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`
}

/** The seek bar's step, in ms. */
const BAR_STEP = 100

function Player({ source }: { source: RecordingSource }): JSX.Element {
  const screen = useRef<HTMLDivElement>(null)
  const player = useRef<Replayer | null>(null)
  const [loaded, setLoaded] = useState<{ rec: Recording } | { error: string } | null>(null)
  const [position, setPosition] = useState(0)
  const [playing, setPlaying] = useState(false)
  const [speed, setSpeed] = useState(1)

  // The parent keys this component by the recording's name: a new name is a new Player.
  const load = useRef(source.load)
  useEffect(() => {
    let gone = false
    load.current().then((buf) => {
      if (gone || !screen.current) return
      const bytes = new Uint8Array(buf)
      const rec = parseRecording(bytes)
      player.current = new Replayer(screen.current, rec, bytes, (p, on) => {
        setPosition(p)
        setPlaying(on)
      })
      setLoaded({ rec })
      player.current.seek(0)
    }).catch((err: unknown) => { if (!gone) setLoaded({ error: (err as Error).message }) })
    return () => {
      gone = true
      player.current?.dispose()
      player.current = null
    }
  }, [])

  const rec = loaded && 'rec' in loaded ? loaded.rec : null
  const duration = rec?.duration ?? 0
  const ended = rec !== null && position >= duration && !playing
  const barMax = Math.max(BAR_STEP, Math.ceil(duration / BAR_STEP) * BAR_STEP)
  return (
    <div className="flex flex-col gap-2">
      {loaded && 'error' in loaded && <p role="alert" className="text-sm text-red-700 dark:text-red-400">This recording cannot be played: <SafeText value={loaded.error} /></p>}
      {loaded === null && <p role="status" className="text-sm text-zinc-500">Loading the recording…</p>}
      {rec && (
        <div className="flex flex-wrap items-center gap-2 text-sm">
          <button type="button" onClick={() => (playing ? player.current?.pause() : player.current?.play())}
            className="w-20 rounded bg-sky-700 px-2 py-0.5 text-white">{playing ? 'Pause' : 'Play'}</button>
          <label className="flex items-center gap-1">Speed
            <select value={speed} onChange={(e) => { const v = Number(e.target.value); setSpeed(v); if (player.current) player.current.speed = v }}
              className="rounded border border-zinc-300 bg-transparent px-1 dark:border-zinc-700">
              {SPEEDS.map((s) => <option key={s} value={s}>{s}×</option>)}
            </select>
          </label>
          <span className="tabular-nums" data-testid="replay-time" data-ended={ended ? 'true' : 'false'}>{formatDuration(position / 1000)} / {formatDuration(duration / 1000)}</span>
          <span className="text-zinc-500">
            {rec.meta.role === 'view' ? 'view-only session' : 'interactive session'}, opened {new Date(rec.meta.started).toLocaleString()}
            {rec.input.length > 0 && `, ${counted(rec.input.reduce((a, i) => a + i.keys, 0), 'key')} and ${counted(rec.input.reduce((a, i) => a + i.clicks, 0), 'click')}`}
            {rec.ended !== null && <> · ended: <SafeText value={rec.ended} /></>}
            {rec.capped && ' · the recording reached its cap: the rest was not recorded'}
            {rec.truncated && ' · the file ends mid-record (cut short)'}
          </span>
        </div>
      )}
      {rec && (
        <div className="relative pt-2">
          {/* Where the analyst typed (sky) or clicked (amber). */}
          <div aria-hidden className="pointer-events-none absolute inset-x-0 top-0 h-2">
            {duration > 0 && rec.input.slice(0, 2000).map((m, i) => (
              <span key={i} className={`absolute top-0 h-2 w-0.5 ${m.clicks > 0 ? 'bg-amber-500' : 'bg-sky-600'}`} style={{ left: `${(m.time / duration) * 100}%` }} />
            ))}
          </div>
          {/* A range snaps its value to a multiple of its step. A max that is not one could not be
              reached (End landed up to 99 ms short, before the recording's last frames), and a value
              that is not one is changed by the browser, which then fires a change event of its own:
              End sought to the end, and that event sought back to the step before it. So the max
              is the duration rounded up to a step, the value shown is always on a step (the max
              once the end is reached), and the player clamps a seek to the duration. */}
          <input type="range" min={0} max={barMax} step={BAR_STEP} value={position >= duration ? barMax : Math.floor(position / BAR_STEP) * BAR_STEP} aria-label="Position in the recording"
            aria-valuetext={`${formatDuration(position / 1000)} of ${formatDuration(duration / 1000)}`}
            onChange={(e) => player.current?.seek(Number(e.target.value))} className="w-full" />
        </div>
      )}
      <div ref={screen} data-testid="replay-screen" className="h-[60vh] min-h-72 w-full overflow-hidden rounded border border-zinc-300 bg-zinc-900 dark:border-zinc-700" />
    </div>
  )
}
