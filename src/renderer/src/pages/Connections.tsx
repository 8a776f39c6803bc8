// Placeholder: the Connections page is being built.
import type { JSX } from 'react'

export function ConnectionsPage(): JSX.Element {
  return <h1 className="text-xl font-semibold">Connections</h1>
}
