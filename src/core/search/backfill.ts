// The search index for reports written before it existed. Processing indexes each report it
// builds (search-index.ts); a data folder from an Aviary without the index (before migration 5)
// holds reported tasks that no domain, address, URL, signature or hash would find. Migration 7
// queues them (table search_backfill), and this reads each one's report.json once, newest first,
// in the background of a running service: the same terms as processing, from the report's own
// sections, never the whole file (a report can be hundreds of MB; json-index.ts finds the parts).
//
// One task at a time with a turn of the event loop between, so the API and the scheduler are not
// held up. A section too large to parse here, or a report that cannot be read, is logged with what
// to do (rereport the task): the task leaves the queue either way, so a bad report is read once.
import { Buffer } from 'node:buffer'
import type { FileHandle } from 'node:fs/promises'
import { setImmediate as turn } from 'node:timers/promises'
import type { Db } from '../db/database'
import { TaskTermsRepository } from '../db/task-terms.repository'
import { indexJsonStream, type JsonIndex, type JsonKeyRange } from '../reporting/json-index'
import { openRegular } from '../reporting/file-source'
import { ARTIFACTS, type StorageLayout } from '../storage/layout'
import { capNote, reportTerms } from './report-terms'

/** The parts of a report the terms are read from (report-terms.ts): a top-level key, or key.child. */
const PARTS: readonly (readonly [string] | readonly [string, string])[] = [
  ['target'], ['network'], ['signatures'], ['dropped'], ['behavior', 'summary'], ['info', 'score'], ['static', 'pdf']
]

/** Larger parts are not parsed here (a few times their size in heap); a rereport indexes them. */
export const MAX_PART_BYTES = 64 * 1024 * 1024

export interface BackfillLog {
  info(msg: string): void
  warn(msg: string): void
}

export interface BackfillDeps {
  db: Db
  layout: StorageLayout
  log: BackfillLog
  /** Parts of a report larger than this are left out (default MAX_PART_BYTES). */
  maxPartBytes?: number
}

export class SearchBackfill {
  private readonly terms: TaskTermsRepository
  private readonly scoreStmt
  private readonly statusStmt
  private running: Promise<void> | null = null
  private stopped = false

  constructor(private readonly d: BackfillDeps) {
    this.terms = new TaskTermsRepository(d.db)
    // Tasks reported before scores were kept (migration 3) have none for the list's score order.
    this.scoreStmt = d.db.prepare<[number, number]>('UPDATE tasks SET score = ? WHERE id = ? AND score IS NULL')
    this.statusStmt = d.db.prepare<[number], string>('SELECT status FROM tasks WHERE id = ?').pluck()
  }

  /** Starts reading the queued reports, if there are any; returns at once. */
  start(): void {
    if (this.running) return
    this.stopped = false
    const queued = this.terms.queuedCount()
    if (queued === 0) return
    this.d.log.info(`search index: ${queued} reports written before the index are read in the background`)
    this.running = this.drain(queued).catch((err: Error) => {
      this.d.log.warn(`search index: the backfill stopped: ${err.message}`)
    })
  }

  /** Resolves once the backfill has stopped (at once when it is not running). */
  async stop(): Promise<void> {
    this.stopped = true
    await this.running
    this.running = null
  }

  /** Resolves when the queue is empty or the backfill was stopped (for tests and `stop`). */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve()
  }

  private async drain(queued: number): Promise<void> {
    let indexed = 0
    let unread = 0
    for (let id = this.terms.nextQueued(); id !== undefined && !this.stopped; id = this.terms.nextQueued()) {
      if (await this.indexOne(id)) indexed++
      else unread++
      await turn()
    }
    if (!this.stopped) {
      this.d.log.info(`search index: ${indexed} of ${queued} earlier reports indexed${unread > 0 ? `, ${unread} could not be read (see above)` : ''}`)
    }
  }

  /** Indexes one queued task's report; false when it could not be read (and the task leaves the queue). */
  async indexOne(id: number): Promise<boolean> {
    // Being processed again (its report is rewritten and indexed by processing), or not reported: nothing to read.
    if (this.statusStmt.get(id) !== 'reported') {
      this.terms.unqueue(id)
      return true
    }
    let report: Record<string, unknown>
    try {
      report = await this.readParts(id)
    } catch (err) {
      this.terms.unqueue(id)
      this.d.log.warn(`task ${id}: search index: its report could not be read (${(err as Error).message}); rereport the task to index it`)
      return false
    }
    const terms = reportTerms(report)
    if (this.terms.replaceQueued(id, terms.terms)) {
      const info = report['info'] as { score?: unknown } | undefined
      if (typeof info?.score === 'number' && Number.isFinite(info.score)) this.scoreStmt.run(info.score, id)
      const note = capNote(terms)
      if (note !== null) this.d.log.info(`task ${id}: ${note}`)
    }
    return true
  }

  /** The report's parts the terms need, as one object shaped like the report. */
  private async readParts(id: number): Promise<Record<string, unknown>> {
    const opened = await openRegular(Buffer.from(this.d.layout.artifact(id, ARTIFACTS.reportJson)))
    if (opened === null) throw new Error('report.json is not a regular file')
    const { fh, stats } = opened
    try {
      const index = await indexJsonStream(fh.createReadStream({ start: 0, autoClose: false, highWaterMark: 1 << 20 }), stats.size, 2)
      const report: Record<string, unknown> = {}
      const tooLarge: string[] = []
      for (const [key, child] of PARTS) {
        const range = find(index, key, child)
        if (range === undefined) continue
        const size = range.end - range.start
        if (size > (this.d.maxPartBytes ?? MAX_PART_BYTES)) {
          tooLarge.push(`${child === undefined ? key : `${key}.${child}`} (${Math.round(size / 1048576)} MiB)`)
          continue
        }
        const value = JSON.parse((await readRange(fh, range)).toString('utf8')) as unknown
        if (child === undefined) report[key] = value
        else report[key] = { ...(report[key] as object | undefined), [child]: value }
      }
      if (tooLarge.length > 0) {
        this.d.log.warn(`task ${id}: search index: too large to read here, left out: ${tooLarge.join(', ')}; rereport the task to index them`)
      }
      return report
    } finally {
      await fh.close()
    }
  }
}

function find(index: JsonIndex, key: string, child: string | undefined): JsonKeyRange | undefined {
  const top = index.keys.find((k) => k.key === key)
  return child === undefined ? top : top?.children?.find((k) => k.key === child)
}

async function readRange(fh: FileHandle, range: JsonKeyRange): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(range.end - range.start)
  let done = 0
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, range.start + done)
    if (bytesRead === 0) throw new Error('report.json was cut short while read')
    done += bytesRead
  }
  return buf
}
