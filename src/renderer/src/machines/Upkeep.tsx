// Keeping a local machine and the fleet: Delete and Rebuild (each asked again before it is done),
// prepare mode (the machine started for the user to change, then Keep or Discard; how to reach it
// meanwhile: its live console with keyboard and mouse, and in words as a fallback), and the
// leftovers a crash left.
import { useState, type JSX } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { keys } from '../api/live'
import { SafeText } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'
import { PrepareConsole } from './PrepareConsole'
import {
  deleteMachine, endPrepare, loadLeftovers, loadPreparing, prepareMachine, rebuildMachine, removeLeftovers, sizeText, type Machine
} from './api'

const button = 'rounded border border-zinc-300 px-3 py-1 text-sm hover:bg-zinc-100 disabled:cursor-not-allowed disabled:text-zinc-500 dark:border-zinc-700 dark:hover:bg-zinc-800'
const danger = 'rounded bg-red-700 px-3 py-1 text-sm text-white hover:bg-red-800 disabled:bg-zinc-400'

type Ask = 'delete' | 'rebuild' | 'keep' | 'discard' | null

const QUESTIONS: Record<Exclude<Ask, null>, (m: string) => string> = {
  delete: (m) => `Delete ${m}? Its entry in machines.json goes; for a machine Aviary made, its domain, snapshots and disk too.`,
  rebuild: (m) => `Rebuild ${m}? It is deleted, then made again from the image under the same name (changes made in prepare mode are lost).`,
  keep: (m) => `Keep ${m} as it is now? Its snapshot is replaced: every analysis will start from this state.`,
  discard: (m) => `Discard the changes made to ${m}? It goes back to its snapshot.`
}

/** Delete, Rebuild and prepare mode for one machine of the local service. */
export function MachineUpkeep({ machine, built, onBuild, onDeleted }: {
  machine: Machine
  /** Made by Aviary (it can be rebuilt). */
  built: boolean
  onBuild(id: number): void
  onDeleted(): void
}): JSX.Element {
  const qc = useQueryClient()
  const [ask, setAsk] = useState<Ask>(null)
  const [done, setDone] = useState<string | null>(null)
  const preparing = useQuery({ queryKey: ['fleet-upkeep', 'preparing'], queryFn: ({ signal }) => loadPreparing(signal), refetchInterval: 10_000 })
  const mine = preparing.data?.preparing.find((p) => p.machine === machine.name)
  const refresh = (): void => {
    void qc.invalidateQueries({ queryKey: keys.machines(null) })
    void qc.invalidateQueries({ queryKey: ['fleet-upkeep'] })
  }
  const act = useMutation({
    mutationFn: async (a: Exclude<Ask, null> | 'prepare'): Promise<string> => {
      switch (a) {
        case 'delete': return `deleted: ${(await deleteMachine(machine.name)).removed.join(', ')}`
        case 'rebuild': { const { build } = await rebuildMachine(machine.name); onBuild(build.id); return `rebuild ${build.id} started` }
        case 'prepare': await prepareMachine(machine.name); return 'prepare mode: the machine runs from its snapshot and takes no task'
        case 'keep': await endPrepare(machine.name, 'keep'); return 'kept: its snapshot is the machine as you left it'
        case 'discard': await endPrepare(machine.name, 'discard'); return 'discarded: back to its snapshot'
      }
    },
    onMutate: () => setDone(null),
    onSuccess: (text, a) => {
      setAsk(null)
      setDone(text)
      refresh()
      if (a === 'delete') onDeleted()
    }
  })
  const kvm = machine.driver === 'kvm'
  const held = machine.locked && !mine
  return (
    <div className="flex flex-col gap-2" data-testid="machine-upkeep">
      <div className="flex flex-wrap items-center gap-2">
        {kvm && !mine && (
          <button type="button" className={button} disabled={act.isPending || held} onClick={() => act.mutate('prepare')}
            title={held ? 'Locked by a running task' : 'Start it from its snapshot for you to change (install software); then keep or discard'}>
            {act.isPending && act.variables === 'prepare' ? 'Preparing…' : 'Prepare'}
          </button>
        )}
        {mine && <>
          <button type="button" className={button} disabled={act.isPending} onClick={() => setAsk('keep')}>Keep changes</button>
          <button type="button" className={button} disabled={act.isPending} onClick={() => setAsk('discard')}>Discard changes</button>
        </>}
        {built && <button type="button" className={button} disabled={act.isPending || machine.locked} onClick={() => setAsk('rebuild')}
          title={machine.locked ? 'In use: try when it is released' : 'Delete it and make it again'}>Rebuild</button>}
        <button type="button" className={button} disabled={act.isPending || machine.locked} onClick={() => setAsk('delete')}
          title={machine.locked ? 'In use: try when it is released' : 'Delete the machine'}>Delete</button>
        {done && <span role="status" className="text-xs text-emerald-700 dark:text-emerald-300"><SafeText value={done} /></span>}
      </div>
      {mine && (
        <div data-testid="prepare-reach" className="rounded bg-amber-50 p-2 text-sm text-amber-950 dark:bg-amber-950 dark:text-amber-100">
          <p>In prepare mode since {new Date(mine.since).toLocaleTimeString()}: no task is given this machine. Change the guest on its screen below, then keep or discard. Other ways to reach it:</p>
          <ul className="ml-5 list-disc font-mono text-xs">{mine.reach.map((r) => <li key={r}><SafeText value={r} /></li>)}</ul>
        </div>
      )}
      {mine && <PrepareConsole machine={machine.name} />}
      {ask && (
        <div role="alertdialog" aria-label={`Confirm ${ask}`} className="flex flex-wrap items-center gap-2 rounded border border-red-300 p-2 text-sm dark:border-red-800">
          <span><SafeText value={QUESTIONS[ask](machine.name)} /></span>
          <button type="button" className={ask === 'keep' ? button : danger} disabled={act.isPending} onClick={() => act.mutate(ask)}>
            {act.isPending ? 'Working…' : `Yes, ${ask}`}
          </button>
          <button type="button" className={button} onClick={() => setAsk(null)}>Cancel</button>
        </div>
      )}
      {act.isError && <ErrorNote prefix={`Could not ${act.variables ?? 'do that'}`} error={act.error} />}
    </div>
  )
}

