// The search terms of tasks (table task_terms, migration 5): what processing found in a task's
// report (search/report-terms.ts), replaced whole each time the task is processed and deleted with
// the task (ON DELETE CASCADE). Only processing writes here; the task search reads the table
// (task-search.ts).
import type { Db } from './database'
import type { IndexedKind } from '../../shared/search-query'

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

  constructor(db: Db) {
    this.existsStmt = db.prepare<[number], number>('SELECT 1 FROM tasks WHERE id = ?').pluck()
    this.deleteStmt = db.prepare<[number]>('DELETE FROM task_terms WHERE task_id = ?')
    this.insertStmt = db.prepare<[number, string, string]>('INSERT OR IGNORE INTO task_terms (task_id, kind, term) VALUES (?, ?, ?)')
    this.listStmt = db.prepare<[number], TermRow>('SELECT kind, term FROM task_terms WHERE task_id = ? ORDER BY kind, term')
    this.replaceTx = db.transaction((taskId: number, terms: readonly TermRow[]): boolean => {
      if (this.existsStmt.get(taskId) === undefined) return false
      this.deleteStmt.run(taskId)
      for (const t of terms) this.insertStmt.run(taskId, t.kind, t.term)
      return true
    })
  }

  /** The task's terms become these, at once; false (nothing written) when there is no such task. */
  replace(taskId: number, terms: readonly TermRow[]): boolean {
    return this.replaceTx(taskId, terms)
  }

  /** The task's terms, by kind and term. */
  list(taskId: number): TermRow[] {
    return this.listStmt.all(taskId)
  }
}
