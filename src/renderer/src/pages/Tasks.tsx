// Placeholder: the Tasks page is being built.
import type { JSX } from 'react'

export function TasksPage(): JSX.Element {
  return <h1 className="text-xl font-semibold">Tasks</h1>
}
