// Submissions whose answer was lost (the connection broke or timed out after the request went out):
// the node may have created the task anyway, and the dispatcher submits it again, so the node can
// end up with a copy nobody will fetch. Each such submission is noted here, as a file every worker
// sharing the reports directory sees: `<reports>/.node-uncertain/<node>-<task>-<random>.json`.
//
// A finished node task that none of our tasks knows, and that matches a note (same sample sha256
// and file name, or same URL), is that copy, but only once it has stayed unknown for a lease: a
// submission in flight in another worker writes its mark within its lease. Then it is deleted on
// the node, never fetched. A note that never matches (the request never arrived) expires.
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'

/** What identifies the lost copy on the node. */
export type SubmissionKey = { category: 'file'; sha256: string; filename: string } | { category: 'url'; url: string }

interface Note {
  task: number
  key: SubmissionKey
  /** When the submission was made (epoch ms). */
  at: number
  /** A node task seen matching, unknown to the store, and since when (epoch ms). */
  suspect?: { id: number; since: number }
}

/** What the node's task list says of a task (Cuckoo 2 and Aviary both list these). */
export interface ListedTask {
  id: number
  category?: string | null
  target?: string | null
  sample?: { sha256?: string | null } | null
}

/** Notes older than this are dropped: the node never created that task, or it was cleaned. */
const EXPIRY_MS = 7 * 24 * 3600 * 1000

function matches(key: SubmissionKey, t: ListedTask): boolean {
  if (key.category === 'url') return t.category === 'url' && t.target === key.url
  if (t.category === 'url' || t.sample?.sha256?.toLowerCase() !== key.sha256) return false
  // Cuckoo keeps the upload as <tmp>/upload_<x>/<name>, Aviary as uploads/<sha256>/<name>.
  return typeof t.target === 'string' && t.target.split(/[\\/]/).pop() === key.filename
}

export class UncertainSubmissions {
  private readonly dir: string

  constructor(reportsDir: string, private readonly now: () => number = Date.now) {
    this.dir = path.join(reportsDir, '.node-uncertain')
  }

  async add(nodeId: number, taskId: number, key: SubmissionKey): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    const note: Note = { task: taskId, key, at: this.now() }
    await writeFile(path.join(this.dir, `${nodeId}-${taskId}-${randomBytes(4).toString('hex')}.json`), JSON.stringify(note))
  }

  /** Whether any note waits for this node (one readdir: the common answer is no). */
  async any(nodeId: number): Promise<boolean> {
    return (await this.files(nodeId)).length > 0
  }

  /**
   * Given the finished node tasks that no task of ours claimed, returns the ids to delete on the
   * node: those that matched the same note for at least `graceMs`. Updates and expires notes.
   * `known(id)` says whether a task of ours was given that node task id.
   */
  async orphans(nodeId: number, unclaimed: ListedTask[], known: (id: number) => Promise<boolean>, graceMs: number): Promise<Array<{ id: number; note: string }>> {
    const out: Array<{ id: number; note: string }> = []
    const taken = new Set<number>()
    for (const file of await this.files(nodeId)) {
      const full = path.join(this.dir, file)
      let note: Note
      try {
        note = JSON.parse(await readFile(full, 'utf8')) as Note
      } catch {
        continue // removed by another worker meanwhile, or half written: next round
      }
      const now = this.now()
      if (now - note.at > EXPIRY_MS) {
        await rm(full, { force: true })
        continue
      }
      // The suspect seen before first, then any other match; none that a task of ours knows.
      const matching = unclaimed.filter((t) => !taken.has(t.id) && matches(note.key, t))
      matching.sort((a, b) => Number(b.id === note.suspect?.id) - Number(a.id === note.suspect?.id))
      let candidate: ListedTask | undefined
      for (const t of matching) {
        if (!(await known(t.id))) {
          candidate = t
          break
        }
      }
      if (!candidate) continue
      taken.add(candidate.id)
      if (note.suspect?.id === candidate.id) {
        if (now - note.suspect.since >= graceMs) out.push({ id: candidate.id, note: file })
        continue
      }
      note.suspect = { id: candidate.id, since: now }
      await writeFile(full, JSON.stringify(note))
    }
    return out
  }

  async remove(note: string): Promise<void> {
    await rm(path.join(this.dir, path.basename(note)), { force: true })
  }

  private async files(nodeId: number): Promise<string[]> {
    try {
      const prefix = `${nodeId}-`
      return (await readdir(this.dir)).filter((n) => n.startsWith(prefix) && n.endsWith('.json'))
    } catch {
      return []
    }
  }
}
