// Whether a connection's server is an Aviary, so the pages ask it only what it has: the event
// stream (/events) and the routes (/aviary/routes) are Aviary's, and asking a dispatcher or a
// Cuckoo server for them only earns 404s in the browser's log. The local service is an Aviary; a
// dispatcher connection never is; a remote analysis server is one when its /cuckoo/status names
// an `aviary` process (Aviary's status has processes.aviary, Cuckoo's has none).
import { useQuery } from '@tanstack/react-query'
import { Type } from 'typebox'
import { fetchJson, type ConnectionId } from './http'
import { keys } from './live'
import { useCurrentConnection } from '../components/ConnectionPicker'

/** Read defensively: a remote server's answer is not trusted. */
export function isAviaryStatus(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false
  const processes = (body as { processes?: unknown }).processes
  return typeof processes === 'object' && processes !== null && typeof (processes as { aviary?: unknown }).aviary === 'number'
}

/** True or false once known; undefined while a remote server's status is being read. */
export function useIsAviary(connection: ConnectionId): boolean | undefined {
  const current = useCurrentConnection()
  const remote = connection !== null && current?.kind === 'analysis'
  const q = useQuery({
    queryKey: [...keys.all(connection), 'is-aviary'],
    queryFn: ({ signal }) => fetchJson(connection, '/cuckoo/status', Type.Unknown(), {}, signal).then(isAviaryStatus),
    enabled: remote,
    staleTime: 5 * 60_000,
    retry: false
  })
  if (connection === null) return true
  if (current === undefined) return undefined
  if (current.kind !== 'analysis') return false
  return q.isError ? false : q.data
}
