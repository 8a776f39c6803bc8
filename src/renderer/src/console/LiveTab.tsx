// The Live tab of a running task: the guest's screen (ConsoleScreen), a countdown to the end of
// the analysis with Extend and Finish now, and a view that fills the window. The state comes from
// GET /aviary/tasks/<id>/console every 2 s; the countdown runs on the service's clock (its `now`),
// so a page whose computer's clock is off still counts right. A machine without a console, or a
// task whose machine is still starting, says why instead.
import { useEffect, useState, type JSX } from 'react'
import { useQuery, useQueryClient } from '@tanstack/react-query'
import { fetchJson, localApiBase, sendJson, type ConnectionId } from '../api/http'
import { formatDuration } from '../format'
import { SafeText } from '../components/text'
import { ConsoleState, RunEnd } from '../../../shared/api/console'
import { ConsoleScreen, type ConsolePhase } from './ConsoleScreen'

const EXTENDS = [60, 300, 600]

function useNow(): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 500)
    return () => clearInterval(t)
  }, [])
  return now
}

export function LiveTab({ connection, id }: { connection: ConnectionId; id: number }): JSX.Element {
  if (connection !== null) {
    return <p className="text-sm text-zinc-600 dark:text-zinc-400" data-testid="live-unavailable">The live console is served by this computer&apos;s service only: a remote server&apos;s console is not carried through the connection (it would be a keyboard on that server&apos;s guest from another host).</p>
  }
  return <LocalLive id={id} />
}

