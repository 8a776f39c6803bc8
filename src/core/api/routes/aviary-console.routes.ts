// The live console (docs/api.md, "The live console"): a websocket carrying RFB between the page
// and the machine's VNC server, through the service, keyed by task (a running analysis) or by
// machine (prepare mode, or whatever task holds it); the state the Live tab shows; Extend and
// Finish now; the recordings of a task's sessions. The security hooks (security.ts) run on the
// websocket's upgrade request as on any request: the token or the session cookie, and no foreign
// Origin. Beyond them, a console is reached from this host only unless the service was started
// with --console-remote: it is a keyboard on a machine running malware.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { WebSocket } from 'ws'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { TaskIdParams } from '../../../shared/api/requests'
import { CONSOLE_PROTOCOLS, ConsoleState, ExtendBody, MachineConsoleState, RecordingList, RunEnd } from '../../../shared/api/console'
import { ApiError } from '../../errors'
import { ErrorCodes } from '../../../shared/errors'
import type { ConsoleEntry } from '../../console/console-hub'
import { sendResult } from '../send-file'

const tags = ['console']
const errors = { 400: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody }
const MachineParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 255, description: 'the machine\'s name in machines.json' }) })
const RecordingParams = Type.Object({ id: TaskIdParams.properties.id, name: Type.String({ maxLength: 64, description: 'NNNN.vncrec' }) })
const WsQuery = Type.Object({ view: Type.Optional(Type.String({ description: '1: join view-only even when no one has control' })) })

/** The console a websocket's upgrade request was accepted for, until ws hands the socket over. */
const accepted = new WeakMap<IncomingMessage, { entry: ConsoleEntry; role: 'interactive' | 'view' | null; wantView: boolean }>()

/** ws asks which subprotocol to answer: the role this client gets, so the page knows it before the first byte. */
export function consoleProtocol(protocols: Set<string>, req: IncomingMessage): string | false {
  const a = accepted.get(req)
  if (!a) return false
  a.role = a.entry.claim(a.wantView)
  const p = CONSOLE_PROTOCOLS[a.role]
  return protocols.has(p) ? p : false
}

function isLoopback(addr: string | undefined): boolean {
  return addr !== undefined && (addr === '::1' || addr.startsWith('127.') || addr.startsWith('::ffff:127.'))
}

export const aviaryConsoleRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const consoles = ctx.consoles
  const fromHere = (request: FastifyRequest): void => {
    if (!ctx.consoleRemote && !isLoopback(request.socket.remoteAddress)) {
      throw new ApiError(403, 'the live console is served to this host only (start the service with --console-remote to allow other hosts)', ErrorCodes.FORBIDDEN)
    }
  }
  const serve = (socket: WebSocket, request: FastifyRequest): void => {
    const a = accepted.get(request.raw)
    accepted.delete(request.raw)
    if (!a) return void socket.close(4409, 'the console closed')
    void a.entry.attach(socket, a.role ?? a.entry.claim(a.wantView))
  }

  app.get('/aviary/tasks/:id/console', {
    schema: { tags, summary: 'The live console of a running task: whether it is open (and why not), the countdown, the clients', params: TaskIdParams, response: { 200: ConsoleState, ...errors } }
  }, async (request) => consoles.state(request.params.id))

  app.get('/aviary/tasks/:id/console/ws', {
    websocket: true,
    // A websocket upgrade, which OpenAPI cannot describe: hidden there, written in docs/api.md.
    schema: { hide: true, tags, summary: 'The console as a websocket carrying RFB (noVNC speaks it); 409 unless the task runs on a machine with a console', params: TaskIdParams, querystring: WsQuery },
    // preHandler: after validation, so the id is a number.
    preHandler: async (request) => {
      fromHere(request)
      const { id } = request.params as { id: number }
      accepted.set(request.raw, { entry: consoles.acceptTask(id), role: null, wantView: (request.query as { view?: string }).view === '1' })
    }
  }, serve)

  app.get('/aviary/machines/:name/console', {
    schema: { tags, summary: 'Whether a machine\'s console is open (a running task\'s, or prepare mode\'s) and why not', params: MachineParams, response: { 200: MachineConsoleState, ...errors } }
  }, async (request) => consoles.machineState(request.params.name))

  app.get('/aviary/machines/:name/console/ws', {
    websocket: true,
    // A websocket upgrade: hidden from OpenAPI, written in docs/api.md.
    schema: { hide: true, tags, summary: 'A machine\'s console as a websocket carrying RFB; 409 unless the machine has one open', params: MachineParams, querystring: WsQuery },
    // preHandler: after validation, so the id is a number.
    preHandler: async (request) => {
      fromHere(request)
      const { name } = request.params as { name: string }
      accepted.set(request.raw, { entry: consoles.acceptMachine(name), role: null, wantView: (request.query as { view?: string }).view === '1' })
    }
  }, serve)

  app.post('/aviary/tasks/:id/extend', {
    schema: { tags, summary: 'Moves the end of a running analysis later (the Live tab\'s Extend)', params: TaskIdParams, body: ExtendBody, response: { 200: RunEnd, ...errors } }
  }, async (request) => consoles.extend(request.params.id, request.body.seconds))

  app.post('/aviary/tasks/:id/finish', {
    schema: { tags, summary: 'Ends a running analysis now (the Live tab\'s Finish now): the analyzer is told, the results kept', params: TaskIdParams, response: { 200: RunEnd, ...errors } }
  }, async (request) => consoles.finish(request.params.id))

  app.get('/aviary/tasks/:id/console/recordings', {
    schema: { tags, summary: 'The recordings of a task\'s console sessions', params: TaskIdParams, response: { 200: RecordingList, ...errors } }
  }, async (request) => consoles.recordings(request.params.id))

  app.get('/aviary/tasks/:id/console/recordings/:name', {
    schema: { tags, summary: 'One recording (application/octet-stream; the format: src/shared/console-recording.ts)', params: RecordingParams, response: { 200: Type.Unsafe({ type: 'string', format: 'binary' }), ...errors } }
  }, async (request, reply) => sendResult(request, reply, {
    kind: 'file', path: consoles.recordingPath(request.params.id, request.params.name), contentType: 'application/octet-stream',
    downloadName: `${request.params.id}-${request.params.name}`
  }))
}
