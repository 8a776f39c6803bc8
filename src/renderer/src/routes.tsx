// The pages, under a hash router: the same build is served from app://aviary/ (desktop) and from
// the service at / (browser), with no server-side routes to configure.
import { createHashRouter } from 'react-router'
import { Layout } from './components/Layout'
import { DashboardPage } from './pages/Dashboard'
import { SubmitPage } from './pages/Submit'
import { TasksPage } from './pages/Tasks'
import { TaskPage } from './pages/Task'
import { MachinesPage } from './pages/Machines'
import { ConnectionsPage } from './pages/Connections'
import { OfflinePage } from './pages/Offline'

export const routes = [
  {
    path: '/',
    element: <Layout />,
    children: [
      { index: true, element: <DashboardPage /> },
      { path: 'submit', element: <SubmitPage /> },
      { path: 'tasks', element: <TasksPage /> },
      { path: 'tasks/:id', element: <TaskPage /> },
      { path: 'machines', element: <MachinesPage /> },
      { path: 'connections', element: <ConnectionsPage /> },
      { path: 'offline', element: <OfflinePage /> }
    ]
  }
]

export const createRouter = () => createHashRouter(routes)
