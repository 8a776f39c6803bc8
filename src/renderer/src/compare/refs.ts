// A task to compare, named by its connection and id, and how the Compare page's URL names two of
// them: `#/compare?a=local:12&b=3:45` (`local` is this computer's service, a number a saved
// connection; `file` a report file opened in the page), so a comparison can be bookmarked and reloaded. The tasks picked on the Tasks page
// (at most two, from any connection) are kept here too, for the session.
import { create } from 'zustand'
import type { ConnectionId } from '../api/http'

export interface TaskRef { connection: ConnectionId; id: number }

/** The URL's value for a side that is a file opened in the page (a File cannot be in a URL). */
export const FILE_PARAM = 'file'

export const refParam = (r: TaskRef): string => `${r.connection === null ? 'local' : r.connection}:${r.id}`

/** A URL parameter back to a task, or null when it is not one (a bookmark edited by hand). */
export function parseRef(s: string | null): TaskRef | null {
  const m = /^(local|\d{1,9}):(\d{1,15})$/.exec(s ?? '')
  if (m === null) return null
  return { connection: m[1] === 'local' ? null : Number(m[1]), id: Number(m[2]) }
}

export const sameRef = (x: TaskRef | null | undefined, y: TaskRef | null | undefined): boolean =>
  x !== null && x !== undefined && y !== null && y !== undefined && x.connection === y.connection && x.id === y.id

/** The Compare page's path for two tasks (either may still be missing: the page asks for it). */
export function compareHref(a: TaskRef | null, b: TaskRef | null): string {
  const p = new URLSearchParams()
  if (a) p.set('a', refParam(a))
  if (b) p.set('b', refParam(b))
  const q = p.toString()
  return `/compare${q ? `?${q}` : ''}`
}

interface Picked {
  /** In the order picked; a third pick lets the first go. */
  picked: TaskRef[]
  toggle(r: TaskRef): void
  clear(): void
}

export const usePicked = create<Picked>()((set) => ({
  picked: [],
  toggle: (r) => set((s) => (s.picked.some((p) => sameRef(p, r)) ? { picked: s.picked.filter((p) => !sameRef(p, r)) } : { picked: [...s.picked, r].slice(-2) })),
  clear: () => set({ picked: [] })
}))
