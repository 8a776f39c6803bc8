// One local machine: start, stop and revert (refused while a task holds it), and its screen,
// refreshed every few seconds while this panel is open. What the server says cannot be done
// (/aviary/machines: a physical machine has no power, snapshot or screen to drive; nothing is
// driven without the engine) is not offered, or is disabled, with the reason; and a screen that
// cannot be had is not asked for.
import { useState, type JSX, type ReactNode } from 'react'
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { keys } from '../api/live'
import { SafeText } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'
import { machineAction, useLiveScreenshot, type Machine, type MachineAction } from './api'

const ACTIONS: { action: MachineAction; label: string; hint: string }[] = [
  { action: 'start', label: 'Start', hint: 'Start the machine' },
  { action: 'stop', label: 'Stop', hint: 'Power the machine off' },
  { action: 'revert', label: 'Revert', hint: 'Revert to its snapshot' }
]

export function MachinePanel({ machine, onClose, children }: { machine: Machine; onClose(): void; children?: ReactNode }): JSX.Element {
  const qc = useQueryClient()
  const [done, setDone] = useState<string | null>(null)
  const act = useMutation({
    mutationFn: (a: MachineAction) => machineAction(machine.name, a),
    onMutate: () => setDone(null),
    onSuccess: (r, a) => {
      setDone(`${a}: done, status ${r.machine.status ?? 'unknown'}`)
      void qc.invalidateQueries({ queryKey: keys.machines(null) })
    }
  })
  const controls = machine.controls
  const refused = (a: MachineAction): string | null => {
    const c = controls?.[a]
    return c && !c.allowed ? c.reason ?? 'not possible here' : null
  }
  // What the machine's driver can never do (a physical machine: power, revert) is not offered; the reasons are said instead.
  const offered = ACTIONS.filter(({ action }) => controls?.[action].by !== 'driver')
  const notOffered = [...new Set(ACTIONS.filter(({ action }) => controls?.[action].by === 'driver').map(({ action }) => refused(action) as string))]
  // Without /aviary/machines (an older service), the screen is asked for only while the machine runs.
  const screen = controls ? (controls.screenshot.allowed ? null : controls.screenshot.reason ?? 'not available')
    : machine.status === 'running' ? null : `the machine is not running (${machine.status ?? 'state unknown'})`
  return (
    <section aria-label={`Machine ${machine.name}`} className="flex flex-col gap-3 rounded-lg border border-zinc-200 p-3 dark:border-zinc-800">
      <header className="flex items-center gap-2">
        <h2 className="font-semibold"><SafeText value={machine.name} /></h2>
        <button type="button" onClick={onClose} aria-label="Close machine panel" className="ml-auto rounded px-2 text-zinc-500 hover:bg-zinc-100 dark:hover:bg-zinc-800">✕</button>
      </header>
      <div className="flex flex-wrap items-center gap-2">
        {notOffered.length > 0 && (
          <p data-testid="no-controls" className="text-sm text-zinc-700 dark:text-zinc-300">
            No {ACTIONS.filter((a) => !offered.includes(a)).map((a) => a.label.toLowerCase()).join(', ')}: <SafeText value={notOffered.join('; ')} />.
          </p>
        )}
        {offered.map(({ action, label, hint }) => (
            <button key={action} type="button" disabled={machine.locked || act.isPending || refused(action) !== null}
              title={refused(action) ?? (machine.locked ? 'Locked by a running task' : hint)}
              onClick={() => act.mutate(action)}
              className="rounded border border-zinc-300 px-3 py-1 text-sm hover:bg-zinc-100 disabled:cursor-not-allowed disabled:border-zinc-200 disabled:text-zinc-500 dark:border-zinc-700 dark:hover:bg-zinc-800 dark:disabled:border-zinc-800 dark:disabled:text-zinc-400">
              {act.isPending && act.variables === action ? `${label}…` : label}
            </button>
          ))}
        {machine.locked && <span className="text-xs text-amber-700 dark:text-amber-300">Locked by a running task: controls are disabled.</span>}
        {done && <span role="status" className="text-xs text-emerald-700 dark:text-emerald-300">{done}</span>}
      </div>
      {act.isError && <ErrorNote prefix={`Could not ${act.variables ?? 'do that'}`} error={act.error} />}
      {children}
      {screen === null
        ? <LiveScreen name={machine.name} />
        : <p data-testid="no-screen" className="text-sm text-zinc-700 dark:text-zinc-300">No live screen: <SafeText value={screen} />.</p>}
    </section>
  )
}

function LiveScreen({ name }: { name: string }): JSX.Element {
  const shot = useLiveScreenshot(name)
  return (
    <figure className="flex flex-col gap-1">
      <figcaption className="text-xs text-zinc-500">
        Live screen{shot.at && !shot.error ? ` · ${shot.at.toLocaleTimeString()}` : ''}
      </figcaption>
      {shot.error ? (
        <div data-testid="screenshot-unavailable" className="flex h-48 items-center justify-center rounded bg-zinc-100 p-4 text-center text-sm text-zinc-500 dark:bg-zinc-900">
          <span>Screenshot not available{shot.error.status === 409 || shot.error.status === 404 ? '' : ' (error)'}: <SafeText value={shot.error.message} /></span>
        </div>
      ) : shot.url ? (
        <img src={shot.url} alt={`Screen of ${name}`} className="max-h-[60vh] w-auto self-start rounded border border-zinc-200 dark:border-zinc-800" />
      ) : (
        <div role="status" className="flex h-48 items-center justify-center rounded bg-zinc-100 text-sm text-zinc-500 dark:bg-zinc-900">Loading screenshot…</div>
      )}
    </figure>
  )
}
