// "Create Linux machine": the form of `aviary machines create linux` (name, count), and the build's
// progress as it goes: each step (done, under way), the notes, and the last lines of the tools'
// own output. The page follows a build it did not start too (one running when it opens, or a
// rebuild started from a machine's panel): the events are read from the last seq seen on.
import { useEffect, useState, type FormEvent, type JSX } from 'react'
import { useQueryClient } from '@tanstack/react-query'
import { keys } from '../api/live'
import { SafeText } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'
import { HttpError } from '../api/http'
import { loadBuild, loadBuilds, startLinuxBuild, type BuildEvent, type BuildJob } from './api'

const STEPS: Record<string, string> = {
  check: 'Checking the host', image: 'Debian image', disk: 'Disk', define: 'Domain', boot: 'Booting',
  settle: 'Settling', snapshot: 'Snapshot', register: 'machines.json', doctor: 'Doctor', cleanup: 'Cleaning up'
}
const OUTPUT_SHOWN = 12

/** Follows build `id` from its first event; answers the job so far, every event kept. */
export function useBuild(id: number | null): { job: BuildJob | null; events: BuildEvent[]; error: unknown } {
  const [state, setState] = useState<{ job: BuildJob | null; events: BuildEvent[]; error: unknown }>({ job: null, events: [], error: null })
  const qc = useQueryClient()
  useEffect(() => {
    if (id === null) return
    let stopped = false
    let since = 0
    let timer: ReturnType<typeof setTimeout> | undefined
    const ctrl = new AbortController()
    setState({ job: null, events: [], error: null })
    const tick = async (): Promise<void> => {
      try {
        const { build } = await loadBuild(id, since, ctrl.signal)
        if (stopped) return
        since = build.last_seq
        setState((s) => ({ job: build, events: [...s.events, ...build.events], error: null }))
        if (build.state !== 'running') {
          void qc.invalidateQueries({ queryKey: keys.machines(null) })
          void qc.invalidateQueries({ queryKey: ['fleet-upkeep'] })
          return
        }
      } catch (err) {
        if (stopped) return
        setState((s) => ({ ...s, error: err }))
      }
      timer = setTimeout(() => void tick(), 1000)
    }
    void tick()
    return () => {
      stopped = true
      ctrl.abort()
      clearTimeout(timer)
    }
  }, [id, qc])
  return state
}

export function BuildProgress({ id }: { id: number }): JSX.Element {
  const { job, events, error } = useBuild(id)
  const steps = events.filter((e) => e.kind === 'step')
  const output = events.filter((e) => e.kind === 'output').slice(-OUTPUT_SHOWN)
  const running = job?.state === 'running'
  return (
    <section aria-label="Machine build" data-build-state={job?.state ?? 'loading'} className="flex flex-col gap-2 rounded border border-zinc-200 p-3 text-sm dark:border-zinc-800">
      <h3 className="font-medium">
        {job?.kind === 'rebuild' ? 'Rebuild' : 'Build'} {id}
        {job && <> · <SafeText value={String(job.request.name ?? 'linux')} />: {running ? 'under way' : job.state === 'succeeded' ? 'done' : 'failed'}</>}
      </h3>
      <ol className="flex flex-col gap-0.5" aria-label="Steps">
        {steps.map((s, i) => {
          const current = running && i === steps.length - 1
          const notes = events.filter((e) => e.kind === 'note' && e.seq > s.seq && (i + 1 >= steps.length || e.seq < steps[i + 1]!.seq))
          return (
            <li key={s.seq} data-step={s.step} data-current={current} className={current ? 'font-medium' : 'text-zinc-700 dark:text-zinc-300'}>
              <span aria-hidden>{current ? '▶ ' : '✓ '}</span>
              {STEPS[s.step] ?? s.step}{s.machine && <> · <SafeText value={s.machine} /></>}: <SafeText value={s.message} />
              {notes.map((n) => <div key={n.seq} className="ml-5 text-xs text-zinc-600 dark:text-zinc-400"><SafeText value={n.message} /></div>)}
            </li>
          )
        })}
      </ol>
      {output.length > 0 && (
        <pre aria-label="Tool output" className="max-h-48 overflow-auto rounded bg-zinc-100 p-2 text-xs dark:bg-zinc-900">{output.map((o) => o.message).join('\n')}</pre>
      )}
      {job?.state === 'failed' && job.error && (
        <p role="alert" className="whitespace-pre-wrap text-red-700 dark:text-red-300"><SafeText value={job.error.message} /></p>
      )}
      {job?.state === 'succeeded' && job.result && (
        <p role="status" className="text-emerald-700 dark:text-emerald-300">
          Ready: {job.result.machines.map((m) => `${m.name} (${m.ip})`).join(', ')}. Submit a sample to analyse on it.
        </p>
      )}
      {error instanceof Error && <ErrorNote prefix="Could not read the build" error={error} />}
    </section>
  )
}

