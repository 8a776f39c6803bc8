// One task of a dispatcher in use (/tasks/<id> while a dispatcher is the connection): what the
// dispatcher knows of it (state, node, the node's task, the sample), and once it is finished the
// report the dispatcher fetched, in the same report views as any task (its pcap from the
// dispatcher too; other files stay on the node, deleted there once fetched).
import { useState, type JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { apiBase } from '../api/http'
import { keys } from '../api/live'
import { SafeText } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'
import { KeyValues, Mono } from '../report/common'
import { ReportViews } from '../report/ReportViews'
import type { ReportSources } from '../report/model'
import { Type } from 'typebox'
import { DistTasks, entries, getEither, nodeNames, taskTarget, useDistNodes } from './dist-api'

export function DispatcherTask({ connection, id }: { connection: number; id: number }): JSX.Element {
  const [tab, setTab] = useState('summary')
  const task = useQuery({
    queryKey: [...keys.task(connection, id), 'dist'],
    queryFn: ({ signal }) => getEither(connection, `/task/${id}`, DistTasks, signal),
    refetchInterval: (q) => (entries(q.state.data?.tasks)[0]?.[1]?.status === 'finished' ? false : 10_000),
    retry: false
  })
  const nodes = useDistNodes(connection)
  const t = entries(task.data?.tasks)[0]?.[1]
  const finished = t?.status === 'finished'
  const base = useQuery({ queryKey: ['apiBase', connection], queryFn: () => apiBase(connection), staleTime: Infinity })
  const report = useQuery({
    queryKey: [...keys.task(connection, id), 'dist', 'report'],
    queryFn: ({ signal }) => getEither(connection, `/report/${id}/json`, Type.Unknown(), signal),
    enabled: finished, retry: false, staleTime: Infinity
  })
  const node = typeof t?.node_id === 'number' ? nodeNames(nodes.data?.nodes).get(t.node_id) ?? `#${t.node_id}` : null
  const sources: ReportSources | null = base.data ? {
    screenshot: () => null, memoryDump: () => null, droppedFile: () => null, droppedArchive: () => null,
    pcap: () => `${base.data}/api/pcap/${id}`
  } : null
  return (
    <section aria-label={`Dispatcher task ${id}`} className="flex flex-col gap-3">
      <h1 className="text-xl font-semibold">Dispatcher task {id}</h1>
      {task.isPending && <p role="status" className="text-sm text-zinc-600 dark:text-zinc-400">Loading the task…</p>}
      {task.isError && <ErrorNote prefix={`Task ${id}`} error={task.error} />}
      {task.data && !t && <p className="text-sm">The dispatcher has no task {id}.</p>}
      {t && (
        <KeyValues rows={[
          ['State', <SafeText key="s" value={t.status ?? (t.finished ? 'finished' : 'unfinished')} />],
          ['Sample', taskTarget(t) !== '' && <Mono value={taskTarget(t)} />],
          ['Node', node !== null ? <SafeText value={node} /> : 'not assigned yet'],
          ['Task on the node', typeof t.task_id === 'number' ? String(t.task_id) : null],
          ['Package', t.package && <SafeText value={t.package} />],
          ['Platform', t.platform && <SafeText value={t.platform} />],
          ['Machine', t.machine && <SafeText value={t.machine} />]
        ]} />
      )}
      {t && !finished && <p className="text-sm text-zinc-700 dark:text-zinc-300">The report comes here once the node has analysed it and the dispatcher has fetched it.</p>}
      {finished && report.isPending && <p role="status" className="text-sm text-zinc-600 dark:text-zinc-400">Loading the report…</p>}
      {finished && report.isError && <ErrorNote prefix="Report" error={report.error} />}
      {finished && report.data !== undefined && sources && (
        <ReportViews report={report.data} sources={sources} rawDownload={`${base.data}/api/report/${id}/json`} tab={tab} onTab={setTab} />
      )}
    </section>
  )
}
