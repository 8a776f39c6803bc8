// The dispatcher's mark on a node-side task: `aviary_dist=<dispatcher task id>-<32 hex>` appended to
// the options it forwards, a new random one for every submission attempt (the submission's note
// keeps it, uncertain.ts). A submission cut short (a lost answer, the dispatcher killed) is found
// again on its node by the sample's sha256 and this mark, and taken over instead of submitted again.
//
// Why options and not tags or custom:
// - tags choose the machine on Cuckoo 2.0.7 and on Aviary: a tag no machine has fails the analysis
//   ("No machines match selection criteria").
// - custom is one free string that the submitter's own processing or reporting modules may parse
//   (JSON, an id); anything added to it changes what they read. Aviary also reads it for `reboot`.
// - options is a list of key=value pairs that both keep and return: Cuckoo 2.0.7 stores the string
//   from /tasks/create/file and /url as given and lists it parsed into an object ({"aviary_dist":
//   "…"}), Cuckoo 1.x and Aviary list the string. The analyzer and the modules read the keys they
//   know and ignore the others. The key reaches the guest's analysis.conf with the other options,
//   as every option does; it names a task of the dispatcher and a random value, nothing else.
import { randomUUID } from 'node:crypto'

export const MARKER_OPTION = 'aviary_dist'

/** Room the mark takes in options (`,aviary_dist=` plus at most 15 digits, `-` and 32 hex digits). */
export const MARKER_ROOM = 64

const MARKER = /^[1-9][0-9]{0,14}-[0-9a-f]{32}$/

export function newMarker(taskId: number): string {
  return `${taskId}-${randomUUID().replace(/-/g, '')}`
}

export const isMarker = (v: unknown): v is string => typeof v === 'string' && MARKER.test(v)

/** The option pieces as Cuckoo and Aviary split them: on commas, each `key=value` trimmed. */
function pieces(options: string): Array<{ key: string | null; raw: string }> {
  return options.split(',').map((raw) => {
    const eq = raw.indexOf('=')
    return { key: eq > 0 ? raw.slice(0, eq).trim() : null, raw }
  })
}

/** Whether a submitter's options set the mark's key (the dispatcher's API refuses them). */
export function setsMarker(options: string | null): boolean {
  return options !== null && pieces(options).some((p) => p.key === MARKER_OPTION)
}

/** `options` with the mark appended; a piece of the same key is dropped (the last one would win anyway). */
export function withMarker(options: string | null, marker: string): string {
  const kept = options === null ? [] : pieces(options).filter((p) => p.key !== MARKER_OPTION && p.raw.trim() !== '').map((p) => p.raw)
  return [...kept, `${MARKER_OPTION}=${marker}`].join(',')
}

/**
 * The mark of a listed node task, or null: `options` as Aviary and Cuckoo 1.x list it (a string,
 * the last piece of the key wins, as in their parsers) or as Cuckoo 2.0.7 does (an object). What a
 * node sends is not trusted: anything but a well-formed mark is none.
 */
export function markerOf(options: unknown): string | null {
  let value: unknown
  if (typeof options === 'string') {
    for (const p of pieces(options)) if (p.key === MARKER_OPTION) value = p.raw.slice(p.raw.indexOf('=') + 1).trim()
  } else if (typeof options === 'object' && options !== null && !Array.isArray(options)) {
    value = (options as Record<string, unknown>)[MARKER_OPTION]
  }
  return isMarker(value) ? value : null
}
