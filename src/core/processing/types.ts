// What processing modules share: the analysis folder they read, and the shape of what they give
// back. Each module (static, strings, network, behavior, dropped, screenshots, memory, yara,
// signatures) is one folder under processing/ with its own tests on real inputs; the pipeline
// (processing/pipeline.ts) runs them in Cuckoo's order and assembles reports/report.json with
// Cuckoo 2's top-level keys (shared/reference/cuckoo-internals.md §7).

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
  log(msg: string): void
}

/** A YARA match as Cuckoo 2's report shows it (`target.file.yara[]`, `dropped[].yara[]`). */
export interface YaraMatch {
  name: string
  meta: Record<string, string | number | boolean>
  strings: string[]
  /** Byte offsets of the matched strings (first few), for the report. */
  offsets: Record<string, [number, number][]>
}

/** One process as Aviary reports it (behavior.processes[], without API calls for Aviary's analyzer). */
export interface ProcessEntry {
  pid: number
  ppid: number
  process_name: string
  process_path: string
  command_line: string
  /** Epoch seconds (float), as report.json writes datetimes. */
  first_seen: number
  /** Epoch seconds, or null while still running at the end. */
  exited: number | null
  track: boolean
  modules: unknown[]
  calls: unknown[]
}

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
