// The result server: the TCP endpoint where guests send their analyzer log (LOG), the monitor's
// API logs (BSON <pid>) and files (FILE, FILE 2), speaking Cuckoo 2.0.7's protocol so existing
// guest images work unchanged (Cuckoo 2.0.7's cuckoo/core/resultserver.py). A connection belongs to the task
// registered for its source IP; anything else is closed at once. The guest is hostile: headers
// are bounded in size and time, paths are reduced to an allowlist (upload-path.ts) and opened
// without following links (open-inside.ts), files are never overwritten, every byte counts toward
// per-file and per-task caps (sinks.ts), and idle bodies are cut.
//
// Choices beyond 2.0.7:
// - BSON <pid> again for a pid already logged in this task appends to logs/<pid>.bson after the
//   earlier stream of that pid has closed (the monitor reconnects its pipe; 2.0.7 truncated and
//   lost the first part). Streams of one pid are thus never interleaved.
// - BSON streams are bounded by the task cap only: a per-file cap plus marker would corrupt the
//   BSON framing that processing parses (2.0.7 did not cap them either).
// - Idle timeout (default 30 min) on every body: longer than ordinary analyses, so a monitor whose
//   process is quiet is not cut, while connections still cannot hang forever; removeTask cuts
//   everything at the end of the analysis anyway. The header has its own deadline (30 s).
// - onUpload is called for FILE uploads and for each BSON stream once its file is closed.
// - Warnings are capped per task (and for unregistered sources) so a guest cannot flood the log.
import net, { type Server, type Socket } from 'node:net'
import { pipeline } from 'node:stream/promises'
import type { Writable } from 'node:stream'
import { readHeader, MAX_HEADER_LINE, type Header } from './netlog-header'
import { sanitizeUploadPath } from './upload-path'
import { openInside, appendLine } from './open-inside'
import { FileSink, LogLineSink, TaskBudget } from './sinks'
import { ARTIFACTS, monitorLogName } from '../storage/layout'

export interface ResultServerLimits { uploadMaxSize: number; taskMaxSize: number } // bytes per file / per task
/** `bytes` stored (without the marker); `truncated`: bytes were dropped by the per-file or the task cap. */
export interface UploadInfo { path: string; bytes: number; truncated: boolean } // path relative to the task folder
export interface TaskRegistration {
  taskId: number
  dir: string
  /**
   * This run's id when its analyzer opens every connection with it (Aviary's): a connection that
   * names another run, or none, is refused (an analyzer left from an earlier task on this guest).
   */
  run?: string | null
  onLogLine?: (line: string) => void
  /** What storing a log line costs in bytes (onLogLine may add a prefix); default its length and newline. */
  logLineBytes?: (line: string) => number
  onUpload?: (u: UploadInfo) => void
  /** A connection was refused because of its run line; `why` says so in words. */
  onRefused?: (why: string) => void
  /** The task reached taskMaxSize: nothing more is stored. */
  onCapReached?: (capBytes: number) => void
}

export interface ResultServerOptions {
  limits: ResultServerLimits
  log: { info(m: string): void; warn(m: string): void }
  /** Deadline for the whole header of a connection (Cuckoo: 30 s). */
  headerTimeoutMs?: number
  /** A body that sends nothing for this long is cut. */
  idleTimeoutMs?: number
}

const DEFAULT_HEADER_TIMEOUT_MS = 30_000
const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60_000
/** Warnings per task (and for all unregistered sources together) before the rest are only counted. */
const WARNINGS_LOGGED = 100

/** A connection refused after its header: warned about, nothing (more) stored. */
class Refused extends Error {}

/** Where a connection is, for `connections()`: reading its header, waiting for its file, streaming. */
export type ConnectionPhase = 'header' | 'opening' | 'body'

export interface ConnectionInfo { ip: string; taskId: number; phase: ConnectionPhase; bytesRead: number }

interface Conn {
  socket: Socket
  ip: string
  taskId: number
  phase: ConnectionPhase
  done: Promise<void>
  /** Closed on purpose (removeTask, stop, task cap): its end is not the guest's error. */
  cut: boolean
}

