// What the dispatcher's routes do, independent of the generation that asked: nodes are checked
// over HTTP before they are stored, tasks are stored with their sample, and deleting a task
// removes its files. Routes only validate input and shape the answer.
import { rm } from 'node:fs/promises'
import path from 'node:path'
import { AnalysisClient, ApiClientError } from '../../shared/api/client'
import { diskSpace } from '../../shared/disk-space'
import type { Machine } from '../../shared/api/schemas'
import { DuplicateNodeError, type DistStore, type DistTaskRow, type MachineInfo, type NewDistTask, type NodePatch, type NodeRow } from '../store/types'
import { DistError, badRequest, notFound } from './errors'
import { CleanupLedger } from '../worker/cleanup'

export interface DistServiceOptions {
  samplesDir: string
  reportsDir: string
  /** How long a node may take to answer when it is registered or refreshed. */
  nodeTimeoutMs?: number
}

export type RawMachine = Partial<Machine> & { name: string }

export class DispatcherService {
  constructor(readonly store: DistStore, readonly opts: DistServiceOptions) {}

  client(url: string, token: string | null): AnalysisClient {
    return new AnalysisClient(url, { token: token ?? undefined, timeoutMs: this.opts.nodeTimeoutMs ?? 30_000 })
  }

  /** Asks the node for its status (it must answer) and its machines (the client checks their shape). */
  async contact(url: string, token: string | null): Promise<{ status: unknown; machines: RawMachine[] }> {
    const c = this.client(url, token)
    const status = await c.status()
    const { machines } = await c.machines()
    return { status, machines }
  }

  async registerNode(name: string, url: string, mode: string | undefined, token: string | null = null): Promise<{ node: NodeRow; machines: RawMachine[] }> {
    const normalized = nodeUrl(url)
    if (await this.store.getNode(name)) throw new DistError(409, 'There is already a node with this name')
    let found
    try {
      found = await this.contact(normalized, token)
    } catch (err) {
      if (err instanceof ApiClientError && (err.status === 401 || err.status === 403)) {
        throw badRequest('token', token === null
          ? `the node at ${normalized} asks for an API token (${err.status}): send its token in \`token\``
          : `the node at ${normalized} refused this token (${err.status})`)
      }
      throw badRequest('url', `the node at ${normalized} does not answer as a Cuckoo-compatible API (GET /cuckoo/status, /machines/list): ${(err as Error).message}`)
    }
    let node: NodeRow
    try {
      node = await this.store.addNode({ name, url: normalized, token, machines: found.machines.map(machineInfo), ...(mode ? { mode } : {}) })
    } catch (err) {
      if (err instanceof DuplicateNodeError) throw new DistError(409, 'There is already a node with this name')
      throw err
    }
    node = await this.store.recordContact(node.id, true, found.status)
    return { node, machines: found.machines }
  }

  async refreshNode(name: string): Promise<RawMachine[]> {
    const node = await this.nodeOr404(name)
    let found
    try {
      found = await this.contact(node.url, node.token)
    } catch (err) {
      await this.store.recordContact(node.id, false)
      // The node, not the request, is at fault: a gateway error.
      throw new DistError(502, `Error connecting to Cuckoo node: ${(err as Error).message}`)
    }
    await this.store.setMachines(node.id, found.machines.map(machineInfo))
    await this.store.recordContact(node.id, true, found.status)
    return found.machines
  }

  async nodeOr404(name: string): Promise<NodeRow> {
    const node = await this.store.getNode(name)
    if (!node) throw notFound('No such node')
    return node
  }

  async updateNode(name: string, patch: NodePatch): Promise<NodeRow> {
    if (patch.url !== undefined) patch.url = nodeUrl(patch.url)
    try {
      const node = await this.store.updateNode(name, patch)
      if (!node) throw notFound('No such node')
      return node
    } catch (err) {
      if (err instanceof DuplicateNodeError) throw new DistError(409, 'There is already a node with this name')
      throw err
    }
  }

  async createTask(task: NewDistTask, nodeName: string | undefined): Promise<number> {
    if (nodeName !== undefined) {
      const node = await this.store.getNode(nodeName)
      if (!node || !node.enabled) throw badRequest('node', `no enabled node is named '${nodeName}'`)
      task = { ...task, node_id: node.id }
    }
    return this.store.createTask(task)
  }

  async taskOr404(id: number): Promise<DistTaskRow> {
    const task = await this.store.getTask(id)
    if (!task) throw notFound('Task not found')
    return task
  }

  /** Removes the task and its sample, reports and pcap. 'already' when it was deleted before. */
  async deleteTask(id: number): Promise<'deleted' | 'already' | null> {
    const before = await this.store.getTask(id)
    if (!before) return null
    if (before.status === 'deleted') return 'already'
    const row = await this.store.deleteTask(id)
    if (!row) return null
    await this.removeFiles(row)
    // Submitted but not fetched: the node still holds a copy nobody will fetch now. The worker
    // deletes it from the cleanup ledger once the node lets it (not while it runs there).
    if (row.status === 'processing' && row.node_id !== null && row.node_task_id) {
      await new CleanupLedger(this.opts.reportsDir).add(row.node_id, row.node_task_id, row.id)
    }
    return 'deleted'
  }

  private async removeFiles(task: DistTaskRow): Promise<void> {
    // Only paths this dispatcher made: the sample inside the samples directory, reports/<id>.
    if (task.path && isInside(this.opts.samplesDir, task.path)) await rm(task.path, { force: true })
    await rm(this.taskReportsDir(task.id), { recursive: true, force: true })
  }

  taskReportsDir(id: number): string {
    return path.join(this.opts.reportsDir, String(id))
  }

  async diskspace(): Promise<Record<'reports' | 'samples', { free: number; total: number; used: number } | null>> {
    return { reports: await diskSpace(this.opts.reportsDir), samples: await diskSpace(this.opts.samplesDir) }
  }
}

/** The node's API base: http(s) only, no query; a missing scheme means http. */
export function nodeUrl(raw: string): string {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`
  let u: URL
  try {
    u = new URL(text)
  } catch {
    throw badRequest('url', 'an http or https URL such as http://10.0.0.2:8090')
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw badRequest('url', 'an http or https URL such as http://10.0.0.2:8090')
  if (u.search || u.hash || u.username || u.password) throw badRequest('url', 'the API base URL, without query, fragment or credentials')
  return u.toString().replace(/\/+$/, '')
}

export function machineInfo(m: RawMachine): MachineInfo {
  const tags = Array.isArray(m.tags) ? m.tags : typeof m.tags === 'string' ? String(m.tags).split(',') : []
  return { name: String(m.name), platform: String(m.platform ?? ''), tags: tags.map((t) => String(t).trim()).filter(Boolean) }
}

function isInside(dir: string, file: string): boolean {
  const rel = path.relative(path.resolve(dir), path.resolve(file))
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)
}
