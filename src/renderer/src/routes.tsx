// The pages, under a hash router: the same build is served from app://aviary/ (desktop) and from
// the service at / (browser), with no server-side routes to configure. Pages load on first visit
// (charts, report views and the archive reader stay out of the first paint's script).
import { lazy, Suspense, type ComponentType, type JSX } from 'react'
import { createHashRouter } from 'react-router'
import { Layout } from './components/Layout'

function page(load: () => Promise<ComponentType>): JSX.Element {
  const Page = lazy(async () => ({ default: await load() }))
  return (
    <Suspense fallback={<p role="status" className="text-zinc-500">Loading…</p>}>
      <Page />
    </Suspense>
  )
}

export const routes = [
  {
    path: '/',
    element: <Layout />,
    children: [
      { index: true, element: page(async () => (await import('./pages/Dashboard')).DashboardPage) },
      { path: 'submit', element: page(async () => (await import('./pages/Submit')).SubmitPage) },
      { path: 'tasks', element: page(async () => (await import('./pages/Tasks')).TasksPage) },
      { path: 'tasks/:id', element: page(async () => (await import('./pages/Task')).TaskPage) },
      { path: 'compare', element: page(async () => (await import('./pages/Compare')).ComparePage) },
      { path: 'machines', element: page(async () => (await import('./pages/Machines')).MachinesPage) },
      { path: 'connections', element: page(async () => (await import('./pages/Connections')).ConnectionsPage) },
      { path: 'offline', element: page(async () => (await import('./pages/Offline')).OfflinePage) },
      { path: 'retention', element: page(async () => (await import('./pages/Retention')).RetentionPage) },
      { path: 'ids-rules', element: page(async () => (await import('./pages/IdsRules')).IdsRulesPage) }
    ]
  }
]

export const createRouter = () => createHashRouter(routes)
