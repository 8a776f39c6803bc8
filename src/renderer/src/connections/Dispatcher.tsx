// A dispatcher's nodes and tasks, through the proxy. Dispatchers come in two generations (see
// shared/spec/dispatcher-api.md): the newer under /api with a `success` envelope, the older at
// the root; both key nodes by name and tasks by id, so the objects are turned into rows here.
import type { JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { fetchJson, HttpError, type ConnectionId } from '../api/http'
import { keys } from '../api/live'
import { SafeText } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'

interface DistNode {
  name: string; url: string; machines?: { name: string; platform: string; tags: string[] }[]
  /** Aviary's dispatcher only: */ enabled?: boolean; failures?: number; last_seen?: string | null; token?: boolean
}

/** What Aviary's dispatcher says of a node's health (Cuckoo's says nothing: a dash). */
function nodeState(n: DistNode): { text: string; title: string } {
  if (n.enabled === undefined && n.failures === undefined) return { text: '—', title: 'not reported by this dispatcher' }
  const seen = n.last_seen ? `last answered ${n.last_seen}` : 'never answered'
  // Aviary's dispatcher lists enabled nodes only (the spec); earlier versions listed disabled ones too.
  if (n.enabled === false) return { text: 'disabled', title: seen }
  // The worker's default threshold of failed contacts (src/dispatcher/worker).
  if ((n.failures ?? 0) >= 3) return { text: 'unreachable', title: `${n.failures} failed contacts; ${seen}` }
  return { text: 'up', title: seen }
}
interface DistTask {
  id?: number; task_id?: number | null; node_id?: number | null; finished?: boolean
  path?: string | null; filename?: string | null; url?: string | null; status?: string; package?: string | null; platform?: string | null; priority?: number; machine?: string | null; clock?: string | null
}

/** The newer route, else the older one (a 404 from the newer generation's absence). */
async function getEither<T>(c: ConnectionId, path: string, signal?: AbortSignal): Promise<T> {
  try {
    return await fetchJson<T>(c, `/api${path}`, {}, signal)
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return fetchJson<T>(c, path.split('?')[0]!, {}, signal)
    throw err
  }
}

const rows = <T,>(o: Record<string, T> | T[] | undefined): [string, T][] =>
  Array.isArray(o) ? o.map((v, i) => [String(i), v]) : Object.entries(o ?? {})

const th = 'px-2 py-1 text-left font-medium'
const td = 'px-2 py-1'

export function DispatcherView({ connection }: { connection: number }): JSX.Element {
  const nodes = useQuery({
    queryKey: [...keys.all(connection), 'dist', 'nodes'],
    queryFn: ({ signal }) => getEither<{ nodes?: Record<string, DistNode> | DistNode[] }>(connection, '/node', signal),
    refetchInterval: 30_000
  })
  const tasks = useQuery({
    queryKey: [...keys.tasks(connection), 'dist'],
    queryFn: ({ signal }) => getEither<{ tasks?: Record<string, DistTask> }>(connection, '/task?limit=200', signal),
    refetchInterval: 10_000
  })
  return (
    <div className="flex flex-col gap-3">
      <section aria-label="Dispatcher nodes">
        <h3 className="mb-1 text-sm font-semibold">Nodes</h3>
        {nodes.isPending && <p role="status" className="text-sm">Loading…</p>}
        {nodes.isError && <ErrorNote prefix="Could not list the nodes" error={nodes.error} />}
        {nodes.data && (rows(nodes.data.nodes).length === 0 ? <p className="text-sm text-zinc-500">No nodes registered.</p> : (
          <table className="w-full text-sm">
            <thead><tr className="border-b border-zinc-200 dark:border-zinc-800"><th className={th}>Name</th><th className={th}>URL</th><th className={th}>State</th><th className={th}>Machines</th></tr></thead>
            <tbody>
              {rows(nodes.data.nodes).map(([k, n]) => (
                <tr key={k} data-node={n.name} className="border-b border-zinc-100 dark:border-zinc-900">
                  <td className={td}><SafeText value={n.name} /></td>
                  <td className={`${td} font-mono text-xs`}><SafeText value={n.url} /></td>
                  <td className={td} title={nodeState(n).title}>
                    {nodeState(n).text}
                    {n.token && <span className="ml-1 rounded bg-zinc-100 px-1 text-xs dark:bg-zinc-800" title="the dispatcher sends this node's API token">token</span>}
                  </td>
                  <td className={td}>{(n.machines ?? []).map((m) => (
                    <span key={m.name} className="mr-1 inline-block rounded bg-zinc-100 px-1 text-xs dark:bg-zinc-800" title={m.tags.join(', ')}>
                      <SafeText value={m.name} /> (<SafeText value={m.platform} />)
                    </span>
                  ))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      </section>
      <section aria-label="Dispatcher tasks">
        <h3 className="mb-1 text-sm font-semibold">Tasks</h3>
        {tasks.isPending && <p role="status" className="text-sm">Loading…</p>}
        {tasks.isError && <ErrorNote prefix="Could not list the tasks" error={tasks.error} />}
        {tasks.data && (rows(tasks.data.tasks).length === 0 ? <p className="text-sm text-zinc-500">No tasks.</p> : (
          <table className="w-full text-sm">
            <thead>
              <tr className="border-b border-zinc-200 dark:border-zinc-800">
                <th className={th}>Id</th><th className={th}>Node task</th><th className={th}>Node</th><th className={th}>Sample</th>
                <th className={th}>Package</th><th className={th}>Platform</th><th className={th}>Status</th>
              </tr>
            </thead>
            <tbody>
              {rows(tasks.data.tasks).sort((a, b) => Number(b[0]) - Number(a[0])).map(([k, t]) => (
                <tr key={k} className="border-b border-zinc-100 dark:border-zinc-900">
                  <td className={`${td} tabular-nums`}>{t.id ?? k}</td>
                  <td className={`${td} tabular-nums`}>{t.task_id ?? '—'}</td>
                  <td className={`${td} tabular-nums`}>{t.node_id ?? '—'}</td>
                  {/* The sample's own name (Aviary's dispatcher and Cuckoo 2.0's keep `filename`), else its URL or stored path. */}
                  <td className={`${td} max-w-xs truncate`} title={t.path ?? undefined}><SafeText value={t.filename ?? t.url ?? t.path ?? ''} /></td>
                  <td className={td}><SafeText value={t.package ?? ''} /></td>
                  <td className={td}><SafeText value={t.platform ?? ''} /></td>
                  <td className={td}>{t.status ?? (t.finished === undefined ? '—' : t.finished ? 'finished' : 'unfinished')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      </section>
    </div>
  )
}
