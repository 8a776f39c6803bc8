// Cuckoo's clients send empty fields to mean "default" (e.g. `timeout=`): before validation,
// empty strings in the body and the query count as absent. The app installs it once, for every
// route (app.ts). It is added to each route's own preValidation hooks, which run after the
// plugin's: a multipart body is only assembled by the upload plugin's hook (uploads.ts).
import type { FastifyInstance, preValidationHookHandler } from 'fastify'

const strip: preValidationHookHandler = (request, _reply, done) => {
  for (const bag of [request.body, request.query]) {
    if (bag && typeof bag === 'object' && !Buffer.isBuffer(bag)) {
      for (const [k, v] of Object.entries(bag)) if (v === '') delete (bag as Record<string, unknown>)[k]
    }
  }
  done()
}

export function stripEmptyFields(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const hooks = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation]
    if (!hooks.includes(strip)) route.preValidation = [...hooks, strip]
  })
}
