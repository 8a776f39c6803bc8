// Which server the pages show: the local service, or a saved remote connection.
// (The Connections page owns the list; this only switches between its entries.)
import type { JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { fetchJson } from '../api/http'
import { ConnectionList, type Connection } from '../../../shared/api/responses'
import { useUi } from '../state/ui'

/** A saved remote server, as GET /aviary/connections lists it (src/shared/api/responses.ts). */
export type SavedConnection = Connection

export function useConnections() {
  return useQuery({
    queryKey: ['connections'],
    queryFn: ({ signal }) => fetchJson(null, '/aviary/connections', ConnectionList, {}, signal).then((r) => r.connections),
    retry: false
  })
}

/**
 * The connection the pages show: the local service, or a saved one with its kind ('analysis' or
 * 'dispatcher'). Undefined while the saved connections are loading.
 */
export function useCurrentConnection(): { id: number | null; name: string; kind: string } | undefined {
  const connection = useUi((s) => s.connection)
  const { data } = useConnections()
  if (connection === null) return { id: null, name: 'This computer', kind: 'analysis' }
  const saved = data?.find((c) => c.id === connection)
  return saved ? { id: saved.id, name: saved.name, kind: saved.kind } : undefined
}

export function ConnectionPicker(): JSX.Element {
  const connection = useUi((s) => s.connection)
  const setConnection = useUi((s) => s.setConnection)
  const { data } = useConnections()
  return (
    <label className="flex flex-col gap-1">
      Server
      <select aria-label="Server" value={connection === null ? '' : String(connection)}
        onChange={(e) => setConnection(e.target.value === '' ? null : Number(e.target.value))}
        className="rounded border border-zinc-300 bg-transparent px-1 dark:border-zinc-700">
        <option value="">This computer</option>
        {(data ?? []).map((c) => <option key={c.id} value={c.id}>{c.name}</option>)}
      </select>
    </label>
  )
}
