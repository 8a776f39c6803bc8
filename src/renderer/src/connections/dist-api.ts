// A dispatcher's API through the proxy. Dispatchers come in two generations (docs/dispatcher.md,
// after Cuckoo 2's utils/dist.py and distributed/ app): the newer under /api with a `success` envelope, the older at the
// root; both key nodes by name and tasks by id. Everything they answer is read defensively:
// checked against the shapes below, what the pages read of a node and a task (the dispatcher's
// routes document their answers as any object, src/dispatcher/api/schemas.ts, so these are the
// page's own; every field is optional, as the generations differ).
import { useQuery } from '@tanstack/react-query'
import { Type, type Static, type TSchema } from 'typebox'
import { fetchJson, HttpError, type ConnectionId } from '../api/http'
import { keys } from '../api/live'

const opt = <T extends TSchema>(t: T) => Type.Optional(t)
const optNull = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]))

const DistNode = Type.Object({
  name: Type.String(),
  url: Type.String(),
  machines: opt(Type.Array(Type.Object({ name: Type.String(), platform: Type.String(), tags: Type.Array(Type.String()) }))),
  // Aviary's dispatcher only:
  id: opt(Type.Integer()), enabled: opt(Type.Boolean()), failures: opt(Type.Integer()), last_seen: optNull(Type.String()), token: opt(Type.Boolean())
})
export type DistNode = Static<typeof DistNode>

const DistTask = Type.Object({
  id: opt(Type.Integer()), task_id: optNull(Type.Integer()), node_id: optNull(Type.Integer()), finished: opt(Type.Boolean()),
  path: optNull(Type.String()), filename: optNull(Type.String()), url: optNull(Type.String()), status: opt(Type.String()),
  package: optNull(Type.String()), platform: optNull(Type.String()), priority: opt(Type.Number()), machine: optNull(Type.String()),
  clock: optNull(Type.String()), category: opt(Type.String()), timeout: optNull(Type.Number()), tags: optNull(Type.String())
})
export type DistTask = Static<typeof DistTask>

/** GET [/api]/node[/<name>]: nodes keyed by name (older) or listed (newer). */
export const DistNodes = Type.Object({ nodes: opt(Type.Union([Type.Record(Type.String(), DistNode), Type.Array(DistNode)])) })
/** GET [/api]/task[/<id>]: tasks keyed by id. */
export const DistTasks = Type.Object({ tasks: opt(Type.Record(Type.String(), DistTask)) })

/** The newer route, else the older one (a 404 from the newer generation's absence). */
export async function getEither<T extends TSchema>(c: ConnectionId, path: string, answer: T, signal?: AbortSignal): Promise<Static<T>> {
  try {
    return await fetchJson(c, `/api${path}`, answer, {}, signal)
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return fetchJson(c, path.split('?')[0]!, answer, {}, signal)
    throw err
  }
}

/** An object of entries keyed by name or id (or a list) as [key, value] rows. */
export const entries = <T,>(o: Record<string, T> | T[] | undefined): [string, T][] =>
  Array.isArray(o) ? o.map((v, i) => [String(i), v]) : o !== null && typeof o === 'object' ? Object.entries(o) : []

export function useDistNodes(connection: number) {
  return useQuery({
    queryKey: [...keys.all(connection), 'dist', 'nodes'],
    queryFn: ({ signal }) => getEither(connection, '/node', DistNodes, signal),
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
