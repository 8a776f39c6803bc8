// A failed request, with the server's own message (untrusted text: shown through SafeText).
// Used by the Dashboard, Machines and Connections pages.
import type { JSX } from 'react'
import { SafeText } from '../components/text'

export function ErrorNote({ prefix, error }: { prefix: string; error: Error }): JSX.Element {
  return (
    <p role="alert" className="rounded border border-red-300 bg-red-50 px-2 py-1 text-sm text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100">
      {prefix}: <SafeText value={error.message} />
    </p>
  )
}
