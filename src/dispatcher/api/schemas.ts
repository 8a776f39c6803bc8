// Request schemas of the dispatcher API. Form fields arrive as strings; empty ones count as absent
// (Cuckoo's clients send "" for "default"); each field's `x-allowed` is what a 400 tells the client.
// The task fields are the analysis API's own (src/shared), since the dispatcher forwards them to
// a node that validates them the same way: a bad value is refused here, not lost on a node.
import { Type, type Static } from 'typebox'
import { allowed, Text } from '../../shared/api/schema-words'
import { BOOLEAN_PATTERN, CommonTaskFields } from '../../shared/api/requests'
import { MARKER_OPTION, MARKER_ROOM } from '../worker/marker'

const Flag = (description: string) =>
  allowed(Type.String({ pattern: BOOLEAN_PATTERN, description }), 'one of 1/0, true/false, yes/no, on/off (any case); empty means false')

export const NodeName = allowed(Type.String({ minLength: 1, maxLength: 255, pattern: '^[^/\\s]+$', description: 'node name', examples: ['node1'] }),
  'a name of 1 to 255 characters without spaces or /')
const NodeUrl = allowed(Type.String({ minLength: 1, maxLength: 2048, description: 'API address of the node', examples: ['http://192.168.56.2:8090/'] }),
  'an http or https URL such as http://10.0.0.2:8090')
const NodeIp = allowed(Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9.:\\-\\[\\]]+$', description: 'node address; the URL becomes http://<ip>:8090/' }),
  'an IP address or host name')
const NodeToken = allowed(Type.String({ writeOnly: true, minLength: 1, maxLength: 4096, pattern: '^[\\x21-\\x7e]+$', description: "the node API's Bearer token (cuckoo.conf api_token, or `aviary serve --api-token`); kept by the dispatcher, never shown" }),
  'the token as printable ASCII without spaces')
const Mode = allowed(Type.String({ maxLength: 32, pattern: '^[a-z]+$', description: 'node mode, normally "normal"' }), 'a mode such as normal')

export const NodeNameParams = Type.Object({ name: Type.String({ maxLength: 255 }) })
export const NodeListQuery = Type.Object({
  mode: Type.Optional(allowed(Type.String({ enum: ['workers'], description: 'workers: the enabled node names as plain text' }), 'workers'))
})

export const RegisterNodeBody = Type.Object({ name: NodeName, url: Type.Optional(NodeUrl), ip: Type.Optional(NodeIp), token: Type.Optional(NodeToken), mode: Type.Optional(Mode) })
export type RegisterNodeBody = Static<typeof RegisterNodeBody>

export const UpdateNodeBody = Type.Object({
  name: Type.Optional(NodeName),
  url: Type.Optional(NodeUrl),
  ip: Type.Optional(NodeIp),
  token: Type.Optional(NodeToken),
  enabled: Type.Optional(Flag('false disables the node, true enables it again')),
  mode: Type.Optional(Mode)
})
export type UpdateNodeBody = Static<typeof UpdateNodeBody>

/** A multipart file field: checked by the upload handler, documented as binary. */
const FileField = (description: string) => Type.Unsafe<unknown>({ 'x-file': true, description })

export const SubmitTaskBody = Type.Object({
  file: Type.Optional(FileField('the sample (or send `url`)')),
  url: Type.Optional(allowed(Type.String({ minLength: 1, maxLength: 8192, description: 'Aviary extension: a URL to analyze instead of a file' }),
    'an http or https URL (without a scheme, http:// is assumed)')),
  node: Type.Optional(allowed(Type.String({ maxLength: 255, description: 'assign straight to this enabled node' }), 'the name of an enabled node')),
  ...CommonTaskFields,
  // The node gets them with the dispatcher's mark appended (worker/marker.ts), within its own limit.
  options: Type.Optional(Text(`options for the analysis package, comma-separated key=value (${MARKER_OPTION} is the dispatcher's own)`,
    (CommonTaskFields.options as { maxLength?: number }).maxLength! - MARKER_ROOM))
})
export type SubmitTaskBody = Static<typeof SubmitTaskBody>

export const TaskIdParams = Type.Object({ id: Type.String({ maxLength: 32, description: 'task id (decimal digits)' }) })
export const ReportParams = Type.Object({
  id: Type.String({ maxLength: 32, description: 'task id (decimal digits)' }),
  format: Type.Optional(allowed(Type.String({ pattern: '^[A-Za-z0-9_-]{1,32}$', description: 'report format; json by default' }),
    'a report format name such as json or html'))
})

const Count = (description: string) =>
  allowed(Type.String({ pattern: '^[0-9]{1,15}$', description }), 'a whole number from 0')
export const TaskListQuery = Type.Object({
  offset: Type.Optional(Count('tasks to skip')),
  limit: Type.Optional(Count('maximum number of tasks')),
  finished: Type.Optional(Flag('true: finished tasks only; false: unfinished ones (Cuckoo sends 1 or 0)')),
  status: Type.Optional(allowed(Type.String({ enum: ['pending', 'assigned', 'processing', 'finished', 'deleted'], description: 'only tasks in this status' }),
    'one of pending, assigned, processing, finished, deleted')),
  owner: Type.Optional(allowed(Type.String({ maxLength: 255, description: 'only tasks of this owner' }), 'text of at most 255 characters'))
})
export type TaskListQuery = Static<typeof TaskListQuery>

export const BulkDeleteBody = Type.Object({
  task_ids: allowed(Type.String({ pattern: '^\\s*[0-9]{1,15}(?:\\s+[0-9]{1,15})*\\s*$', maxLength: 1048576, description: 'task ids separated by whitespace' }),
    'task ids (decimal digits) separated by spaces')
})

const TRUE = /^(?:1|true|yes|on)$/i
/** A validated form boolean (BOOLEAN_PATTERN) as a boolean. */
export const truthy = (v: string | undefined): boolean => v !== undefined && TRUE.test(v)

// Response shapes, for the OpenAPI document (the bodies are serialized as they are).
const Any = Type.Object({}, { additionalProperties: true })
export const Ok = Type.Object({ success: Type.Boolean() }, { additionalProperties: true })
export const ErrorBody = Type.Object({ success: Type.Optional(Type.Boolean()), message: Type.String() })
export const errors = { 400: ErrorBody, 404: ErrorBody }
export const AnyBody = Any
