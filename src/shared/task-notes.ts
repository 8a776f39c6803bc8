// Notes a task keeps in its `errors` list (Cuckoo's only place for messages about a task) that are
// not errors: the service writes them, the UI shows them as information, not in red.

/**
 * Tags without a platform or a machine choose no machine (the spec: tags pick machines only
 * together with a platform), yet they are kept: `tag:` search and retention rules read them.
 */
export function tagsNote(tags: readonly string[]): string {
  return `tags ${tags.join(', ')} choose no machine without a platform; they are kept for search (tag:) and retention`
}

/** Whether a message of a task's errors is a note, not an error (this and older Aviary's tags notes). */
export function isTaskNote(message: unknown): boolean {
  return typeof message === 'string' && /^tags .* (?:choose no machine without a platform|are ignored: tags take effect only together with a platform)/s.test(message)
}