function LocalLive({ id }: { id: number }): JSX.Element {
  const qc = useQueryClient()
  const key = ['console', id]
  const state = useQuery({
    queryKey: key,
    queryFn: async ({ signal }) => {
      const t0 = Date.now()
      const s = await fetchJson(null, `/aviary/tasks/${id}/console`, ConsoleState, {}, signal)
      // The service's clock against ours, at the middle of the request.
      return { s, skew: s.now - (t0 + Date.now()) / 2 }
    },
    refetchInterval: 2000,
    retry: false
  })
  const base = useQuery({ queryKey: ['localApiBase'], queryFn: localApiBase, staleTime: Infinity })
  const now = useNow()
  const [phase, setPhase] = useState<ConsolePhase>({ phase: 'connecting' })
  const [attempt, setAttempt] = useState(0)
  const [full, setFull] = useState(false)
  const [busy, setBusy] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)

  useEffect(() => {
    if (!full) return
    const onKey = (e: KeyboardEvent) => {
      // Escape belongs to the guest while it has the keyboard; Ctrl+Alt+F leaves the full view.
      if (e.ctrlKey && e.altKey && e.key.toLowerCase() === 'f') setFull(false)
    }
    window.addEventListener('keydown', onKey, true)
    return () => window.removeEventListener('keydown', onKey, true)
  }, [full])

  const act = async (what: string, path: string, body?: unknown) => {
    setBusy(what)
    setError(null)
    try {
      await sendJson(null, 'POST', path, RunEnd, body)
      await qc.invalidateQueries({ queryKey: key })
    } catch (err) {
      setError((err as Error).message)
    } finally {
      setBusy(null)
    }
  }

  if (state.isError) return <p role="alert" className="text-sm text-red-700 dark:text-red-400">Live console: <SafeText value={state.error.message} /></p>
  if (!state.data || !base.data) return <p role="status" className="text-sm text-zinc-500">Opening the live console…</p>
  const s = state.data.s
  const serverNow = now + state.data.skew
  const left = s.ends_at === null ? null : Math.max(0, Math.round((s.ends_at - serverNow) / 1000))
  const canAct = s.ends_at !== null && !s.finishing

  const countdown = (
    <span data-testid="live-countdown" className="tabular-nums" aria-live="off">
      {s.finishing ? 'finishing…' : left === null ? 'the machine is starting' : left === 0 ? 'ending…' : `${formatDuration(left)} left`}
      {s.extended_by > 0 && <span className="ml-1 text-zinc-500">(extended by {formatDuration(s.extended_by)})</span>}
    </span>
  )
  const role = phase.phase === 'connected' ? (phase.role === 'interactive' ? 'You have the keyboard and mouse' : 'View only: another client has the keyboard and mouse') : phase.phase === 'connecting' ? 'Connecting…' : `Disconnected: ${phase.reason}`

  const bar = (
    <div className="flex flex-wrap items-center gap-2 text-sm">
      <span className="font-medium">Live</span>
      {countdown}
      <span className="mx-1 text-zinc-400">·</span>
      {EXTENDS.map((sec) => (
        <button key={sec} type="button" disabled={!canAct || busy !== null} onClick={() => void act('extend', `/aviary/tasks/${id}/extend`, { seconds: sec })}
          title={canAct ? `Move the end of the analysis ${formatDuration(sec)} later` : 'Only a running analysis can be extended'}
          className="rounded border border-zinc-300 px-2 py-0.5 disabled:opacity-50 dark:border-zinc-700">Extend +{sec / 60} min</button>
      ))}
      <button type="button" disabled={!canAct || busy !== null}
        onClick={() => { if (window.confirm('End the analysis now? The guest is stopped and the report is made from what was recorded.')) void act('finish', `/aviary/tasks/${id}/finish`) }}
        title="End the analysis now: the analyzer is told, its results are kept, the machine is stopped"
        className="rounded bg-sky-700 px-2 py-0.5 text-white disabled:opacity-50">Finish now</button>
      <button type="button" onClick={() => setFull((f) => !f)} aria-pressed={full}
        title={full ? 'Back to the page (Ctrl+Alt+F)' : 'The guest\'s screen fills the window (Ctrl+Alt+F to leave)'}
        className="rounded border border-zinc-300 px-2 py-0.5 dark:border-zinc-700">{full ? 'Leave full view' : 'Fill the window'}</button>
      <span data-testid="live-role" className="ml-auto text-zinc-600 dark:text-zinc-400">{role}</span>
      {phase.phase === 'closed' && s.available && (
        <button type="button" onClick={() => setAttempt((a) => a + 1)} className="rounded border border-zinc-300 px-2 py-0.5 dark:border-zinc-700">Reconnect</button>
      )}
      {phase.phase === 'connected' && phase.role === 'view' && !s.interactive_taken && (
        <button type="button" onClick={() => setAttempt((a) => a + 1)} className="rounded border border-zinc-300 px-2 py-0.5 dark:border-zinc-700">Take control</button>
      )}
      {error !== null && <span role="alert" className="w-full text-red-700 dark:text-red-400"><SafeText value={error} /></span>}
    </div>
  )

  if (!s.available && phase.phase !== 'connected') {
    return (
      <div className="flex flex-col gap-2" data-testid="live-tab">
        {bar}
        <p data-testid="live-unavailable" className="rounded border border-zinc-200 px-3 py-2 text-sm dark:border-zinc-800">No live console: <SafeText value={s.reason ?? 'unknown'} /></p>
      </div>
    )
  }
  return (
    <div data-testid="live-tab" className={full ? 'fixed inset-0 z-50 flex flex-col gap-1 bg-zinc-950 p-1 text-zinc-100' : 'flex flex-col gap-2'}>
      {bar}
      <ConsoleScreen base={base.data} source={{ kind: 'task', id }} attempt={attempt} onPhase={setPhase}
        className={full ? 'min-h-0 flex-1' : 'h-[70vh] min-h-80 w-full rounded border border-zinc-300 dark:border-zinc-700'} />
      {!full && <p className="text-xs text-zinc-500">Keys and clicks go to the guest while the screen has the focus (click it). Every session is recorded into the analysis and can be played back from the report.{s.interactive_option ? ' This task is interactive: the machine is kept until the end or Finish now.' : ''}</p>}
    </div>
  )
}
