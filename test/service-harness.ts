// Starts a real service (real SQLite file, real HTTP socket on a free port, the bundled hashing
// worker) in a fresh data directory, and gives tests a few request helpers.
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { AviaryService, type ServiceOptions } from '../src/core/service'

export const HASH_WORKER = path.resolve('out/cli/hash.worker.mjs')

export interface Harness {
  url: string
  dataDir: string
  service: AviaryService
  get(p: string, headers?: Record<string, string>): Promise<Response>
  json<T = Record<string, unknown>>(p: string, headers?: Record<string, string>): Promise<{ status: number; body: T; res: Response }>
  post(p: string, body: FormData | URLSearchParams | string, headers?: Record<string, string>): Promise<{ status: number; body: Record<string, unknown>; res: Response }>
  analysisDir(id: number): string
  /** Runs a statement on its own connection, as another process would; answers what it changed. */
  sql(statement: string, ...args: unknown[]): { changes: number }
  stop(): Promise<void>
}

/**
 * `dataDir`: a data folder of the test's own, kept when the harness stops (a second service can
 * open it, as after a restart or an upgrade); otherwise a fresh one, removed at stop.
 */
export async function startHarness(opts: Partial<ServiceOptions> & { machines?: unknown } = {}): Promise<Harness> {
  const ownDir = opts.dataDir === undefined
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(tmpdir(), 'aviary-test-'))
  if (opts.machines !== undefined) writeFileSync(path.join(dataDir, 'machines.json'), JSON.stringify(opts.machines))
  const service = new AviaryService({ port: 0, logLevel: 'warn', hashWorker: HASH_WORKER, engine: false, ...opts, dataDir })
  const { url } = await service.start()
  const get = (p: string, headers: Record<string, string> = {}) => fetch(url + p, { headers })
  let db: Database.Database | undefined
  return {
    url,
    dataDir,
    service,
    get,
    async json<T>(p: string, headers: Record<string, string> = {}) {
      const res = await get(p, headers)
      const text = await res.text()
      return { status: res.status, body: JSON.parse(text) as T, res }
    },
    async post(p, body, headers = {}) {
      const res = await fetch(url + p, { method: 'POST', body, headers })
      const text = await res.text()
      return { status: res.status, body: JSON.parse(text) as Record<string, unknown>, res }
    },
    analysisDir(id: number) {
      const dir = path.join(dataDir, 'storage', 'analyses', String(id))
      mkdirSync(dir, { recursive: true })
      return dir
    },
    sql(statement: string, ...args: unknown[]) {
      db ??= new Database(path.join(dataDir, 'aviary.db'))
      return { changes: db.prepare(statement).run(...args).changes }
    },
    async stop() {
      db?.close()
      await service.stop()
      if (ownDir) rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

export function form(fields: Record<string, string>, files: { field?: string; name: string; data: Uint8Array | string }[] = []): FormData {
  const f = new FormData()
  for (const [k, v] of Object.entries(fields)) f.append(k, v)
  for (const file of files) f.append(file.field ?? 'file', new Blob([typeof file.data === 'string' ? file.data : Buffer.from(file.data)]), file.name)
  return f
}

/**
 * Task `id` as a finished run leaves it: `files` written into its analysis folder, the task marked
 * completed by another connection (as a run in another process would), and the engine woken to
 * process it. `set` adds columns to the UPDATE ("route = 'internet'"); `pendingOnly` marks it only
 * from pending and throws when it was not (the scheduler took it first). Returns the folder.
 */
export function finishRun(h: Harness, id: number, files: Record<string, string | Buffer> = {}, o: { set?: string; pendingOnly?: boolean } = {}): string {
  const dir = h.analysisDir(id)
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
    writeFileSync(path.join(dir, rel), content)
  }
  const { changes } = h.sql(`UPDATE tasks SET status = 'completed',${o.set === undefined ? '' : ` ${o.set},`} started_on = datetime('now', 'localtime'), ` +
    `completed_on = datetime('now', 'localtime') WHERE id = ?${o.pendingOnly === true ? " AND status = 'pending'" : ''}`, id)
  if (changes !== 1) throw new Error(`task ${id} was not ${o.pendingOnly === true ? 'pending' : 'there'}`)
  h.service.engine!.processPending()
  return dir
}

