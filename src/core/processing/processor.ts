// Processes finished analyses, one at a time, oldest first: every task that reaches `completed`
// (a run that ended, or a rereport) is turned into its reports and moved to `reported`, or to
// `failed_processing` with the reason in its errors. Event-driven like the scheduler: a task
// change wakes it; at start it picks up what a previous process left completed but unreported
// (processing is idempotent: it rewrites reports/ from what the run collected, which it never
// touches). A task is claimed (tasks.processing) before anything of it is read and released after
// the last write: a delete waits for the release, and a deleted task cannot be claimed, so
// processing never writes into the folder of a deleted task (db/processing-claims.ts).
import path from 'node:path'
import { readFile, realpath } from 'node:fs/promises'
import { ARTIFACTS, type StorageLayout } from '../storage/layout'
import type { QueueRepository } from '../db/queue.repository'
import type { TimelineRepository } from '../db/timeline.repository'
import type { TasksRepository } from '../db/tasks.repository'
import type { SamplesRepository } from '../db/samples.repository'
import type { EventBus } from '../events/event-bus'
import type { FileTypeDetector } from '../hashing/magic'
import type { FileHashing } from '../hashing/file-digest'

export interface ProcessorDeps {
  layout: StorageLayout
  queue: QueueRepository
  tasks: TasksRepository
  samples: SamplesRepository
  timeline: TimelineRepository
  bus: EventBus
  detectType: FileTypeDetector
  /** The service's hashing workers, which read and digest the files a report describes. */
  hashing?: FileHashing
  /** The user's YARA rules folder; null: none. */
  yaraRules: () => string | null
  /** <data>/suricata: the IDS step's settings and imported rule sets. */
  suricataDir?: string
  aviaryVersion: string
  log: { info(msg: string): void; error(msg: string): void }
  /** Where the score goes for task lists (db/task-search.ts). */
  scores?: { set(id: number, score: number | null): void }
  /** Where the report's search terms go (search/search-index.ts); a note for the timeline back. */
  searchIndex?: { write(id: number, report: unknown): string | null }
}

/** What tasks.processing names while this process processes a task (Cuckoo 2: the instance). */
export const PROCESSING_INSTANCE = `aviary:${process.pid}`

export class Processor {
  private busy: Promise<void> | null = null
  private again = false
  private stopped = true
  private readonly onTask = () => this.kick()

  constructor(private readonly d: ProcessorDeps) {}

  start(): void {
    this.stopped = false
    this.d.bus.on('task', this.onTask)
    this.kick()
  }

  /** Looks for completed tasks; while a task is processed, notes that it should look again. */
  kick(): void {
    if (this.stopped) return
    if (this.busy) {
      this.again = true
      return
    }
    this.busy = this.drain().finally(() => {
      this.busy = null
      if (this.again) {
        this.again = false
        this.kick()
      }
    })
  }

  private async drain(): Promise<void> {
    for (let id = this.d.queue.nextCompleted(); id !== undefined && !this.stopped; id = this.d.queue.nextCompleted()) {
      await this.processOne(id)
    }
  }

  async processOne(id: number): Promise<void> {
    const d = this.d
    // The claim needs the task's row, still completed: a task deleted or moved on meanwhile is skipped.
    if (!d.queue.claimProcessing(id, PROCESSING_INSTANCE)) return
    try {
      await this.processClaimed(id)
    } finally {
      d.queue.releaseProcessing(id)
    }
  }

  private async processClaimed(id: number): Promise<void> {
    const d = this.d
    const started = Date.now()
    d.timeline.add(id, 'processing', null)
    try {
      const row = d.tasks.get(id)
      if (!row) return
      const dir = d.layout.analysis(id)
      const task = await readFile(d.layout.artifact(id, ARTIFACTS.taskJson), 'utf8').then((t) => JSON.parse(t) as Record<string, unknown>)
        .catch(() => JSON.parse(d.tasks.viewJson(id) ?? '{}') as Record<string, unknown>)
      const sampleRow = row.sample_id === null ? undefined : d.samples.get(row.sample_id)
      const sample = sampleRow
        ? { path: await realpath(d.layout.binary(sampleRow.sha256)), name: path.basename(row.target), type: sampleRow.file_type }
        : null
      // The pipeline (every module, their parsers, YARA, the report writers) loads with the first
      // task processed, not with the service: an idle service or one busy ingesting never needs it.
      const { processAnalysis } = await import('./pipeline')
      const result = await processAnalysis({
        taskId: id, dir, task, sample, url: row.category === 'url' ? row.target : null, yaraRules: d.yaraRules(), suricataDir: d.suricataDir ?? null,
        log: (m) => d.log.info(`task ${id}: processing: ${m}`)
      }, { detectType: d.detectType, ...(d.hashing ? { hashing: d.hashing } : {}), aviaryVersion: d.aviaryVersion })
      for (const e of result.errors) d.queue.addError(id, `processing: ${e}`)
      d.scores?.set(id, result.score)
      const indexNote = d.searchIndex?.write(id, result.report) ?? null
      if (d.queue.move(id, 'completed', 'reported')) {
        d.timeline.add(id, 'reported', `score ${result.score}, in ${((Date.now() - started) / 1000).toFixed(1)} s${indexNote ? `; ${indexNote}` : ''}`)
      }
    } catch (err) {
      const reason = `processing failed: ${(err as Error).message}`
      d.log.error(`task ${id}: ${reason}`)
      d.queue.addError(id, reason)
      if (d.queue.move(id, 'completed', 'failed_processing')) d.timeline.add(id, 'failed', reason)
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.d.bus.off('task', this.onTask)
    await this.busy
  }
}
