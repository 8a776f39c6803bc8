// What processing modules share: the analysis folder they read, and the shape of what they give
// back. Each module (static, strings, network, behavior, dropped, screenshots, memory, yara,
// signatures) is one folder under processing/ with its own tests on real inputs; the pipeline
// (processing/pipeline.ts) runs them in Cuckoo's order and assembles reports/report.json with
// Cuckoo 2's top-level keys (shared/reference/cuckoo-internals.md §7).
import { Closed, Epoch, Nullable, Type, type Static } from './schema'
import { ProcessCallCountsSchema, StoredCallSchema } from './behavior/calls-schema'

/** The inputs of one task's processing. Every path is inside the analysis folder or the data dir. */
export interface ProcessingContext {
  taskId: number
  /** The analysis folder (storage/analyses/<id>). */
  dir: string
  /** task.json as the engine wrote it (the API's task object). */
  task: Record<string, unknown>
  /** The sample on the host (the analysis folder's `binary` link resolved), for file tasks. */
  sample: { path: string; name: string; type: string | null } | null
  /** URL tasks: the URL. */
  url: string | null
  /** Folder of the user's YARA rules (*.yar, *.yara), or null when there is none. */
  yaraRules: string | null
  /** The data folder's suricata/ (the IDS step's settings and imported rule sets); absent or null: defaults. */
  suricataDir?: string | null
  log(msg: string): void
}

/** A YARA match as Cuckoo 2's report shows it (`target.file.yara[]`, `dropped[].yara[]`). */
export const YaraMatchSchema = Closed({
  name: Type.String(),
  meta: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  strings: Type.Array(Type.String()),
  /** Byte offsets of the matched strings (first few), for the report. */
  offsets: Type.Record(Type.String(), Type.Array(Type.Tuple([Type.Integer(), Type.Integer()])))
})
export type YaraMatch = Static<typeof YaraMatchSchema>

/**
 * One process as Aviary reports it (behavior.processes[]): Cuckoo's keys, its calls as the calls
 * store keeps them (behavior/calls-schema.ts), and how many calls were seen and kept. Cuckoo's
 * monitor adds tid, time, type.
 */
export const ProcessEntrySchema = Closed({
  pid: Type.Integer(),
  ppid: Type.Integer(),
  process_name: Type.String(),
  process_path: Type.String(),
  command_line: Type.String(),
  /** Epoch seconds (float), as report.json writes datetimes. */
  first_seen: Epoch,
  /** Epoch seconds, or null while still running at the end. */
  exited: Nullable(Epoch),
  track: Type.Boolean(),
  modules: Type.Array(Type.Unknown()),
  calls: Type.Array(StoredCallSchema),
  ...ProcessCallCountsSchema.properties,
  tid: Type.Optional(Type.Integer()),
  time: Type.Optional(Type.Number()),
  type: Type.Optional(Type.String())
})
export type ProcessEntry = Static<typeof ProcessEntrySchema>
/** A process as the log readers make it, before the calls store counts its calls. */
export type ProcessSeen = Omit<ProcessEntry, 'calls_seen' | 'calls_kept'>

/** A node of behavior.processtree. */
export interface ProcessTreeNode {
  pid: number
  ppid: number
  process_name: string
  command_line: string
  first_seen: number
  track: boolean
  children: ProcessTreeNode[]
}
export const ProcessTreeNodeSchema = Type.Cyclic({
  Node: Closed({
    pid: Type.Integer(),
    ppid: Type.Integer(),
    process_name: Type.String(),
    command_line: Type.String(),
    first_seen: Epoch,
    track: Type.Boolean(),
    children: Type.Array(Type.Ref('Node'))
  })
}, 'Node')

/**
 * Category (file_written, command_line, connects_ip, ...) → the distinct values seen; file_moved and
 * file_copied hold [from, to] pairs, as Cuckoo writes them.
 */
export const BehaviorSummarySchema = Type.Record(Type.String(), Type.Array(Type.Union([Type.String(), Type.Tuple([Type.String(), Type.String()])])))

/** The report's `behavior` key, Cuckoo 2's. */
export const BehaviorSchema = Closed({
  processes: Type.Array(ProcessEntrySchema),
  processtree: Type.Array(ProcessTreeNodeSchema),
  summary: BehaviorSummarySchema,
  generic: Type.Array(Closed({
    pid: Type.Integer(),
    ppid: Type.Integer(),
    process_name: Type.String(),
    process_path: Type.String(),
    first_seen: Epoch,
    summary: BehaviorSummarySchema
  })),
  /** pid → api → count. */
  apistats: Type.Record(Type.String(), Type.Record(Type.String(), Type.Integer())),
  anomaly: Type.Array(Closed({ category: Type.String(), funcname: Type.String(), message: Type.String() }))
})
export type Behavior = Static<typeof BehaviorSchema>
