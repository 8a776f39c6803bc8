// How both APIs (analysis and dispatcher) turn their route schemas into the OpenAPI document:
// multipart file fields (marked `x-file`) become binary strings, and a params schema shared by the
// short and long form of a route (/report/:id and /report/:id/:format) keeps, per path, exactly the
// parameters in it, all required, as OpenAPI wants.
type Json = Record<string, unknown>

function showFiles(schema: unknown): unknown {
  if (!schema || typeof schema !== 'object') return schema
  const s = schema as Json
  if (s['x-file']) return { type: 'string', format: 'binary', description: s.description }
  const props = s.properties as Json | undefined
  if (!props) return schema
  return { ...s, properties: Object.fromEntries(Object.entries(props).map(([k, v]) => [k, showFiles(v)])) }
}

function onlyParamsOf(url: string, schema: unknown): unknown {
  const s = schema as Json
  const props = s.properties as Json | undefined
  if (!props) return schema
  const names = new Set([...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]))
  const kept = Object.fromEntries(Object.entries(props).filter(([k]) => names.has(k)))
  return { ...s, properties: kept, required: Object.keys(kept) }
}

/** @fastify/swagger's `transform` option. */
export function openApiTransform<S extends { body?: unknown; params?: unknown } | undefined>({ schema, url }: { schema: S; url: string }): { schema: S; url: string } {
  if (!schema) return { schema, url }
  const out: Json = { ...schema }
  if (schema.body) out.body = showFiles(schema.body)
  if (schema.params) out.params = onlyParamsOf(url, schema.params)
  return { schema: out as S, url }
}
