// Reports and pcaps fetched from the nodes, served from `<reports-dir>/<id>/report.<fmt>` and
// `dump.pcap`; and the dispatcher's status. An unfinished task's report is 420 (newer) or 404
// (older), as Cuckoo answered.
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { DistTaskRow } from '../store/types'
import type { DispatcherService } from './dispatcher.service'
import { addRoute, answer } from './generations'
import { DistError, pathId } from './errors'
import { AnyBody, ReportParams, TaskIdParams, errors } from './schemas'

const TYPES: Record<string, string> = {
  json: 'application/json',
  html: 'text/html; charset=utf-8',
  maec: 'application/xml',
  metadata: 'application/xml',
  pcap: 'application/vnd.tcpdump.pcap'
}
// Reports describe malware: whatever HTML they hold runs in an opaque, script-less sandbox.
const CSP = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'none'"

export function reportsRoutes(app: FastifyInstance, svc: DispatcherService): void {
  const both = ['older', 'newer'] as const
  const finishedTask = async (id: number, newer: boolean, what: 'report' | 'files'): Promise<DistTaskRow> => {
    const task = await svc.taskOr404(id)
    if (task.status === 'deleted') throw new DistError(404, what === 'report' ? 'Task report has been deleted' : 'Task files has been deleted')
    if (task.status !== 'finished') throw new DistError(newer ? 420 : 404, 'Task not finished yet')
    return task
  }

  for (const url of ['/report/:id', '/report/:id/:format']) {
    addRoute(app, {
      method: 'GET', url, generations: [...both],
      schema: {
        tags: ['reports'], summary: 'A fetched report (json by default); 420 (newer) or 404 (older) while the task is unfinished',
        params: ReportParams, produces: ['application/json', 'text/html', 'application/octet-stream'],
        response: { 200: AnyBody, ...errors, 420: errors[400] }
      },
      handler: async (request, reply, newer) => {
        const params = request.params as { id: string; format?: string }
        const task = await finishedTask(pathId(params.id, request), newer, 'report')
        const format = params.format ?? 'json'
        return sendFile(reply, path.join(svc.taskReportsDir(task.id), `report.${format}`), TYPES[format], 'Report format not found')
      }
    })
  }

  addRoute(app, {
    method: 'GET', url: '/pcap/:id', generations: ['newer'],
    schema: { tags: ['reports'], summary: "The task's packet capture, when fetched", params: TaskIdParams, produces: ['application/vnd.tcpdump.pcap'], response: { ...errors, 420: errors[400] } },
    handler: async (request, reply, newer) => {
      const task = await finishedTask(pathId((request.params as { id: string }).id, request), newer, 'files')
      return sendFile(reply, path.join(svc.taskReportsDir(task.id), 'dump.pcap'), TYPES.pcap, 'Pcap file not found')
    }
  })

  addRoute(app, {
    method: 'GET', url: '/status', generations: [...both],
    schema: { tags: ['status'], summary: 'Task counts, nodes with their last status, disk space', response: { 200: AnyBody } },
    handler: async (_request, _reply, newer) => {
      const [counts, nodes] = await Promise.all([svc.store.countByStatus(), svc.store.listNodes({ enabledOnly: true })])
      if (!newer) {
        // Cuckoo 1.2: each node's /cuckoo/status `tasks`, and pending / processing / processed.
        const tasksOf = (s: unknown) => (s && typeof s === 'object' ? (s as { tasks?: unknown }).tasks ?? null : null)
        return {
          nodes: Object.fromEntries(nodes.map((n) => [n.name, tasksOf(n.status)])),
          tasks: { pending: counts.pending + counts.assigned, processing: counts.processing, processed: counts.finished }
        }
      }
      return answer(true, {
        dist: { diskspace: await svc.diskspace() },
        nodes: Object.fromEntries(nodes.map((n) => [n.name, n.status && typeof n.status === 'object' ? { ...n.status, timestamp: n.last_seen } : null])),
        tasks: { all: counts, ...counts },
        timestamp: Math.floor(Date.now() / 1000)
      })
    }
  })
}

async function sendFile(reply: FastifyReply, file: string, type: string | undefined, missing: string): Promise<FastifyReply> {
  let size: number
  try {
    const s = await stat(file)
    if (!s.isFile()) throw new Error('not a file')
    size = s.size
  } catch {
    throw new DistError(404, missing)
  }
  return reply
    .type(type ?? 'application/octet-stream')
    .header('Content-Length', size)
    .header('Content-Security-Policy', CSP)
    .send(createReadStream(file))
}
