// Submissions that may have left a copy on a node that no task of ours knows. A note is written
// BEFORE each submission request, `<reports>/.node-uncertain/<node>-<task>-<random>.json`, as a
// file every worker sharing the reports directory sees, and removed once the node's task id is
// committed to the store. So a note outlives its submission when:
// - the answer was lost (the connection broke or timed out after the request went out, or the node
//   answered garbage): the attempt ends and the note is settled (no longer open);
// - the worker died between the request and the commit (kill -9, a crash): the note stays open,
//   naming a worker that no longer runs (identity.ts);
// - the task was deleted or requeued before its mark was written: settled.
// The dispatcher submits such a task again, so the node may end up with a copy nobody will fetch.
//
// A finished node task that none of our tasks knows and that matches a note no longer in flight
// (same sample sha256 and file name, or same URL) is such a copy: deleted on the node, never
// fetched. Unless a submission of the same sample is in flight to that node: its note is open,
// and the unknown task may be that submission's, about to be committed; the match waits for it.
// A note of a worker we cannot check (another machine) counts as in flight for `openMs` (a lease)
// after it was written. A note that never matches (the request never arrived) expires.
import { randomUUID } from 'node:crypto'
import { mkdirSync, unlinkSync, writeFileSync } from 'node:fs'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { isDeadLocalWorker } from './identity'

/** What identifies the copy on the node. */
export type SubmissionKey = { category: 'file'; sha256: string; filename: string } | { category: 'url'; url: string }

interface Note {
  task: number
  key: SubmissionKey
  /** When the submission began (epoch ms). */
  at: number
  /** The worker submitting, while the attempt may still be in flight (absent: settled). */
  open?: string
}

/** What the node's task list says of a task (Cuckoo 2 and Aviary both list these). */
export interface ListedTask {
  id: number
  category?: unknown
  target?: unknown
  sample?: unknown
}

/** Notes older than this are dropped: the node never created that task, or it was cleaned. */
const EXPIRY_MS = 7 * 24 * 3600 * 1000

const sameKey = (a: SubmissionKey, b: SubmissionKey): boolean =>
  a.category === 'url' ? b.category === 'url' && a.url === b.url : b.category === 'file' && a.sha256 === b.sha256 && a.filename === b.filename

/** Whether a listed task is the copy `key` describes. The node's fields are checked, not trusted. */
function matches(key: SubmissionKey, t: ListedTask): boolean {
  if (key.category === 'url') return t.category === 'url' && t.target === key.url
  const sha = typeof t.sample === 'object' && t.sample !== null ? (t.sample as { sha256?: unknown }).sha256 : undefined
  if (t.category === 'url' || typeof sha !== 'string' || sha.toLowerCase() !== key.sha256) return false
  // Cuckoo keeps the upload as <tmp>/upload_<x>/<name>, Aviary as uploads/<sha256>/<name>.
  return typeof t.target === 'string' && t.target.split(/[\\/]/).pop() === key.filename
}

const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'ENOENT'

export class UncertainSubmissions {
  private readonly dir: string

  constructor(
    reportsDir: string,
    private readonly now: () => number = Date.now,
    private readonly isDead: (worker: string) => boolean = isDeadLocalWorker
  ) {
    this.dir = path.join(reportsDir, '.node-uncertain')
  }

  // open() and remove() run for every submission, so they are synchronous: measured over 10,000
  // submissions, writeFile + rm through fs/promises cost ~1.5 s of CPU (the thread pool's hand-
  // offs), the same calls made synchronously ~0.1 s, each ~10 µs on a local disk.

  /** Notes a submission about to be made by `worker`; returns the note's name. */
  open(nodeId: number, taskId: number, key: SubmissionKey, worker: string): string {
    const name = `${nodeId}-${taskId}-${randomUUID()}.json`
    const text = JSON.stringify({ task: taskId, key, at: this.now(), open: worker } satisfies Note)
    const file = path.join(this.dir, name)
    try {
      writeFileSync(file, text)
    } catch (err) {
      if (!isMissing(err)) throw err
      // The first note, or the folder was removed meanwhile.
      mkdirSync(this.dir, { recursive: true })
      writeFileSync(file, text)
    }
    return name
  }

  remove(name: string): void {
    try {
      unlinkSync(path.join(this.dir, path.basename(name)))
    } catch (err) {
      if (!isMissing(err)) throw err // already removed (another worker deleted its copy)
    }
  }

  /** The attempt ended without a committed id (answer lost, or its task went away): the copy may exist. */
  async settle(name: string): Promise<void> {
    const note = await this.read(name)
    if (!note) return
    delete note.open
    await writeFile(path.join(this.dir, name), JSON.stringify(note))
  }

  /** Whether any note waits for this node (one readdir: the common answer is no). */
  async any(nodeId: number): Promise<boolean> {
    return (await this.files(nodeId)).length > 0
  }

  /**
   * Given the finished node tasks that no task of ours claimed, listed BEFORE this call, returns
   * those to delete on the node, each with the note it answers. `known(id)` says whether a task of
   * ours was given that node task id. The order matters: a submission whose note is gone by now
   * had committed its id before, so `known` (asked after the notes are read) sees it.
   */
  async orphans(nodeId: number, unclaimed: ListedTask[], known: (id: number) => Promise<boolean>, openMs: number): Promise<Array<{ id: number; note: string }>> {
    const now = this.now()
    const notes: Array<{ name: string; note: Note }> = []
    for (const name of await this.files(nodeId)) {
      const note = await this.read(name)
      if (!note) continue // removed by another worker meanwhile, or half written: next round
      if (now - note.at > EXPIRY_MS) this.remove(name)
      else notes.push({ name, note })
    }
    const inFlight = (n: Note): boolean => n.open !== undefined && now - n.at < openMs && !this.isDead(n.open)
    const flying = notes.filter((n) => inFlight(n.note)).map((n) => n.note.key)
    const out: Array<{ id: number; note: string }> = []
    const taken = new Set<number>()
    for (const { name, note } of notes) {
      if (inFlight(note) || flying.some((k) => sameKey(k, note.key))) continue
      for (const t of unclaimed) {
        if (taken.has(t.id) || !matches(note.key, t) || (await known(t.id))) continue
        taken.add(t.id)
        out.push({ id: t.id, note: name })
        break
      }
    }
    return out
  }

  /** A note, or null when it is gone (removed by another worker) or still being written. */
  private async read(name: string): Promise<Note | null> {
    try {
      return JSON.parse(await readFile(path.join(this.dir, name), 'utf8')) as Note
    } catch (err) {
      if (isMissing(err) || err instanceof SyntaxError) return null
      throw err
    }
  }

  private async files(nodeId: number): Promise<string[]> {
    const prefix = `${nodeId}-`
    try {
      return (await readdir(this.dir)).filter((n) => n.startsWith(prefix) && n.endsWith('.json'))
    } catch (err) {
      if (isMissing(err)) return [] // no note was ever written
      throw err
    }
  }
}
