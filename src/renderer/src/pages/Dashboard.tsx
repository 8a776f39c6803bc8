// Placeholder: the Dashboard page is being built.
import type { JSX } from 'react'

export function DashboardPage(): JSX.Element {
  return <h1 className="text-xl font-semibold">Dashboard</h1>
}