/** The build the page shows: the one it started, else one that is running when it opens. */
export function useCurrentBuild(): [number | null, (id: number) => void] {
  const [id, setId] = useState<number | null>(null)
  useEffect(() => {
    const ctrl = new AbortController()
    loadBuilds(ctrl.signal).then((b) => {
      const running = b.builds.find((j) => j.state === 'running')
      if (running) setId((cur) => cur ?? running.id)
    }, () => undefined)
    return () => ctrl.abort()
  }, [])
  return [id, setId]
}

export function CreateLinux({ buildId, onStarted, empty }: { buildId: number | null; onStarted(id: number): void; empty: boolean }): JSX.Element {
  const [name, setName] = useState('linux')
  const [count, setCount] = useState('1')
  const [error, setError] = useState<{ field: string | null; message: string } | null>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault()
    setError(null)
    setBusy(true)
    try {
      // What was typed goes as it is: the server names the field it refuses, as the CLI does.
      const { build } = await startLinuxBuild({ name: name.trim() || undefined, count: /^\d+$/.test(count.trim()) ? Number(count) : count })
      onStarted(build.id)
    } catch (err) {
      const message = err instanceof HttpError ? err.message : (err as Error).message
      setError({ field: /^(name|count|memory|vcpus|network): /.exec(message)?.[1] ?? null, message })
    } finally {
      setBusy(false)
    }
  }
  const fieldClass = (f: string): string => `w-full rounded border px-2 py-1 dark:bg-zinc-900 ${error?.field === f ? 'border-red-600' : 'border-zinc-300 dark:border-zinc-700'}`
  return (
    <section aria-labelledby="create-linux" className="flex flex-col gap-2 rounded-lg border border-zinc-200 p-3 dark:border-zinc-800">
      <h2 id="create-linux" className="font-semibold">Create Linux machine</h2>
      <p className="text-sm text-zinc-700 dark:text-zinc-300">
        {empty ? 'This service has no analysis machine yet. ' : ''}
        A Debian 12 guest built from Debian's packages, with the agent, on the network <code>aviary setup</code> made;
        several are overlays of one image. The first build downloads about 30 MB of packages and takes a few minutes.
      </p>
      <form onSubmit={(e) => void submit(e)} className="flex flex-wrap items-end gap-3 text-sm">
        <label className="flex flex-col gap-1">Name
          <input name="name" value={name} onChange={(e) => setName(e.target.value)} maxLength={64} aria-invalid={error?.field === 'name'}
            aria-describedby={error?.field === 'name' ? 'create-error' : undefined} className={fieldClass('name')} />
        </label>
        <label className="flex flex-col gap-1">Count
          <input name="count" value={count} onChange={(e) => setCount(e.target.value)} inputMode="numeric" size={4} aria-invalid={error?.field === 'count'}
            aria-describedby={error?.field === 'count' ? 'create-error' : undefined} className={fieldClass('count')} />
        </label>
        <button type="submit" disabled={busy}
          className="rounded bg-sky-700 px-3 py-1 text-white hover:bg-sky-800 disabled:cursor-not-allowed disabled:bg-zinc-400">
          {busy ? 'Starting…' : 'Create Linux machine'}
        </button>
      </form>
      {error && <p id="create-error" role="alert" className="text-sm text-red-700 dark:text-red-300"><SafeText value={error.message} /></p>}
      {buildId !== null && <BuildProgress key={buildId} id={buildId} />}
    </section>
  )
}