/** What a crash or an interrupted build left (folders, domains, snapshots, images), offered for removal. */
export function Leftovers(): JSX.Element {
  const qc = useQueryClient()
  const [ask, setAsk] = useState(false)
  // Looked for when asked (it reads every domain's definition from libvirt); the doctor looks too.
  const [look, setLook] = useState(false)
  const q = useQuery({ queryKey: ['fleet-upkeep', 'leftovers'], queryFn: ({ signal }) => loadLeftovers(signal), enabled: look })
  const remove = useMutation({
    mutationFn: () => removeLeftovers((q.data?.leftovers ?? []).map((l) => l.name)),
    onSuccess: () => {
      setAsk(false)
      void qc.invalidateQueries({ queryKey: ['fleet-upkeep'] })
    }
  })
  const items = q.data?.leftovers ?? []
  return (
    <section aria-labelledby="leftovers" className="flex flex-col gap-2 rounded-lg border border-zinc-200 p-3 text-sm dark:border-zinc-800">
      <h2 id="leftovers" className="font-semibold">Leftovers</h2>
      {!q.data
        ? <>
          <p>Folders, domains, snapshots and images a crash or an interrupted build may have left, which nothing in machines.json uses.</p>
          <button type="button" className={`${button} self-start`} disabled={q.isFetching} onClick={() => setLook(true)}>
            {q.isFetching ? 'Looking…' : 'Look for leftovers'}
          </button>
        </>
        : items.length === 0
        ? <p role="status">{remove.data ? `Removed ${remove.data.removed.length}; nothing` : 'Nothing'} is left over.</p>
        : <>
          <p>Nothing in machines.json uses these (a crash or an interrupted build left them):</p>
          <ul className="ml-5 list-disc">
            {items.map((l) => (
              <li key={`${l.kind} ${l.name}`} data-leftover={l.name}>
                {l.kind} <code><SafeText value={l.name} /></code>{l.bytes > 0 && ` (${sizeText(l.bytes)})`}: <SafeText value={l.why} />
              </li>
            ))}
          </ul>
          {!ask
            ? <button type="button" className={`${button} self-start`} onClick={() => setAsk(true)}>Remove leftovers</button>
            : (
              <div role="alertdialog" aria-label="Confirm removal" className="flex flex-wrap items-center gap-2">
                <span>Remove these {items.length}? This cannot be undone.</span>
                <button type="button" className={danger} disabled={remove.isPending} onClick={() => remove.mutate()}>{remove.isPending ? 'Removing…' : 'Yes, remove'}</button>
                <button type="button" className={button} onClick={() => setAsk(false)}>Cancel</button>
              </div>
            )}
        </>}
      {remove.data && remove.data.failed.length > 0 && (
        <p role="alert" className="text-red-700 dark:text-red-300">Not removed: {remove.data.failed.map((f) => `${f.item.name} (${f.error})`).join('; ')}</p>
      )}
      {q.isError && <ErrorNote prefix="Could not look for leftovers" error={q.error} />}
      {remove.isError && <ErrorNote prefix="Could not remove the leftovers" error={remove.error} />}
    </section>
  )
}
