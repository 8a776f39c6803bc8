// What processing calls once a task's report is built: the report's search terms written for the
// task (replacing any earlier ones: a rereport), and a note for the task's timeline when a cap was
// reached. An index that cannot be written costs the search of one task, not its report: the
// failure becomes the note.
import type { Db } from '../db/database'
import { TaskTermsRepository } from '../db/task-terms.repository'
import { capNote, reportTerms } from './report-terms'

export class SearchIndex {
  private readonly repo: TaskTermsRepository

  constructor(db: Db) {
    this.repo = new TaskTermsRepository(db)
  }

  /** Indexes the report of task `taskId`; a note for its timeline, or null. */
  write(taskId: number, report: unknown): string | null {
    const terms = reportTerms(report)
    try {
      this.repo.replace(taskId, terms.terms)
    } catch (err) {
      return `search index not written: ${(err as Error).message}`
    }
    return capNote(terms)
  }
}
