// The Task page's "Compare with…": pick another task, from any connection, by id or from a list,
// and open both side by side. Only a reported task has something to compare; before, the button
// says why it is disabled.
import { useState, type JSX } from 'react'
import { useNavigate } from 'react-router'
import type { ConnectionId } from '../api/http'
import { TaskPicker } from './TaskPicker'
import { compareHref } from './refs'

export function CompareWith({ connection, id, status }: { connection: ConnectionId; id: number; status: string }): JSX.Element {
  const [open, setOpen] = useState(false)
  const navigate = useNavigate()
  const reported = status === 'reported'
  const self = { connection, id }
  return (
    <div className="contents">
      <button type="button" disabled={!reported} aria-expanded={open} onClick={() => setOpen((o) => !o)}
        title={reported ? 'Compare this analysis with another task, from any server' : 'Only a reported task can be compared: this one has no report yet'}
        className="rounded border border-zinc-300 px-2 py-0.5 text-sm hover:bg-zinc-100 disabled:cursor-not-allowed disabled:opacity-60 dark:border-zinc-700 dark:hover:bg-zinc-800">
        Compare with…
      </button>
      {open && reported && (
        <div className="basis-full">
          <TaskPicker label={`Compare task ${id} with`} initialConnection={connection} exclude={self}
            onPick={(other) => void navigate(compareHref(self, other))} />
        </div>
      )}
    </div>
  )
}
