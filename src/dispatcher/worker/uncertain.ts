// Submissions that may have left a copy on a node that no task of ours knows yet. A note is written
// BEFORE each submission request, `<reports>/.node-uncertain/<node>-<task>-<32 hex>.json`, as a file
// every worker sharing the reports directory sees, and removed once the node's task id is
// committed to the store. It holds the mark (marker.ts) the request puts in the node-side task's
// options, the sample's sha256 or the URL, and when the request began. So a note outlives its
// submission when:
// - the answer was lost (the connection broke or timed out after the request went out, or the node
//   answered garbage);
// - the worker died between the request and the commit (kill -9, a crash), the request answered,
//   still on its way, or not yet sent;
// - the task was deleted or requeued before its mark was written.
//
// What becomes of such a copy is decided in the store, once per mark (DistStore.adoptCopy and
// abandonCopy): the task takes it over (submit.ts, before submitting the task again), or it belongs
// to no task and is deleted on the node, never fetched (node-worker.ts). Notes are written with
// synchronous calls: measured over 10,000 submissions, writeFile + rm through fs/promises cost ~1.5 s
// of CPU (the thread pool's hand-offs), the same calls made synchronously ~0.1 s, each ~10 µs.
import { mkdirSync, unlinkSync, writeFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { isMarker, markerOf, newMarker } from './marker'

/** What identifies the copy on the node besides its mark. */
export type SubmissionKey = { category: 'file'; sha256: string; filename: string } | { category: 'url'; url: string }

export interface Note {
  task: number
  key: SubmissionKey
  /** The mark put in the node-side task's options. */
  marker: string
  /** When the request began (epoch ms). */
  at: number
  /** The worker that made it (for a person reading the folder). */
  worker: string
}

/** A note and its file name. */
export interface NoteEntry {
  name: string
  note: Note
}

/** What the node's task list says of a task (Cuckoo 2 and Aviary both list these). */
export interface ListedTask {
  id: number
  status?: unknown
  category?: unknown
  target?: unknown
  sample?: unknown
  options?: unknown
}

/** Notes older than this are dropped: whatever their copy was, it has been dealt with or never came. */
const EXPIRY_MS = 7 * 24 * 3600 * 1000

/** Whether a listed task is a copy of the sample or URL `key` names. The node's fields are checked, not trusted. */
export function sameTarget(key: SubmissionKey, t: ListedTask): boolean {
  if (key.category === 'url') return t.category === 'url' && t.target === key.url
  const sha = typeof t.sample === 'object' && t.sample !== null ? (t.sample as { sha256?: unknown }).sha256 : undefined
  return t.category !== 'url' && typeof sha === 'string' && sha.toLowerCase() === key.sha256
}

const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'ENOENT'

function isNote(v: unknown): v is Note {
  const n = v as Partial<Note> | null
  return typeof n === 'object' && n !== null && typeof n.task === 'number' && typeof n.at === 'number' && isMarker(n.marker) &&
    typeof n.key === 'object' && n.key !== null
}

export class UncertainSubmissions {
  private readonly dir: string

  constructor(reportsDir: string, private readonly now: () => number = Date.now) {
    this.dir = path.join(reportsDir, '.node-uncertain')
  }

  /** Notes a submission about to be made by `worker`: the note's name and the mark the request must carry. */
  open(nodeId: number, taskId: number, key: SubmissionKey, worker: string): { name: string; marker: string } {
    const marker = newMarker(taskId)
    const name = `${nodeId}-${marker}.json`
    const text = JSON.stringify({ task: taskId, key, marker, at: this.now(), worker } satisfies Note)
    const file = path.join(this.dir, name)
    try {
      writeFileSync(file, text)
    } catch (err) {
      if (!isMissing(err)) throw err
      // The first note, or the folder was removed meanwhile.
      mkdirSync(this.dir, { recursive: true })
      writeFileSync(file, text)
    }
    return { name, marker }
  }

  remove(name: string): void {
    try {
      unlinkSync(path.join(this.dir, path.basename(name)))
    } catch (err) {
      if (!isMissing(err)) throw err // already removed (another worker settled it)
    }
  }

  /** Whether any note waits for this node (one readdir: the common answer is no). */
  async any(nodeId: number): Promise<boolean> {
    return (await this.files(nodeId)).length > 0
  }

  /** The notes of these tasks on this node, by task (one readdir; only their files are read). */
  async ofTasks(nodeId: number, taskIds: Iterable<number>): Promise<Map<number, NoteEntry[]>> {
    const wanted = new Set(taskIds)
    const out = new Map<number, NoteEntry[]>()
    if (wanted.size === 0) return out
    for (const name of await this.files(nodeId)) {
      const task = Number(name.slice(`${nodeId}-`.length).split('-')[0])
      if (!wanted.has(task)) continue
      const note = await this.read(name)
      if (!note || note.task !== task) continue
      out.set(task, [...(out.get(task) ?? []), { name, note }])
    }
    return out
  }

  /**
   * The listed node tasks that carry the mark of a note of this node (and are of its sample or
   * URL), each with that note. A mark is random per submission, so a copy has at most one note.
   */
  async copies(nodeId: number, listed: ListedTask[]): Promise<Array<{ id: number; entry: NoteEntry }>> {
    const byMarker = new Map<string, ListedTask[]>()
    for (const t of listed) {
      const m = markerOf(t.options)
      if (m !== null) byMarker.set(m, [...(byMarker.get(m) ?? []), t])
    }
    if (byMarker.size === 0) return []
    const out: Array<{ id: number; entry: NoteEntry }> = []
    for (const name of await this.files(nodeId)) {
      const marker = name.slice(`${nodeId}-`.length, -'.json'.length)
      const tasks = byMarker.get(marker)
      if (!tasks) continue
      const note = await this.read(name)
      if (!note || note.marker !== marker) continue
      for (const t of tasks) if (sameTarget(note.key, t)) out.push({ id: t.id, entry: { name, note } })
    }
    return out
  }

  /** A note, or null when it is gone, still being written, not a note, or expired (then removed). */
  private async read(name: string): Promise<Note | null> {
    let note: unknown
    try {
      note = JSON.parse(await readFile(path.join(this.dir, name), 'utf8'))
    } catch (err) {
      if (isMissing(err) || err instanceof SyntaxError) return null
      throw err
    }
    // A note of an older version (no mark) cannot be matched to anything: it goes like an expired one.
    if (!isNote(note) || this.now() - note.at > EXPIRY_MS) {
      this.remove(name)
      return null
    }
    return note
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
