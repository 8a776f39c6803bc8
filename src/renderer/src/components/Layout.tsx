// The frame of every page: navigation (keyboard: Alt+1…7), the connection the pages show, the
// theme switch, and the page itself.
import { useEffect, useRef, type JSX } from 'react'
import { NavLink, Outlet, useLocation, useNavigate } from 'react-router'
import { applyTheme, useUi, type Theme } from '../state/ui'
import { useIsLive, useLiveEvents } from '../api/live'
import { useIsAviary } from '../api/server-kind'
import type { ConnectionId } from '../api/http'
import { ConnectionPicker, useConnections, useCurrentConnection } from './ConnectionPicker'
import { ANALYSIS_ONLY, dispatcherPage } from '../connections/dispatcher-pages'
import { SignInOverlay, SignOutButton } from '../auth/SignIn'
import { useAuth } from '../auth/session'

export const NAV = [
  { to: '/', label: 'Dashboard' },
  { to: '/submit', label: 'Submit' },
  { to: '/tasks', label: 'Tasks' },
  { to: '/machines', label: 'Machines' },
  { to: '/connections', label: 'Connections' },
  { to: '/offline', label: 'Offline' },
  { to: '/retention', label: 'Retention' },
  { to: '/ids-rules', label: 'IDS rules' }
] as const

export function Layout(): JSX.Element {
  const theme = useUi((s) => s.theme)
  const setTheme = useUi((s) => s.setTheme)
  const connection = useUi((s) => s.connection)
  const navigate = useNavigate()
  const { pathname } = useLocation()
  const current = useCurrentConnection()
  // Until the saved connections are known, a saved one's kind is not: no page asks it anything yet.
  const connectionsPending = useConnections().isPending
  const kindPending = connection !== null && connectionsPending
  // A dispatcher has no task list, status or machines of an analysis server: those pages are
  // disabled with the reason, and its tasks open to what it knows of them (dispatcher-pages.tsx).
  const dispatcher = current?.kind === 'dispatcher' && current.id !== null ? { id: current.id, name: current.name } : null
  const notHere = (to: string): string | null => (dispatcher && ANALYSIS_ONLY[to] !== undefined ? `${ANALYSIS_ONLY[to]} (${dispatcher.name} is a dispatcher).` : null)
  const live = useIsLive()
  // A stream refused with 401 is closed for good: it opens again after each sign-in.
  const epoch = useAuth((s) => s.epoch)

  useEffect(() => {
    const mq = window.matchMedia('(prefers-color-scheme: dark)')
    applyTheme(theme, mq.matches)
    const on = (e: MediaQueryListEvent) => applyTheme(theme, e.matches)
    mq.addEventListener('change', on)
    return () => mq.removeEventListener('change', on)
  }, [theme])

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (!e.altKey || e.ctrlKey || e.metaKey) return
      const n = Number(e.key)
      const item = NAV[n - 1]
      if (item && !notHereRef.current(item.to)) { e.preventDefault(); void navigate(item.to) }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [navigate])
  const notHereRef = useRef(notHere)
  notHereRef.current = notHere

  return (
    <div className="flex min-h-screen">
      <nav aria-label="Main" className="flex w-48 shrink-0 flex-col gap-1 border-r border-zinc-200 p-3 dark:border-zinc-800">
        <div className="mb-3 text-lg font-semibold">Aviary</div>
        {NAV.map((item, i) => {
          const why = notHere(item.to)
          // Not a link while it cannot be used: focusable, so the reason reads on hover and to a screen reader.
          return why !== null ? (
            <span key={item.to} role="link" aria-disabled="true" tabIndex={0} title={why} aria-description={why}
              className="cursor-not-allowed rounded px-2 py-1 text-zinc-500 dark:text-zinc-400">{item.label}</span>
          ) : (
            <NavLink key={item.to} to={item.to} end={item.to === '/'} title={`Alt+${i + 1}`}
              className={({ isActive }) => `rounded px-2 py-1 ${isActive ? 'bg-sky-100 font-medium text-sky-900 dark:bg-sky-900 dark:text-sky-100' : 'hover:bg-zinc-100 dark:hover:bg-zinc-800'}`}>
              {item.label}
            </NavLink>
          )
        })}
        <div className="mt-auto flex flex-col gap-2 text-sm">
          <LiveEvents key={`${String(connection)}-${epoch}`} connection={connection} />
          <ConnectionPicker />
          <span className="text-xs text-zinc-500" data-live={live}>{live ? '● live' : '○ polling'}</span>
          <label className="flex items-center gap-2">
            Theme
            <select value={theme} onChange={(e) => setTheme(e.target.value as Theme)} className="rounded border border-zinc-300 bg-transparent px-1 dark:border-zinc-700">
              <option value="system">System</option>
              <option value="light">Light</option>
              <option value="dark">Dark</option>
            </select>
          </label>
          <SignOutButton />
        </div>
      </nav>
      <main className="min-w-0 flex-1 p-6">
        {kindPending
          ? <p role="status" className="text-sm text-zinc-600 dark:text-zinc-400">Loading the connection…</p>
          : (dispatcher && dispatcherPage(pathname, dispatcher)) ?? <Outlet />}
      </main>
      <SignInOverlay />
    </div>
  )
}

function LiveEvents({ connection }: { connection: ConnectionId }): null {
  // Only an Aviary has /events (a dispatcher or a Cuckoo server would answer 404): others are polled.
  useLiveEvents(connection, useIsAviary(connection) === true)
  return null
}
