// Which run an analyzer belongs to. Each run of a task gets a fresh random id, written into
// analysis.conf (`aviary_run`). Aviary's analyzer carries it everywhere it talks to the host:
//   - every result-server connection opens with the line `AVIARY-RUN <id>` before Cuckoo's header;
//   - the description of its final status starts with `[run <id>] `.
// Aviary's agent carries it too: /execnode and /execpy take it as the form field `run`, and the
// status the agent sets when that analyzer dies unreported is tagged the same way. An analyzer
// left over from an earlier run (after a crash, on a machine that is never reverted) therefore can
// neither upload into a later task nor end it: the host refuses what names another run. Cuckoo's
// own analyzer knows nothing of this and is served as Cuckoo served it (docs/engine.md).

/** The key of analysis.conf that holds the run id. */
export const RUN_CONF_KEY = 'aviary_run'

/** 128 random bits, lower-case hex. */
export const RUN_ID = /^[0-9a-f]{32}$/

export function isRunId(s: unknown): s is string {
  return typeof s === 'string' && RUN_ID.test(s)
}

/** The first word of the result-server preamble line. */
export const RUN_LINE_WORD = 'AVIARY-RUN'

/** The line Aviary's analyzer sends first on every result-server connection. */
export function runLine(run: string): string {
  return `${RUN_LINE_WORD} ${run}\n`
}

/** A final status description tagged with its run. */
export function tagDescription(run: string, text: string): string {
  return `[run ${run}] ${text}`
}

/** Splits a status description into its run tag (null: untagged) and the text after it. */
export function untagDescription(description: string | null): { run: string | null; text: string | null } {
  if (description === null) return { run: null, text: null }
  const m = /^\[run ([0-9a-f]{32})\] ?/.exec(description)
  if (m === null) return { run: null, text: description }
  const text = description.slice(m[0].length)
  return { run: m[1]!, text: text === '' ? null : text }
}
