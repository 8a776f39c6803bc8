// The screen of a machine in prepare mode: the same ConsoleScreen as a run's Live tab, keyed by
// machine (GET /aviary/machines/<name>/console says whether prepare mode opened it, and why not),
// with a toggle that makes it fill the window. A driver without a console (NO_CONSOLE), or a
// display this host cannot reach, is said instead; the "how to reach it" text stays beside it.
import { useEffect, useState, type JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { fetchJson, localApiBase } from '../api/http'
import { SafeText } from '../components/text'
import { ConsoleScreen, type ConsolePhase } from '../console/ConsoleScreen'
import { MachineConsoleState } from '../../../shared/api/console'

const small = 'rounded border border-zinc-300 px-2 py-0.5 text-sm dark:border-zinc-700'

export function PrepareConsole({ machine }: { machine: string }): JSX.Element {
  const state = useQuery({
    queryKey: ['fleet-upkeep', 'console', machine],
    queryFn: ({ signal }) => fetchJson(null, `/aviary/machines/${encodeURIComponent(machine)}/console`, MachineConsoleState, {}, signal),
    refetchInterval: 5000,
    retry: false
  })
  const base = useQuery({ queryKey: ['localApiBase'], queryFn: localApiBase, staleTime: Infinity })
  const [phase, setPhase] = useState<ConsolePhase>({ phase: 'connecting' })
  const [attempt, setAttempt] = useState(0)
  const [full, setFull] = useState(false)

  useEffect(() => {
    if (!full) return
    const onKey = (e: KeyboardEvent) => {
      // Escape belongs to the guest while it has the keyboard; Ctrl+Alt+F leaves the full view.
      if (e.ctrlKey && e.altKey && e.key.toLowerCase() === 'f') setFull(false)
    }
    window.addEventListener('keydown', onKey, true)
    return () => window.removeEventListener('keydown', onKey, true)
  }, [full])

  if (state.isError) return <p role="alert" data-testid="prepare-no-screen" className="text-sm text-red-700 dark:text-red-400">Its screen: <SafeText value={state.error.message} /></p>
  if (!state.data || !base.data) return <p role="status" className="text-sm text-zinc-500">Opening its screen…</p>
  if (!state.data.available && phase.phase !== 'connected') {
    return <p data-testid="prepare-no-screen" className="rounded border border-zinc-200 px-3 py-2 text-sm dark:border-zinc-800">No screen here: <SafeText value={state.data.reason ?? 'unknown'} /></p>
  }
  const role = phase.phase === 'connected' ? (phase.role === 'interactive' ? 'You have the keyboard and mouse' : 'View only: another client has the keyboard and mouse') : phase.phase === 'connecting' ? 'Connecting…' : `Disconnected: ${phase.reason}`
  return (
    <div data-testid="prepare-console" className={full ? 'fixed inset-0 z-50 flex flex-col gap-1 bg-zinc-950 p-1 text-zinc-100' : 'flex flex-col gap-2'}>
      <div className="flex flex-wrap items-center gap-2 text-sm">
        <span className="font-medium">Screen of <SafeText value={machine} /></span>
        <button type="button" onClick={() => setFull((f) => !f)} aria-pressed={full} className={small}
          title={full ? 'Back to the page (Ctrl+Alt+F)' : 'The guest\'s screen fills the window (Ctrl+Alt+F to leave)'}>{full ? 'Leave full view' : 'Fill the window'}</button>
        {phase.phase === 'closed' && state.data.available && <button type="button" className={small} onClick={() => setAttempt((a) => a + 1)}>Reconnect</button>}
        {phase.phase === 'connected' && phase.role === 'view' && !state.data.interactive_taken && (
          <button type="button" className={small} onClick={() => setAttempt((a) => a + 1)}>Take control</button>
        )}
        <span data-testid="prepare-console-role" className="ml-auto text-zinc-600 dark:text-zinc-400">{role}</span>
      </div>
      <ConsoleScreen base={base.data} source={{ kind: 'machine', name: machine }} attempt={attempt} onPhase={setPhase}
        className={full ? 'min-h-0 flex-1' : 'h-[60vh] min-h-80 w-full rounded border border-zinc-300 dark:border-zinc-700'} />
      {!full && <p className="text-xs text-zinc-500">Keys and clicks go to the guest while the screen has the focus (click it). Prepare mode&apos;s sessions are not recorded.</p>}
    </div>
  )
}
