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
      return true
    })
  }

  /** The task's terms become these, at once; false (nothing written) when there is no such task. */
  replace(taskId: number, terms: readonly TermRow[]): boolean {
    return this.replaceTx(taskId, terms)
  }

  /** The task's report terms, by kind and term. */
  list(taskId: number): TermRow[] {
    return this.listStmt.all(taskId)
  }
}
