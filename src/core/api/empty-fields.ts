// Cuckoo's clients send empty fields to mean "default" (e.g. `timeout=`): before validation,
// empty strings in the body and the query count as absent.
import type { FastifyInstance } from 'fastify'

export function stripEmptyFields(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    for (const bag of [request.body, request.query]) {
      if (bag && typeof bag === 'object' && !Buffer.isBuffer(bag)) {
        for (const [k, v] of Object.entries(bag)) if (v === '') delete (bag as Record<string, unknown>)[k]
      }
    }
    done()
  })
}
