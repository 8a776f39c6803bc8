// A dispatcher's API through the proxy. Dispatchers come in two generations (docs/dispatcher.md,
// after Cuckoo 2's utils/dist.py and distributed/ app): the newer under /api with a `success` envelope, the older at the
// root; both key nodes by name and tasks by id. Everything they answer is read defensively.
import { useQuery } from '@tanstack/react-query'
import { fetchJson, HttpError, type ConnectionId } from '../api/http'
import { keys } from '../api/live'

export interface DistNode {
  name: string; url: string; machines?: { name: string; platform: string; tags: string[] }[]
  /** Aviary's dispatcher only: */ id?: number; enabled?: boolean; failures?: number; last_seen?: string | null; token?: boolean
}

export interface DistTask {
  id?: number; task_id?: number | null; node_id?: number | null; finished?: boolean
  path?: string | null; filename?: string | null; url?: string | null; status?: string; package?: string | null; platform?: string | null
  priority?: number; machine?: string | null; clock?: string | null; category?: string; timeout?: number | null; tags?: string | null
}

/** The newer route, else the older one (a 404 from the newer generation's absence). */
export async function getEither<T>(c: ConnectionId, path: string, signal?: AbortSignal): Promise<T> {
  try {
    return await fetchJson<T>(c, `/api${path}`, {}, signal)
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return fetchJson<T>(c, path.split('?')[0]!, {}, signal)
    throw err
  }
}

/** An object of entries keyed by name or id (or a list) as [key, value] rows. */
export const entries = <T,>(o: Record<string, T> | T[] | undefined): [string, T][] =>
  Array.isArray(o) ? o.map((v, i) => [String(i), v]) : o !== null && typeof o === 'object' ? Object.entries(o) : []

export function useDistNodes(connection: number) {
  return useQuery({
    queryKey: [...keys.all(connection), 'dist', 'nodes'],
    queryFn: ({ signal }) => getEither<{ nodes?: Record<string, DistNode> | DistNode[] }>(connection, '/node', signal),
    refetchInterval: 30_000
  })
}

/** node_id → the node's name, from Aviary's dispatcher (whose nodes carry their id); Cuckoo's do not. */
export function nodeNames(nodes: Record<string, DistNode> | DistNode[] | undefined): Map<number, string> {
  const out = new Map<number, string>()
  for (const [, n] of entries(nodes)) if (typeof n?.id === 'number' && typeof n.name === 'string') out.set(n.id, n.name)
  return out
}

/** What a dispatcher's task is about: its sample's own name, else its URL or stored path. */
export const taskTarget = (t: DistTask): string => t.filename ?? t.url ?? t.path ?? ''
