// The report's `info` (Cuckoo 2's AnalysisInfo): the task as the engine recorded it in task.json,
// with Cuckoo's names and datetimes as epoch seconds; `score` is set once the signatures ran.
import { parseDatetime } from '../../shared/time'
import { Closed, Epoch, Nullable, Type, type Static } from './schema'

/** The version report consumers compare with Cuckoo's (`info.version`). */
export const VERSION_TAG = '2.0.7'

export const InfoSchema = Closed({
  version: Type.Literal(VERSION_TAG),
  /** The Aviary that wrote the report. */
  aviary_version: Type.String(),
  id: Type.Integer(),
  category: Type.String(),
  custom: Nullable(Type.String()),
  owner: Nullable(Type.String()),
  package: Nullable(Type.String()),
  platform: Nullable(Type.String()),
  options: Nullable(Type.String()),
  /** The network route the run took (docs/network.md), null when the task never started. */
  route: Nullable(Type.String()),
  added: Nullable(Epoch),
  started: Nullable(Epoch),
  ended: Nullable(Epoch),
  duration: Nullable(Type.Integer()),
  machine: Nullable(Closed({
    name: Type.String(), label: Type.String(), manager: Type.String(),
    started_on: Nullable(Type.String()), shutdown_on: Nullable(Type.String()), status: Nullable(Type.String())
  })),
  score: Type.Number({ minimum: 0, maximum: 10 })
})
export type Info = Static<typeof InfoSchema>

/** Epoch seconds of an API datetime ("YYYY-MM-DD HH:MM:SS"). */
function epoch(text: unknown): number | null {
  if (typeof text !== 'string') return null
  const d = parseDatetime(text)
  return d ? d.getTime() / 1000 : null
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null)

export function analysisInfo(task: Record<string, unknown>, aviaryVersion: string): Info {
  const guest = (task.guest ?? null) as Record<string, unknown> | null
  return {
    version: VERSION_TAG,
    aviary_version: aviaryVersion,
    id: Number(task.id),
    category: String(task.category ?? 'file'),
    custom: text(task.custom),
    owner: text(task.owner),
    package: text(task.package),
    platform: text(task.platform),
    options: text(task.options),
    route: text(task.route),
    added: epoch(task.added_on),
    started: epoch(task.started_on),
    ended: epoch(task.completed_on),
    duration: typeof task.duration === 'number' ? task.duration : null,
    machine: guest !== null && typeof guest.name === 'string'
      ? { name: guest.name, label: String(guest.label ?? guest.name), manager: String(guest.manager ?? ''),
          started_on: text(guest.started_on), shutdown_on: text(guest.shutdown_on), status: text(guest.status) }
      : null,
    score: 0
  }
}
