// The search terms of tasks (table task_terms, migration 5): what processing found in a task's
// report (search/report-terms.ts), replaced whole each time the task is processed and deleted with
// the task (ON DELETE CASCADE). Only processing writes here (the table's 'tag' rows are written by
// triggers when a task is inserted); the task search reads the table (task-search.ts).
import type { Db } from './database'
import { INDEXED_KINDS, type IndexedKind } from '../../shared/search-query'

export interface TermRow {
  kind: IndexedKind
  term: string
}

export class TaskTermsRepository {
  private readonly existsStmt
  private readonly deleteStmt
  private readonly insertStmt
  private readonly listStmt
  private readonly replaceTx
  private readonly backfillTx
  private readonly unqueueStmt
  private readonly nextQueuedStmt
  private readonly queuedCountStmt

  constructor(db: Db) {
    this.existsStmt = db.prepare<[number], number>('SELECT 1 FROM tasks WHERE id = ?').pluck()
    // The report's kinds only: a task's tags are its own (written at insert, migration 5).
    this.deleteStmt = db.prepare<[number]>(`DELETE FROM task_terms WHERE task_id = ? AND kind IN (${INDEXED_KINDS.map((k) => `'${k}'`).join(', ')})`)
    this.insertStmt = db.prepare<[number, string, string]>('INSERT OR IGNORE INTO task_terms (task_id, kind, term) VALUES (?, ?, ?)')
    this.listStmt = db.prepare<[number], TermRow>("SELECT kind, term FROM task_terms WHERE task_id = ? AND kind <> 'tag' ORDER BY kind, term")
    this.replaceTx = db.transaction((taskId: number, terms: readonly TermRow[]): boolean => {
      if (this.existsStmt.get(taskId) === undefined) return false
      this.deleteStmt.run(taskId)
      for (const t of terms) this.insertStmt.run(taskId, t.kind, t.term)
      // Indexed now: the backfill has nothing left to read for this task.
      this.unqueueStmt.run(taskId)
      return true
    })
    this.unqueueStmt = db.prepare<[number]>('DELETE FROM search_backfill WHERE task_id = ?')
    this.nextQueuedStmt = db.prepare<[], number>('SELECT task_id FROM search_backfill ORDER BY task_id DESC LIMIT 1').pluck()
    this.queuedCountStmt = db.prepare<[], number>('SELECT count(*) FROM search_backfill').pluck()
    this.backfillTx = db.transaction((taskId: number, terms: readonly TermRow[]): boolean => {
      // Gone from the queue meanwhile: processing indexed a newer report (a rereport), or the task was deleted.
      if (this.unqueueStmt.run(taskId).changes === 0) return false
      return this.replaceTx(taskId, terms)
    })
  }

  /** The task's terms become these, at once; false (nothing written) when there is no such task. */
  replace(taskId: number, terms: readonly TermRow[]): boolean {
    return this.replaceTx(taskId, terms)
  }

  /** The newest task whose report the backfill has still to read. */
  nextQueued(): number | undefined {
    return this.nextQueuedStmt.get()
  }

  queuedCount(): number {
    return this.queuedCountStmt.get() ?? 0
  }

  /**
   * The backfill's terms for a queued task; false (nothing written) when the task has left the
   * queue since it was read (processing wrote newer terms, or the task is gone).
   */
  replaceQueued(taskId: number, terms: readonly TermRow[]): boolean {
    return this.backfillTx(taskId, terms)
  }

  /** Leaves a task's report unread (it cannot be read); its terms stay as they are. */
  unqueue(taskId: number): void {
    this.unqueueStmt.run(taskId)
  }

  /** The task's report terms, by kind and term. */
  list(taskId: number): TermRow[] {
    return this.listStmt.all(taskId)
  }
}
