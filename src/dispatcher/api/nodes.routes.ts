// Nodes: register (the node must answer; its machines are read), list, view, update, refresh,
// disable. Shapes as docs/dispatcher.md gives them, after Cuckoo 2's dispatchers (utils/dist.py, the distributed/ app).
import type { FastifyInstance } from 'fastify'
import type { NodeRow } from '../store/types'
import type { DispatcherService } from './dispatcher.service'
import { addRoute, answer } from './generations'
import { badRequest } from './errors'
import { AnyBody, NodeListQuery, NodeNameParams, Ok, RegisterNodeBody, UpdateNodeBody, errors, truthy } from './schemas'

type Params = { name: string }

export function nodesRoutes(app: FastifyInstance, svc: DispatcherService): void {
  const both = ['older', 'newer'] as const
  const tags = ['nodes']

  addRoute(app, {
    method: 'GET', url: '/node', generations: [...both],
    schema: { tags, summary: 'List the enabled nodes (a disabled one is no longer listed; GET /node/<name> still shows it); ?mode=workers: their names as text', querystring: NodeListQuery, response: { 200: AnyBody, ...errors } },
    handler: async (request, reply, newer) => {
      // The spec: "a disabled node is no longer listed or given tasks; its history is kept".
      const nodes = await svc.store.listNodes({ enabledOnly: true })
      if ((request.query as { mode?: string }).mode === 'workers') return workers(reply, nodes)
      return answer(newer, { nodes: Object.fromEntries(nodes.map((n) => [n.name, nodeView(n)])) })
    }
  })

  addRoute(app, {
    method: 'POST', url: '/node', generations: [...both],
    schema: {
      tags, summary: 'Register a node: it must answer GET /cuckoo/status (with its `token` if it asks for one); its GET /machines/list is read',
      consumes: ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'],
      body: RegisterNodeBody, response: { 200: AnyBody, 400: errors[400], 409: errors[400] }
    },
    handler: async (request, _reply, newer) => {
      const body = request.body as RegisterNodeBody
      // Cuckoo 2: `ip` wins over `url` and means the default API port.
      const url = body.ip !== undefined ? ipUrl(body.ip) : body.url
      if (url === undefined) throw badRequest('url', 'required (or `ip`); an http or https URL such as http://10.0.0.2:8090')
      const { node, machines } = await svc.registerNode(body.name, url, body.mode, body.token ?? null)
      return answer(newer, { machines }, { name: node.name, machines: node.machines })
    }
  })

  addRoute(app, {
    method: 'GET', url: '/node/:name', generations: [...both],
    schema: { tags, summary: 'One node (newer: `nodes` holds it as a one-element array)', params: NodeNameParams, querystring: NodeListQuery, response: { 200: AnyBody, ...errors } },
    handler: async (request, reply, newer) => {
      const { name } = request.params as Params
      if ((request.query as { mode?: string }).mode === 'workers') return workers(reply, await svc.store.listNodes({ enabledOnly: true }))
      const node = await svc.nodeOr404(name)
      return answer(newer, { nodes: [nodeView(node)] }, nodeView(node))
    }
  })

  addRoute(app, {
    method: 'PUT', url: '/node/:name', generations: [...both],
    schema: {
      tags, summary: 'Update a node: name, url (or ip), token, enabled',
      consumes: ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'],
      params: NodeNameParams, body: UpdateNodeBody, response: { 200: Ok, ...errors, 409: errors[400] }
    },
    handler: async (request, _reply, newer) => {
      const { name } = request.params as Params
      const body = (request.body ?? {}) as UpdateNodeBody
      const url = body.ip !== undefined ? ipUrl(body.ip) : body.url
      await svc.updateNode(name, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(url !== undefined ? { url } : {}),
        ...(body.token !== undefined ? { token: body.token } : {}),
        ...(body.enabled !== undefined ? { enabled: truthy(body.enabled) } : {}),
        ...(body.mode !== undefined ? { mode: body.mode } : {})
      })
      return answer(newer, {}, null)
    }
  })

  addRoute(app, {
    method: 'POST', url: '/node/:name/refresh', generations: ['newer'],
    schema: { tags, summary: "Read the node's machines again", params: NodeNameParams, response: { 200: AnyBody, ...errors, 502: errors[400] } },
    handler: async (request, _reply, newer) => answer(newer, { machines: await svc.refreshNode((request.params as Params).name) })
  })

  addRoute(app, {
    method: 'DELETE', url: '/node/:name', generations: [...both],
    schema: { tags, summary: 'Disable a node: no longer listed nor given tasks (its history is kept; PUT enabled=1 enables it again)', params: NodeNameParams, response: { 200: Ok, ...errors } },
    handler: async (request, _reply, newer) => {
      await svc.updateNode((request.params as Params).name, { enabled: false })
      return answer(newer, {}, null)
    }
  })
}

/** Cuckoo 2's `ip` field: the node's API on its default port. */
const ipUrl = (ip: string): string => `http://${ip.includes(':') && !ip.startsWith('[') ? `[${ip}]` : ip}:8090/`

function nodeView(n: NodeRow) {
  return {
    // Tasks name their node by this id (node_id): a client maps it to the name (an Aviary addition).
    id: n.id,
    name: n.name,
    url: n.url,
    mode: n.mode,
    enabled: n.enabled,
    machines: n.machines,
    // Whether the dispatcher sends a token, never the token.
    token: n.token !== null,
    last_seen: n.last_seen,
    failures: n.failures
  }
}

/** Cuckoo 2's `?mode=workers`: the (enabled) node names, sorted, space-separated, as plain text. */
function workers(reply: import('fastify').FastifyReply, nodes: NodeRow[]) {
  const names = nodes.map((n) => n.name).sort()
  return reply.type('text/plain; charset=utf-8').send(names.join(' '))
}