interface TaskState {
  ip: string
  reg: TaskRegistration
  budget: TaskBudget
  conns: Set<Conn>
  logTaken: boolean
  /** Per pid: resolves when the latest BSON stream of that pid has closed its file. */
  bsonTail: Map<string, Promise<void>>
  bsonCreated: Set<string>
  filesJson: Promise<void>
  warnings: number
}

interface Listening { server: Server; port: number }

/** '::ffff:10.0.0.5' → '10.0.0.5', so IPv4 guests match however the listener is bound. */
function normalizeIp(ip: string): string {
  return ip.toLowerCase().startsWith('::ffff:') && net.isIPv4(ip.slice(7)) ? ip.slice(7) : ip
}

/**
 * pipeline(), except for a source that is already destroyed: pipeline() then never settled (Node
 * 20, a guest resetting while its file was being opened), which hung removeTask and stop.
 */
async function pump(socket: Socket, sink: Writable): Promise<void> {
  if (socket.destroyed) {
    sink.destroy()
    throw new Refused('the connection closed before its body')
  }
  await pipeline(socket, sink)
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))

export class ResultServer {
  private readonly listeners = new Map<string, Promise<Listening>>()
  private readonly tasks = new Map<string, TaskState>()
  private readonly conns = new Set<Conn>()
  private readonly headerTimeoutMs: number
  private readonly idleTimeoutMs: number
  private strangerWarnings = 0

  constructor(private readonly o: ResultServerOptions) {
    this.headerTimeoutMs = o.headerTimeoutMs ?? DEFAULT_HEADER_TIMEOUT_MS
    this.idleTimeoutMs = o.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
  }

  /** Listens on ip:port (0: an ephemeral port, reused for later listen(ip, 0)); returns the port. Idempotent. */
  async listen(ip: string, port: number): Promise<number> {
    const key = `${ip}:${port}`
    let p = this.listeners.get(key)
    if (p === undefined) {
      p = this.bind(ip, port)
      this.listeners.set(key, p)
      p.then((l) => {
        if (port === 0) this.listeners.set(`${ip}:${l.port}`, p!)
      }, () => this.listeners.delete(key))
    }
    return (await p).port
  }

  private bind(ip: string, port: number): Promise<Listening> {
    return new Promise((resolve, reject) => {
      const server = net.createServer((socket) => this.accept(socket))
      server.once('error', reject)
      server.listen({ host: ip, port, backlog: 511 }, () => {
        server.off('error', reject)
        server.on('error', (err) => this.o.log.warn(`listener ${ip}:${port}: ${err.message}`))
        const addr = server.address()
        const actual = typeof addr === 'object' && addr !== null ? addr.port : port
        this.o.log.info(`listening on ${ip}:${actual}`)
        resolve({ server, port: actual })
      })
    })
  }

  /** Connections from `guestIp` now belong to this task. Throws if the IP is already registered. */
  addTask(guestIp: string, reg: TaskRegistration): void {
    const ip = normalizeIp(guestIp)
    if (!net.isIP(ip)) throw new Error(`not an IP address: ${JSON.stringify(guestIp)}`)
    const other = this.tasks.get(ip)
    if (other !== undefined) throw new Error(`guest ${ip} is already registered for task ${other.reg.taskId}`)
    const t: TaskState = {
      ip, reg, conns: new Set(), logTaken: false, bsonTail: new Map(), bsonCreated: new Set(), filesJson: Promise.resolve(), warnings: 0,
      budget: new TaskBudget(this.o.limits.taskMaxSize, () => {
        this.o.log.warn(`task ${reg.taskId} (${ip}) reached its cap of ${this.o.limits.taskMaxSize} bytes: storing stopped, connections closed`)
        for (const c of t.conns) this.cut(c)
        try {
          reg.onCapReached?.(this.o.limits.taskMaxSize)
        } catch {
          // The consumer's failure must not look like the guest's.
        }
      })
    }
    this.tasks.set(ip, t)
  }

