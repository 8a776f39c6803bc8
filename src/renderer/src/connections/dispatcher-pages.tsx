// A dispatcher in use: it holds tasks and nodes, not an analysis server's task list, status or
// machines. Those pages are disabled in the navigation with the reason, and reached anyway (a
// bookmark, a connection switched while on one) they say why instead of failing on routes the
// dispatcher does not have. A task of the dispatcher opens to what the dispatcher knows of it.
import type { JSX } from 'react'
import { Link, matchPath } from 'react-router'
import { SafeText } from '../components/text'
import { DispatcherTask } from './DispatcherTask'

/** The pages of an analysis server (nav paths) that a dispatcher has no routes for, and why. */
export const ANALYSIS_ONLY: Record<string, string> = {
  '/': 'The dashboard shows an analysis server\'s queue, machines and host; a dispatcher has none of its own',
  '/tasks': 'A dispatcher has no analysis task list: its tasks are under Connections, Nodes and tasks',
  '/machines': 'A dispatcher has no machines: its nodes have them (Connections, Nodes and tasks)'
}

/** What the Layout shows instead of the page at `pathname` for a dispatcher; null: the page itself. */
export function dispatcherPage(pathname: string, connection: { id: number; name: string }): JSX.Element | null {
  const why = ANALYSIS_ONLY[pathname]
  if (why !== undefined) {
    return (
      <div data-testid="not-for-dispatcher" className="flex max-w-2xl flex-col gap-2">
        <h1 className="text-xl font-semibold">Not for a dispatcher</h1>
        <p><SafeText value={connection.name} /> is a dispatcher. {why}.</p>
        <p><Link to="/connections" className="text-sky-800 underline dark:text-sky-300">Connections</Link> lists its nodes and tasks; Submit sends samples to it; or pick an analysis server under Server.</p>
      </div>
    )
  }
  const task = matchPath('/tasks/:id', pathname)
  if (task && /^\d{1,15}$/.test(task.params.id ?? '')) return <DispatcherTask connection={connection.id} id={Number(task.params.id)} />
  return null
}
