// Request schemas of the analysis API. Form fields arrive as strings (multipart or urlencoded);
// empty fields count as absent (Cuckoo's clients send empty strings for "default"), numbers are
// coerced, and each field's `x-allowed` is the explanation a client gets with a 400.
import { Type, type Static } from 'typebox'
import { allowed, Flag, Text } from './schema-words'
import { TaskFormFields } from './task-fields'

export { BOOLEAN_PATTERN } from './schema-words'

/** Marks a multipart file field: validated by the upload handler, documented as binary. */
export const FileField = (description: string) => Type.Unsafe<unknown>({ 'x-file': true, description })

/** The task's submission fields (task-fields.ts), common to every create route. */
export const CommonTaskFields = TaskFormFields

export const CreateFileBody = Type.Object({
  file: FileField('the sample'),
  ...CommonTaskFields,
  unique: Type.Optional(Flag('refuse the sample (400) when it has been submitted before'))
})
export type CreateFileBody = Static<typeof CreateFileBody>

export const CreateUrlBody = Type.Object({
  url: allowed(Type.String({ minLength: 1, maxLength: 8192, description: 'the URL to analyze', examples: ['http://example.com/'] }),
    'an http or https URL (a URL without a scheme gets http://)'),
  ...CommonTaskFields
})
export type CreateUrlBody = Static<typeof CreateUrlBody>

export const SubmitBody = Type.Object({
  file: Type.Optional(FileField('one sample (as in create/file)')),
  files: Type.Optional(FileField('several samples; repeat the field')),
  strings: Type.Optional(allowed(Type.String({ maxLength: 1048576, description: 'URLs or hashes of known samples, one per line', examples: ['http://example.com/'] }),
    'URLs or md5/sha1/sha256/sha512 hashes, one per line')),
  ...CommonTaskFields
})
export type SubmitBody = Static<typeof SubmitBody>

// In a path, decimal digits only (Flask's int converter): error-handler.ts answers anything else 404.
const Id = (description: string) =>
  allowed(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description, examples: [1] }), 'a whole number from 1')

export const TaskIdParams = Type.Object({ id: Id('task id') })
export const ListParams = Type.Object({
  limit: Type.Optional(allowed(Type.Integer({ minimum: 0, maximum: 1000000, description: 'maximum number of tasks' }), 'a whole number from 0')),
  offset: Type.Optional(allowed(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'number of tasks to skip' }), 'a whole number from 0'))
})
export const ListQuery = Type.Object({
  completed_after: Type.Optional(allowed(Type.Integer({ minimum: 0, maximum: 253402300799, description: 'unix time; only tasks completed later' }), 'a unix time in whole seconds')),
  status: Type.Optional(allowed(Type.String({ pattern: '^[a-z_]+$', description: 'only tasks in this status', examples: ['reported'] }), 'a task status such as pending or reported')),
  owner: Type.Optional(Text('only tasks of this owner', 255))
})
export const RescheduleParams = Type.Object({
  id: Id('task id'),
  priority: Type.Optional(allowed(Type.Integer({ minimum: 0, maximum: 3, description: 'new priority; 0 keeps the old one' }), 'a whole number from 0 (keep) to 3'))
})
export const ReportParams = Type.Object({
  id: Id('task id'),
  format: Type.Optional(allowed(Type.String({ maxLength: 32, description: 'json, html, maec, metadata, all, dropped or package_files' }),
    'one of json, html, maec, metadata, all, dropped, package_files'))
})
export const ArchiveQuery = Type.Object({
  tar: Type.Optional(allowed(Type.String({ enum: ['bz2', 'gz', 'tar'], description: 'compression of archive formats' }), 'one of bz2, gz, tar')),
  elements: Type.Optional(allowed(Type.String({ maxLength: 128, description: 'a top-level key of report.json' }), 'a top-level key of report.json'))
})
export const ScreenshotParams = Type.Object({
  id: Id('task id'),
  screenshot: Type.Optional(allowed(Type.String({ pattern: '^[0-9]{1,6}(?:_small)?$', description: 'screenshot number such as 0001', examples: ['0001'] }),
    'a screenshot number such as 0001 (or 0001_small for its thumbnail)'))
})
export const MemoryParams = Type.Object({
  id: Id('task id'),
  pid: allowed(Type.String({ pattern: '^[A-Za-z0-9_.x-]{1,128}$', description: 'a name from /memory/list, e.g. 1234-1, or a process number (its last dump)', examples: ['1234-1', '1234'] }),
    'a dump name from /memory/list/{id}, such as 1234-1, or a process number')
})
export const PcapParams = Type.Object({ task: Id('task id') })
export const SampleIdParams = Type.Object({ sample_id: Id('sample id') })
export const Md5Params = Type.Object({ md5: allowed(Type.String({ pattern: '^[0-9a-fA-F]{32}$', examples: ['d41d8cd98f00b204e9800998ecf8427e'] }), '32 hex digits') })
export const Sha256Params = Type.Object({ sha256: allowed(Type.String({ pattern: '^[0-9a-fA-F]{64}$', examples: ['e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'] }), '64 hex digits') })
export const FileIdParams = Type.Object({ id: allowed(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), 'a whole number from 1') })
export const MachineNameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }) })

export const CallsParams = Type.Object({
  id: Id('task id'),
  pid: allowed(Type.Integer({ minimum: 0, maximum: 4294967295, description: 'a pid that GET /aviary/tasks/{id}/calls lists', examples: [1234] }),
    'a process id that /aviary/tasks/{id}/calls lists')
})
const NAMES = '^[A-Za-z0-9_.:@?$-]{1,128}(?:,[A-Za-z0-9_.:@?$-]{1,128}){0,63}$'
export const CallsQuery = Type.Object({
  offset: Type.Optional(allowed(Type.Integer({ minimum: 0, maximum: 4294967295, description: 'calls (matching the filter) to skip' }), 'a whole number from 0')),
  limit: Type.Optional(allowed(Type.Integer({ minimum: 1, maximum: 1000, description: 'calls to return (default 200)' }), 'a whole number from 1 to 1000')),
  category: Type.Optional(allowed(Type.String({ maxLength: 2048, pattern: NAMES, description: 'only calls of these categories', examples: ['file,network'] }),
    'category names separated by commas, such as file,network')),
  api: Type.Optional(allowed(Type.String({ maxLength: 8192, pattern: NAMES, description: 'only calls of these APIs', examples: ['openat,connect'] }),
    'API names separated by commas, such as openat,connect')),
  q: Type.Optional(allowed(Type.String({ maxLength: 200, description: 'text looked for (any case) in the API, the argument values and the return value' }),
    'text of at most 200 characters'))
})
export type CallsQuery = Static<typeof CallsQuery>
