// Both dispatcher generations from one handler: the older routes have no prefix and answer bare
// objects (Cuckoo 1.2's utils/dist.py), the newer ones are served under /api and /api/v1 with the
// `success` envelope (Cuckoo 2's cuckoo/distributed). A handler gets `newer` and shapes its answer.
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, HTTPMethods } from 'fastify'

export type Generation = 'older' | 'newer'

const PREFIXES: Record<Generation, string[]> = { older: [''], newer: ['/api', '/api/v1'] }

export interface DistRoute {
  method: HTTPMethods
  /** Path without prefix, e.g. /task/:id */
  url: string
  generations: Generation[]
  schema: FastifySchema & { summary: string }
  handler: (request: FastifyRequest, reply: FastifyReply, newer: boolean) => Promise<unknown>
}

export function addRoute(app: FastifyInstance, r: DistRoute): void {
  for (const gen of r.generations) {
    for (const prefix of PREFIXES[gen]) {
      app.route({
        method: r.method,
        url: `${prefix}${r.url}`,
        schema: { ...r.schema, tags: [gen === 'newer' ? 'newer (/api, /api/v1)' : 'older (no prefix)', ...(r.schema.tags ?? [])] },
        handler: (request, reply) => r.handler(request, reply, gen === 'newer')
      })
    }
  }
}

/** The newer envelope around `data`; the older generation gets `older` (JSON null for PUT/DELETE). */
export function answer(newer: boolean, data: Record<string, unknown>, older: unknown = data): unknown {
  return newer ? { success: true, ...data } : older
}
