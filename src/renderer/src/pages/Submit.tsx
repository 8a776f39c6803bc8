// Placeholder: the Submit page is being built.
import type { JSX } from 'react'

export function SubmitPage(): JSX.Element {
  return <h1 className="text-xl font-semibold">Submit</h1>
}
