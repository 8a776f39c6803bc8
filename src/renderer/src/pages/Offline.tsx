// Placeholder: the Offline page is being built.
import type { JSX } from 'react'

export function OfflinePage(): JSX.Element {
  return <h1 className="text-xl font-semibold">Offline</h1>
}
