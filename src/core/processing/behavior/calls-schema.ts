// The shapes of the calls store (calls-store.ts), as TypeBox schemas with their types: a stored
// call (what behavior.processes[].calls[] holds, Cuckoo 2's keys), the counts a process entry
// gains, and calls/index.json, the store's table of contents.
import { Type, type Static } from 'typebox'

/**
 * One call as the store keeps it and report.json shows it: Cuckoo 2's keys. Linux system calls
 * add `errno` (ENOENT...) when they failed; Cuckoo's monitor adds last_error, nt_status, buffer.
 */
export const StoredCallSchema = Type.Object({
  category: Type.String(),
  api: Type.String(),
  arguments: Type.Record(Type.String(), Type.Unknown()),
  return_value: Type.Unknown(),
  status: Type.Unknown({ description: '1/0 (or a boolean): whether the call succeeded' }),
  /** Epoch seconds. */
  time: Type.Number(),
  tid: Type.Integer(),
  flags: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  stacktrace: Type.Optional(Type.Array(Type.Unknown())),
  errno: Type.Optional(Type.String())
})
export type StoredCall = Static<typeof StoredCallSchema>

/** What behavior.processes[] entries gain from the store: calls seen, and how many of them were kept. */
export const ProcessCallCountsSchema = Type.Object({
  calls_seen: Type.Integer({ minimum: 0, description: 'calls of the process seen in its logs' }),
  calls_kept: Type.Integer({ minimum: 0, description: 'calls kept in `calls` (at most the per-process cap)' })
})
export type ProcessCallCounts = Static<typeof ProcessCallCountsSchema>

/** One process of calls/index.json. Counts per category and API are of the kept calls. */
export const StoredProcessSchema = Type.Object({
  pid: Type.Integer({ minimum: 0 }),
  process_name: Type.String(),
  calls: Type.Integer({ minimum: 0, description: 'kept calls (pageable)' }),
  dropped: Type.Integer({ minimum: 0, description: 'calls seen beyond the cap: counted, not kept' }),
  categories: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
  apis: Type.Record(Type.String(), Type.Integer({ minimum: 0 }))
})
export type StoredProcess = Static<typeof StoredProcessSchema>

/** calls/index.json. */
export const CallsIndexSchema = Type.Object({
  version: Type.Literal(1),
  /** The per-process cap the store was written with. */
  max_calls: Type.Integer({ minimum: 0 }),
  /** Code → [category, api]: the 2-byte code each record of <pid>.idx carries. */
  kinds: Type.Array(Type.Tuple([Type.String(), Type.String()])),
  processes: Type.Array(StoredProcessSchema)
})
export type CallsIndex = Static<typeof CallsIndexSchema>

/**
 * A value of behavior.summary (and generic[].summary): a path, host, command line...; or, for
 * file_moved and file_copied, the pair [from, to], as Cuckoo 2 writes them.
 */
export const SummaryValueSchema = Type.Union([Type.String(), Type.Tuple([Type.String(), Type.String()])])
export type SummaryValue = Static<typeof SummaryValueSchema>
