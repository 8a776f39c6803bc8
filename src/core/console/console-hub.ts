// The live consoles of the machines that have one open: a run registers its machine's console when
// the machine runs and closes it at its teardown (scheduler/analysis-run.ts); prepare mode
// registers a machine that no task holds (docs/engine.md, "The live console"). The websocket
// routes find a console by task or by machine here, and nowhere else: the API never reaches a
// driver or the hypervisor, and a console that is not registered does not exist (409).
//
// One client at a time is interactive; later ones are view-only (their input is dropped by the
// service, not just hidden by the page). When the interactive one leaves, the next client to
// connect gets control. Each session is recorded into the run's folder (recorder.ts).
import type { WebSocket } from 'ws'
import path from 'node:path'
import { recordingName, type RecordingMeta } from '../../shared/console-recording'
import { CloseCodes, ConsoleSession, type VncEndpoint } from './console-session'
import { Recorder, RecordingBudget } from './recorder'

export interface ConsoleTarget {
  /** The task whose run holds the machine; null for a machine's console outside a task (prepare mode). */
  task: number | null
  machine: string
  /** Where the machine's VNC server listens now (asked by each new session). */
  endpoint(): Promise<VncEndpoint>
  /** The folder recordings go to (the analysis folder's console/); null: not recorded. */
  recordDir: string | null
  /** The bytes all recordings of this console may take together. */
  recordCap: number
  /** Numbers recordings from here on (a run continues after sessions already in the folder). */
  firstSession?: number
  /** Sessions opening and closing, keys and clicks (coalesced per second): the task's timeline. */
  events?: {
    opened(s: SessionInfo): void
    input(s: SessionInfo, keys: number, clicks: number): void
    closed(s: SessionInfo, reason: string): void
    capped(cap: number): void
  }
}

export interface SessionInfo {
  id: number
  role: 'interactive' | 'view'
  opened_at: number
  keys: number
  clicks: number
}

/** Clients one console serves at once: each holds its own VNC connection and buffers. */
export const MAX_CLIENTS = 4
export const DEFAULT_RECORD_CAP = 256 * 1024 * 1024
const CLAIM_MS = 10_000

export class ConsoleEntry {
  readonly sessions = new Set<ConsoleSession>()
  readonly budget: RecordingBudget
  private nextSession: number
  private closedReason: string | null = null

  constructor(readonly target: ConsoleTarget) {
    this.budget = new RecordingBudget(target.recordCap)
    this.nextSession = target.firstSession ?? 1
  }

  /** Control given to a client whose websocket is being opened (or is open). */
  private controlClaimed = false

  get interactiveTaken(): boolean {
    return this.controlClaimed || [...this.sessions].some((s) => s.role === 'interactive' && !s.isClosed)
  }

  /**
   * The role of a client about to connect: control if no one has it (and it did not ask to watch),
   * else view-only. Decided while its websocket is accepted, so two clients connecting at once
   * cannot both get control; a claim no session takes up within CLAIM_MS is given back.
   */
  claim(wantView: boolean): 'interactive' | 'view' {
    if (wantView || this.interactiveTaken) return 'view'
    this.controlClaimed = true
    setTimeout(() => {
      if (![...this.sessions].some((s) => s.role === 'interactive')) this.controlClaimed = false
    }, CLAIM_MS).unref()
    return 'interactive'
  }

  /** Why a new client cannot join, or null. */
  refusal(): string | null {
    if (this.closedReason !== null) return this.closedReason
    if (this.sessions.size >= MAX_CLIENTS) return `this console already has ${MAX_CLIENTS} clients`
    return null
  }

  /** Serves a websocket that the route has accepted, in the role claim() gave it. */
  async attach(ws: WebSocket, role: 'interactive' | 'view'): Promise<ConsoleSession | null> {
    const id = this.nextSession++
    const t = this.target
    const meta: RecordingMeta = { task: t.task, machine: t.machine, session: id, role, started: Date.now() }
    let recorder: Recorder | null = null
    if (t.recordDir !== null) {
      try {
        recorder = new Recorder(path.join(t.recordDir, recordingName(id)), meta, this.budget, () => t.events?.capped(t.recordCap))
      } catch {
        recorder = null
      }
    }
    const info = (): SessionInfo => ({ id, role, opened_at: session.openedAt, keys: session.keys, clicks: session.clicks })
    const session: ConsoleSession = new ConsoleSession(id, role, ws, recorder, {
      activity: (keys, clicks) => t.events?.input(info(), keys, clicks),
      closed: (reason) => {
        this.sessions.delete(session)
        if (role === 'interactive') this.controlClaimed = false
        t.events?.closed(info(), reason)
      }
    })
    this.sessions.add(session)
    session.listen()
    t.events?.opened(info())
    let endpoint: VncEndpoint
    try {
      endpoint = await t.endpoint()
    } catch (err) {
      session.close(CloseCodes.vnc, `no console: ${(err as Error).message}`)
      return null
    }
    if (this.closedReason !== null) {
      session.close(CloseCodes.ended, this.closedReason)
      return null
    }
    session.start(endpoint)
    return session
  }

  /** Ends every session with the reason; later clients are refused with it. */
  close(reason: string): void {
    this.closedReason ??= reason
    for (const s of [...this.sessions]) s.close(CloseCodes.ended, reason)
  }

  info(): SessionInfo[] {
    return [...this.sessions].map((s) => ({ id: s.id, role: s.role, opened_at: s.openedAt, keys: s.keys, clicks: s.clicks }))
  }
}

export class ConsoleHub {
  private readonly byTaskId = new Map<number, ConsoleEntry>()
  private readonly byMachineName = new Map<string, ConsoleEntry>()

  /** Opens a machine's console; the returned close() ends its sessions and removes it. */
  register(target: ConsoleTarget): { entry: ConsoleEntry; close(reason: string): void } {
    const entry = new ConsoleEntry(target)
    this.byMachineName.get(target.machine)?.close('the machine was taken over')
    this.byMachineName.set(target.machine, entry)
    if (target.task !== null) this.byTaskId.set(target.task, entry)
    return {
      entry,
      close: (reason) => {
        entry.close(reason)
        if (this.byMachineName.get(target.machine) === entry) this.byMachineName.delete(target.machine)
        if (target.task !== null && this.byTaskId.get(target.task) === entry) this.byTaskId.delete(target.task)
      }
    }
  }

  byTask(id: number): ConsoleEntry | undefined {
    return this.byTaskId.get(id)
  }

  byMachine(name: string): ConsoleEntry | undefined {
    return this.byMachineName.get(name)
  }

  /** The service stops: every client is told. */
  closeAll(reason: string): void {
    for (const e of this.byMachineName.values()) e.close(reason)
    this.byMachineName.clear()
    this.byTaskId.clear()
  }
}
