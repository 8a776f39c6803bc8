// The dispatcher's worker: assigns pending tasks to nodes, and runs one loop per enabled node that
// submits, polls, fetches and cleans (node-worker.ts). In-process with `aviary dist` by default;
// `aviary dist-worker` runs it alone, and several workers may share one PostgreSQL database: every
// step that must happen once (assign, submit, fetch) is an atomic claim in the store.
//
// A claim is a lease: a worker that dies keeps its tasks from the others until the lease runs
// out (`leaseSeconds`). At start, the leases of workers of this machine that no longer run (a
// predecessor killed with -9) are taken back at once (identity.ts says who counts). On SQLite
// every worker runs on the database's machine, so that covers them all but a predecessor in
// another PID namespace (a restarted container) or whose pid already runs another process; on
// PostgreSQL, the leases of other machines' workers run out by time.
import { appendFile } from 'node:fs/promises'
import type { DistStore } from '../store/types'
import { DEFAULT_MAX_ANSWER_BYTES } from '../../shared/api/client'
import { assignRound } from './assign'
import { CleanupLedger } from './cleanup'
import { isDeadLocalWorker, newWorkerId } from './identity'
import { UncertainSubmissions } from './uncertain'
import { Loop } from './loop'
import { NodeWorker, type WorkerLog } from './node-worker'

export interface WorkerOptions {
  reportsDir: string
  /** Where relative sample paths are resolved (stored paths are normally absolute). */
  samplesDir: string
  /** Report formats fetched from nodes, `report.<fmt>` each. Default ['json']. */
  reportFormats?: string[]
  /** Fetch `dump.pcap` too. Default true. */
  pcap?: boolean
  /** Batch size of an assignment round, and the node-side pending count above which a node gets no submissions. Default 500. */
  threshold?: number
  /** A node's queue here (assigned + processing) above which it gets no more assignments. Default 2 × threshold. */
  queueLimit?: number
  /** Pause between assignment rounds. Default 10 s. */
  assignIntervalMs?: number
  /** Pause between a node's rounds (status, submit, poll). Default 10 s. */
  nodeIntervalMs?: number
  /** Failed contacts in a row that make a node unreachable. Default 3. */
  maxFailures?: number
  /** How long a claim protects a task from other workers. Default 300 s. */
  leaseSeconds?: number
  /** Timeout of status, list and delete calls. Default 60 s. */
  requestTimeoutMs?: number
  /** Timeout of one submission or one report download. Default 10 min. */
  transferTimeoutMs?: number
  /** Cap of one JSON answer of a node (its status, a page of its task list). Default 16 MiB. */
  maxAnswerBytes?: number
  /** Cap of one downloaded report or pcap. Default 4 GiB. */
  maxReportBytes?: number
  /** Submissions or downloads in flight per node. Default 4. */
  concurrency?: number
  /** Appends `{"timestamp", "status"}` JSON lines (each node's last status, null when unreachable). */
  uptimeLogfile?: string | null
  workerId?: string
  log?: WorkerLog
}

export interface DistWorker {
  stop(): Promise<void>
}

export function startWorker(store: DistStore, opts: WorkerOptions): DistWorker {
  const threshold = opts.threshold ?? 500
  const maxFailures = opts.maxFailures ?? 3
  const nodeInterval = opts.nodeIntervalMs ?? 10_000
  const log: WorkerLog = opts.log ?? { info: () => undefined, warn: (m) => console.warn(m) }
  const onError = (err: unknown): void => log.warn(`dist worker: ${(err as Error)?.stack ?? String(err)}`)
  let stopping = false
  const nodeLoops = new Map<number, Loop>()

  const assign = new Loop(opts.assignIntervalMs ?? 10_000, async () => {
    const assigned = await assignRound(store, { batch: threshold, queueLimit: opts.queueLimit ?? 2 * threshold, maxFailures })
    // New work: those nodes submit now rather than at their next tick.
    for (const id of new Set(assigned.map((t) => t.node_id))) if (id !== null) nodeLoops.get(id)?.kick()
    return assigned.length >= threshold ? 'again' : undefined
  }, onError)

  const ctx = {
    store,
    ledger: new CleanupLedger(opts.reportsDir),
    uncertain: new UncertainSubmissions(opts.reportsDir),
    log,
    workerId: opts.workerId ?? newWorkerId(),
    fetch: { reportsDir: opts.reportsDir, formats: opts.reportFormats ?? ['json'], pcap: opts.pcap ?? true, maxBytes: opts.maxReportBytes ?? 4 * 1024 ** 3 },
    samplesDir: opts.samplesDir,
    threshold,
    maxFailures,
    leaseSeconds: opts.leaseSeconds ?? 300,
    requestTimeoutMs: opts.requestTimeoutMs ?? 60_000,
    transferTimeoutMs: opts.transferTimeoutMs ?? 600_000,
    maxAnswerBytes: opts.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
    concurrency: opts.concurrency ?? 4,
    stopping: () => stopping,
    kickAssign: () => assign.kick()
  }

  // Starts a loop for each enabled node and stops those of nodes disabled or gone (Cuckoo
  // re-checks its node list every 5 s).
  const supervisor = new Loop(Math.min(nodeInterval, 5_000), async () => {
    const enabled = new Set((await store.listNodes({ enabledOnly: true })).map((n) => n.id))
    for (const id of enabled) {
      if (nodeLoops.has(id) || stopping) continue
      const worker = new NodeWorker(ctx, id)
      const loop = new Loop(nodeInterval, () => worker.round(), onError)
      nodeLoops.set(id, loop)
      loop.start()
    }
    for (const [id, loop] of nodeLoops) {
      if (enabled.has(id)) continue
      nodeLoops.delete(id)
      await loop.stop()
    }
    return undefined
  }, onError)

  const uptimeLog = opts.uptimeLogfile
  const uptime = uptimeLog
    ? new Loop(nodeInterval, async () => {
      const status: Record<string, unknown> = {}
      for (const n of await store.listNodes({ enabledOnly: true })) status[n.name] = n.failures < maxFailures ? n.status : null
      await appendFile(uptimeLog, JSON.stringify({ timestamp: Math.floor(Date.now() / 1000), status }) + '\n')
      return undefined
    }, onError)
    : null

  // The loops start once the dead predecessors' leases are back (failing that, they start anyway:
  // those leases then run out by time).
  const started = takeBackLeases(store, log).catch(onError).then(() => {
    if (stopping) return
    supervisor.start()
    assign.start()
    uptime?.start()
  })

  let stopped: Promise<void> | undefined
  return {
    stop() {
      stopped ??= (async () => {
        stopping = true
        await started
        await Promise.all([supervisor.stop(), assign.stop(), uptime?.stop()])
        await Promise.all([...nodeLoops.values()].map((l) => l.stop()))
        nodeLoops.clear()
      })()
      return stopped
    }
  }
}

/** Releases the leases of workers of this machine whose process is gone (identity.ts). */
async function takeBackLeases(store: DistStore, log: WorkerLog): Promise<void> {
  for (const holder of (await store.leaseHolders()).filter(isDeadLocalWorker)) {
    const n = await store.releaseLeases(holder)
    log.warn(`dist: took back ${n} task(s) leased by ${holder}, a worker of this machine that no longer runs`)
  }
}

export { canServe, taskTags } from './assign'
export type { WorkerLog } from './node-worker'