  /** Unregisters the guest, cuts its live connections and resolves once their files are closed. */
  async removeTask(guestIp: string): Promise<void> {
    const ip = normalizeIp(guestIp)
    const t = this.tasks.get(ip)
    if (t === undefined) return
    this.tasks.delete(ip)
    const live = [...t.conns]
    for (const c of live) this.cut(c)
    await Promise.all(live.map((c) => c.done))
    if (t.warnings > WARNINGS_LOGGED) this.o.log.warn(`task ${t.reg.taskId} (${ip}): ${t.warnings - WARNINGS_LOGGED} more warnings were not logged`)
  }

  /** A hostile guest can cause a warning per connection: after WARNINGS_LOGGED they are only counted. */
  private warn(t: TaskState | null, msg: string): void {
    const n = t === null ? ++this.strangerWarnings : ++t.warnings
    if (n <= WARNINGS_LOGGED) this.o.log.warn(msg)
    if (n === WARNINGS_LOGGED) this.o.log.warn(t === null ? 'further warnings about unregistered sources are not logged' : `task ${t.reg.taskId}: further warnings are counted, not logged`)
  }

  /** Closes every listener and connection. */
  async stop(): Promise<void> {
    const listening = await Promise.allSettled([...this.listeners.values()])
    this.listeners.clear()
    const live = [...this.conns]
    for (const c of live) this.cut(c)
    const closes = [...new Set(listening.flatMap((r) => (r.status === 'fulfilled' ? [r.value.server] : [])))]
      .map((server) => new Promise<void>((resolve) => server.close(() => resolve())))
    await Promise.all([...live.map((c) => c.done), ...closes])
  }

  /** The live connections of registered guests (for diagnostics). */
  connections(): ConnectionInfo[] {
    return [...this.conns].map((c) => ({ ip: c.ip, taskId: c.taskId, phase: c.phase, bytesRead: c.socket.bytesRead }))
  }

  private cut(c: Conn): void {
    c.cut = true
    c.socket.destroy()
  }

  private accept(socket: Socket): void {
    // Errors surface through the header reader or the pipeline; this keeps a reset between the
    // two phases from becoming an unhandled 'error' event.
    socket.on('error', () => undefined)
    const ip = normalizeIp(socket.remoteAddress ?? '')
    const t = this.tasks.get(ip)
    if (t === undefined || t.budget.exceeded) {
      if (t === undefined) this.warn(null, `connection from unregistered ${ip || '(unknown)'} closed`)
      else this.warn(t, `task ${t.reg.taskId} is over its cap: connection from ${ip} closed`)
      socket.destroy()
      return
    }
    const conn: Conn = { socket, ip, taskId: t.reg.taskId, phase: 'header', done: Promise.resolve(), cut: false }
    t.conns.add(conn)
    this.conns.add(conn)
    conn.done = this.serve(t, conn)
      .catch((err: unknown) => {
        if (!conn.cut) this.warn(t, `task ${t.reg.taskId} (${ip}): ${message(err)}; connection closed`)
      })
      .finally(() => {
        socket.destroy()
        t.conns.delete(conn)
        this.conns.delete(conn)
      })
  }

  private async serve(t: TaskState, conn: Conn): Promise<void> {
    const { socket } = conn
    const { header, rest, run } = await readHeader(socket, this.headerTimeoutMs)
    conn.phase = 'opening'
    // The task may have ended (or hit its cap) while the header trickled in.
    if (this.tasks.get(t.ip) !== t) throw new Refused('the task is no longer registered')
    if (t.budget.exceeded) throw new Refused('the task is over its cap')
    const want = t.reg.run ?? null
    if (want !== null && run !== want) {
      const why = run === null
        ? `a ${header.kind.toUpperCase()} connection that names no run (this run's analyzer names it)`
        : `a ${header.kind.toUpperCase()} connection of another run (${run.slice(0, 8)}…), an analyzer left from an earlier task`
      try {
        t.reg.onRefused?.(why)
      } catch {
        // The consumer's failure must not look like the guest's.
      }
      throw new Refused(`refused ${why}`)
    }
    if (rest.length > 0) socket.unshift(rest)
    socket.setTimeout(this.idleTimeoutMs, () => {
      this.warn(t, `task ${t.reg.taskId} (${t.ip}): no data for ${this.idleTimeoutMs} ms; connection closed`)
      this.cut(conn)
    })
    switch (header.kind) {
      case 'log': return this.serveLog(t, conn)
      case 'bson': return this.serveBson(t, conn, header.pid)
      case 'file': return this.serveFile(t, conn, header)
    }
  }

