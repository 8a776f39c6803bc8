// The saved connections: use one, edit it, delete it (after a confirmation in place), and for a
// dispatcher open its nodes and tasks.
import { useState, type JSX } from 'react'
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { SafeText, When } from '../components/text'
import { useUi } from '../state/ui'
import { ErrorNote } from '../dashboard/ErrorNote'
import { CONNECTIONS_KEY, deleteConnection, type SavedConnection } from './api'
import { ConnectionForm } from './ConnectionForm'
import { DispatcherView } from './Dispatcher'

const btn = 'rounded border border-zinc-300 px-2 py-0.5 text-xs hover:bg-zinc-100 disabled:opacity-50 dark:border-zinc-700 dark:hover:bg-zinc-800'

function Row({ c }: { c: SavedConnection & { created_on?: string } }): JSX.Element {
  const qc = useQueryClient()
  const current = useUi((s) => s.connection)
  const setConnection = useUi((s) => s.setConnection)
  const [mode, setMode] = useState<'view' | 'edit' | 'confirm' | 'dispatcher'>('view')
  const del = useMutation({
    mutationFn: () => deleteConnection(c.id),
    onSuccess: () => {
      if (useUi.getState().connection === c.id) setConnection(null)
      void qc.invalidateQueries({ queryKey: CONNECTIONS_KEY })
    }
  })
  const inUse = current === c.id
  return (
    <li data-connection={c.id} aria-label={`Connection ${c.name}`} className="flex flex-col gap-2 border-b border-zinc-100 py-2 dark:border-zinc-900">
      <div className="flex flex-wrap items-center gap-2 text-sm">
        <span className="font-medium"><SafeText value={c.name} /></span>
        <span className="font-mono text-xs text-zinc-500"><SafeText value={c.url} /></span>
        <span className="rounded bg-zinc-100 px-1 text-xs dark:bg-zinc-800">{c.kind}</span>
        {c.has_token && <span className="text-xs text-zinc-500" title="A token is saved on this computer's service; the page never sees it">🔑 token</span>}
        {c.created_on && <span className="text-xs text-zinc-500">added <When value={c.created_on} /></span>}
        <span className="ml-auto flex gap-1">
          {inUse
            ? <span className="rounded bg-sky-100 px-2 py-0.5 text-xs font-medium text-sky-900 dark:bg-sky-900 dark:text-sky-100">in use</span>
            : <button type="button" className={btn} onClick={() => setConnection(c.id)}>Use</button>}
          {c.kind === 'dispatcher' && (
            <button type="button" className={btn} aria-expanded={mode === 'dispatcher'} onClick={() => setMode(mode === 'dispatcher' ? 'view' : 'dispatcher')}>Nodes and tasks</button>
          )}
          <button type="button" className={btn} aria-expanded={mode === 'edit'} onClick={() => setMode(mode === 'edit' ? 'view' : 'edit')}>Edit</button>
          <button type="button" className={btn} onClick={() => setMode('confirm')}>Delete</button>
        </span>
      </div>
      {mode === 'confirm' && (
        <div role="alertdialog" aria-label={`Delete ${c.name}?`} className="flex items-center gap-2 text-sm">
          Delete <SafeText value={c.name} />? Its tasks stay on that server.
          <button type="button" autoFocus className={`${btn} border-red-400 text-red-700 dark:text-red-400`} disabled={del.isPending} onClick={() => del.mutate()}>Delete</button>
          <button type="button" className={btn} onClick={() => setMode('view')}>Keep</button>
        </div>
      )}
      {del.isError && <ErrorNote prefix="Could not delete" error={del.error} />}
      {mode === 'edit' && <ConnectionForm editing={c} onDone={() => setMode('view')} />}
      {mode === 'dispatcher' && <DispatcherView connection={c.id} />}
    </li>
  )
}

export function ConnectionList({ connections }: { connections: SavedConnection[] }): JSX.Element {
  const current = useUi((s) => s.connection)
  const setConnection = useUi((s) => s.setConnection)
  return (
    <ul aria-label="Saved connections" className="flex flex-col">
      <li className="flex items-center gap-2 border-b border-zinc-100 py-2 text-sm dark:border-zinc-900">
        <span className="font-medium">This computer</span>
        <span className="text-xs text-zinc-500">the local analysis service</span>
        <span className="ml-auto">
          {current === null
            ? <span className="rounded bg-sky-100 px-2 py-0.5 text-xs font-medium text-sky-900 dark:bg-sky-900 dark:text-sky-100">in use</span>
            : <button type="button" className={btn} onClick={() => setConnection(null)}>Use</button>}
        </span>
      </li>
      {connections.map((c) => <Row key={c.id} c={c} />)}
    </ul>
  )
}
