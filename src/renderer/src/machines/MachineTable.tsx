// The fleet as a dense table. For the local service a row's name is a button that opens the
// machine's controls (keyboard: Tab to it, Enter).
import type { JSX } from 'react'
import { SafeText, When } from '../components/text'
import { sizeText, type Machine } from './api'

const th = 'px-2 py-1 text-left font-medium'
const td = 'px-2 py-1 align-top'

/** The hypervisor's word for a machine's power (a machine its owner powers: whether its agent answers), as a short suffix. */
const POWER: Record<string, string> = { running: 'on', poweroff: 'off', paused: 'paused', saved: 'saved', aborted: 'aborted', error: 'error' }

/**
 * Whether a task uses the machine, then its power. The hypervisor says "running" of a machine
 * that is merely switched on (and the physical driver of one whose agent answers): shown as
 * "idle · on", never as "running", which reads as an analysis running on it.
 */
function Status({ m }: { m: Machine }): JSX.Element {
  const state = m.locked ? 'in use' : 'idle'
  const power = m.status === null ? null : POWER[m.status] ?? m.status
  const tone = m.locked ? 'bg-sky-200 text-sky-900 dark:bg-sky-800 dark:text-sky-100' : 'bg-zinc-200 text-zinc-800 dark:bg-zinc-700 dark:text-zinc-100'
  const title = `${m.locked ? 'a task (or a start, stop or revert) holds it' : 'no task uses it'}; ${m.status === null ? 'its power state is not known yet'
    : m.capabilities?.power === false ? `its agent ${m.status === 'running' ? 'answers' : 'does not answer'}` : `the hypervisor says ${m.status}`}`
  return (
    <span data-machine-state={state} title={title} className={`inline-block rounded px-1.5 py-0.5 text-xs ${tone}`}>
      {state}{power !== null && <> · <SafeText value={power} /></>}
    </span>
  )
}

export function MachineTable({ machines, selected, onSelect, disk = null, local = false }: {
  machines: Machine[]
  selected: string | null
  /** Each machine's disk use (the local service's /aviary/machines/disk), or null. */
  disk?: Record<string, { built: boolean; bytes: number }> | null
  /** The local service: an empty fleet is offered a machine made for it. */
  local?: boolean
  /** Null when the machines cannot be controlled from here (a remote server). */
  onSelect: ((name: string) => void) | null
}): JSX.Element {
  if (machines.length === 0) {
    return (
      <p data-testid="no-machines" className="text-sm text-zinc-700 dark:text-zinc-300">
        No analysis machines are configured on this server{local ? ': nothing can be analysed yet. Create a Linux machine below (once before it, as root: aviary setup --user $USER).' : '.'}
      </p>
    )
  }
  return (
    <div className="overflow-x-auto">
      <table className="w-full border-collapse text-sm">
        <thead className="border-b border-zinc-200 text-zinc-600 dark:border-zinc-800 dark:text-zinc-300">
          <tr>
            <th className={th}>Name</th><th className={th}>Status</th><th className={th}>Lock</th><th className={th}>Platform</th>
            <th className={th}>Tags</th><th className={th}>Snapshot</th><th className={th}>IP</th><th className={th}>Label</th><th className={th}>Driver</th>
            {disk && <th className={th}>Disk</th>}
          </tr>
        </thead>
        <tbody>
          {machines.map((m) => (
            <tr key={m.name} data-machine={m.name} aria-selected={selected === m.name}
              className={`border-b border-zinc-100 dark:border-zinc-900 ${selected === m.name ? 'bg-sky-50 dark:bg-sky-950' : ''}`}>
              <td className={`${td} font-medium`}>
                {onSelect
                  ? <button type="button" onClick={() => onSelect(m.name)} aria-expanded={selected === m.name}
                      className="text-left text-sky-700 hover:underline focus-visible:outline-2 dark:text-sky-300"><SafeText value={m.name} /></button>
                  : <SafeText value={m.name} />}
              </td>
              <td className={td}><Status m={m} />{m.status_changed_on && <span className="ml-1 text-xs text-zinc-500"><When value={m.status_changed_on} /></span>}</td>
              <td className={td} data-locked={m.locked}>
                {m.locked
                  ? <span className="text-amber-700 dark:text-amber-300">🔒 locked {m.locked_changed_on && <span className="text-xs text-zinc-500"><When value={m.locked_changed_on} /></span>}</span>
                  : <span className="text-zinc-500">free</span>}
              </td>
              <td className={td}><SafeText value={m.platform} /></td>
              <td className={td}>
                {m.tags.length === 0 ? <span className="text-zinc-400">—</span> : m.tags.map((t) => (
                  <span key={t} className="mr-1 inline-block rounded bg-zinc-100 px-1 text-xs dark:bg-zinc-800"><SafeText value={t} /></span>
                ))}
              </td>
              <td className={td}>{m.snapshot ? <SafeText value={m.snapshot} /> : <span className="text-zinc-400">—</span>}</td>
              <td className={`${td} font-mono text-xs`}><SafeText value={m.ip} /></td>
              <td className={td}><SafeText value={m.label} /></td>
              <td className={td}><SafeText value={m.driver} /></td>
              {disk && (
                <td className={td} data-disk={m.name}>
                  {disk[m.name]?.built ? sizeText(disk[m.name]!.bytes) : <span className="text-zinc-400" title="not made by Aviary: its disk is not in the data folder">—</span>}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
