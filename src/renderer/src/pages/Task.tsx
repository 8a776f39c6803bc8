// Placeholder: the Task page is being built.
import type { JSX } from 'react'

export function TaskPage(): JSX.Element {
  return <h1 className="text-xl font-semibold">Task</h1>
}
