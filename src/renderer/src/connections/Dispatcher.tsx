// A dispatcher's nodes and tasks, through the proxy (dist-api.ts reads both generations). A task
// names its node (Aviary's dispatcher gives each node's id) and opens to what the dispatcher knows
// of it, with the fetched report once finished (DispatcherTask.tsx).
import type { JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { Link } from 'react-router'
import { keys } from '../api/live'
import { SafeText } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'
import { useUi } from '../state/ui'
import { DistTasks, entries as rows, getEither, nodeNames, taskTarget, useDistNodes, type DistNode } from './dist-api'

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

const th = 'px-2 py-1 text-left font-medium'
const td = 'px-2 py-1'

export function DispatcherView({ connection }: { connection: number }): JSX.Element {
  const nodes = useDistNodes(connection)
  const names = nodeNames(nodes.data?.nodes)
  const setConnection = useUi((s) => s.setConnection)
  const tasks = useQuery({
    queryKey: [...keys.tasks(connection), 'dist'],
    queryFn: ({ signal }) => getEither(connection, '/task?limit=200', DistTasks, signal),
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
                  <td className={`${td} tabular-nums`}>
                    {/^\d{1,15}$/.test(String(t.id ?? k)) ? (
                      <Link to={`/tasks/${t.id ?? k}`} aria-label={`Task ${t.id ?? k}`} onClick={() => setConnection(connection)}
                        title="Open what the dispatcher knows of this task (this switches the pages to this dispatcher)"
                        className="text-sky-800 underline dark:text-sky-300">{t.id ?? k}</Link>
                    ) : <SafeText value={k} />}
                  </td>
                  <td className={`${td} tabular-nums`}>{t.task_id ?? '—'}</td>
                  <td className={td}>{typeof t.node_id === 'number' ? <SafeText value={names.get(t.node_id) ?? `#${t.node_id}`} /> : '—'}</td>
                  {/* The sample's own name (Aviary's dispatcher and Cuckoo 2.0's keep `filename`), else its URL or stored path. */}
                  <td className={`${td} max-w-xs truncate`} title={t.path ?? undefined}><SafeText value={taskTarget(t)} /></td>
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