  private async serveLog(t: TaskState, conn: Conn): Promise<void> {
    if (t.logTaken) throw new Refused('a second LOG connection is refused (Cuckoo 2.0.7 opens analysis.log exclusively)')
    t.logTaken = true
    const onLine = t.reg.onLogLine ?? ((): void => undefined)
    conn.phase = 'body'
    await pump(conn.socket, new LogLineSink(onLine, t.budget, MAX_HEADER_LINE, t.reg.logLineBytes))
  }

  private async serveBson(t: TaskState, conn: Conn, pid: string): Promise<void> {
    const { socket } = conn
    const previous = t.bsonTail.get(pid)
    let release!: () => void
    t.bsonTail.set(pid, new Promise((resolve) => { release = resolve }))
    try {
      if (previous !== undefined) await previous
      if (socket.destroyed) return
      const mode = t.bsonCreated.has(pid) ? 'append' : 'create'
      const rel = `${ARTIFACTS.logs}/${monitorLogName(pid)}`
      const fh = await openInside(t.reg.dir, ARTIFACTS.logs, monitorLogName(pid), mode).catch((err: unknown) => {
        throw new Refused(`cannot ${mode === 'create' ? 'create' : 'append to'} ${rel}: ${message(err)}`)
      })
      t.bsonCreated.add(pid)
      await this.drain(t, conn, new FileSink(fh, null, t.budget), rel)
    } finally {
      release()
    }
  }

  private async serveFile(t: TaskState, conn: Conn, h: Extract<Header, { kind: 'file' }>): Promise<void> {
    const checked = sanitizeUploadPath(h.path)
    if (!checked.ok) throw new Refused(`banned upload path ${JSON.stringify(h.path.slice(0, 128))}: ${checked.reason}`)
    const { folder, name, rel } = checked.path
    // The files.json line is paid for before the file is made: all or nothing, so a task at its
    // cap gets neither a line nor an empty file.
    const line = h.version === 2 ? JSON.stringify({ path: rel, filepath: h.guestPath, pids: h.pids }) : null
    if (line !== null) {
      const n = Buffer.byteLength(line) + 1
      if (t.budget.take(n) < n) throw new Refused('the task is over its cap')
    }
    const fh = await openInside(t.reg.dir, folder, name, 'create').catch((err: unknown) => {
      const why = (err as NodeJS.ErrnoException).code === 'EEXIST' ? 'it exists already (never overwritten)' : message(err)
      throw new Refused(`cannot create ${rel}: ${why}`)
    })
    const sink = new FileSink(fh, this.o.limits.uploadMaxSize, t.budget)
    if (line !== null) {
      try {
        await this.appendFilesJson(t, line)
      } catch (err) {
        sink.destroy()
        await sink.fileClosed
        throw err
      }
    }
    await this.drain(t, conn, sink, rel)
  }

  /** Streams the body into `sink`, then reports what was stored, whatever ended the stream. */
  private async drain(t: TaskState, conn: Conn, sink: FileSink, rel: string): Promise<void> {
    conn.phase = 'body'
    try {
      await pump(conn.socket, sink)
    } finally {
      await sink.fileClosed
      try {
        t.reg.onUpload?.({ path: rel, bytes: sink.stored, truncated: sink.dropped })
      } catch {
        // The consumer's failure must not look like the guest's.
      }
    }
  }

  /** files.json lines of one task (already paid for) are appended one after the other, each before its body. */
  private appendFilesJson(t: TaskState, line: string): Promise<void> {
    const next = t.filesJson.then(() => appendLine(t.reg.dir, ARTIFACTS.filesJson, line))
    t.filesJson = next.catch(() => undefined)
    return next
  }
}
