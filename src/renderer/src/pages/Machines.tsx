// Placeholder: the Machines page is being built.
import type { JSX } from 'react'

export function MachinesPage(): JSX.Element {
  return <h1 className="text-xl font-semibold">Machines</h1>
}
