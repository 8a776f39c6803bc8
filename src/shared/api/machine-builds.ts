// Machines made by Aviary (/aviary/machines/builds, /aviary/machines/disk, leftovers, delete,
// prepare): the shapes Fastify validates with, /openapi.json shows, and the UI gets its types from.
// docs/api.md, "Making and keeping machines".
import { Type, type Static } from 'typebox'
import { allowed } from './schema-words'

const Bytes = Type.Integer({ minimum: 0, description: 'bytes' })
const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

/** POST /aviary/machines/builds: what `aviary machines create linux` takes as flags. */
export const LinuxBuildBody = Type.Object({
  name: Type.Optional(allowed(Type.String({ maxLength: 64, description: 'the machine name (default linux); with count > 1, <name>-1 … <name>-<count>' }),
    "a machine name: letters, digits, '_', '.', '-', starting with a letter or digit, at most 48")),
  count: Type.Optional(allowed(Type.Integer({ description: 'how many machines (default 1)' }), 'a whole number from 1 to 32')),
  memory: Type.Optional(allowed(Type.Integer({ description: 'memory of each machine, MiB (default 1024)' }), 'a whole number of MiB from 256 to 65536')),
  vcpus: Type.Optional(allowed(Type.Integer({ description: 'processors of each (default 1 under TCG, 2 with KVM)' }), 'a whole number from 1 to 32')),
  network: Type.Optional(allowed(Type.String({ maxLength: 64, description: 'the libvirt network `aviary setup` made (default aviary)' }), 'a libvirt network name')),
  rebuild: Type.Optional(allowed(Type.Boolean({ description: 'build the image again from the package cache' }), 'true or false')),
  refresh: Type.Optional(allowed(Type.Boolean({ description: "fetch new package lists from Debian's archive and build the image again" }), 'true or false'))
})
export type LinuxBuildBody = Static<typeof LinuxBuildBody>

export const BuildEventSchema = Type.Object({
  seq: Type.Integer({ minimum: 1 }),
  elapsedMs: Type.Integer({ minimum: 0 }),
  step: Type.String({ description: 'check, image, disk, define, boot, settle, snapshot, register, doctor, cleanup' }),
  kind: Type.Union([Type.Literal('step'), Type.Literal('note'), Type.Literal('output')]),
  machine: Type.Optional(Type.String()),
  message: Type.String()
})
export type BuildEventView = Static<typeof BuildEventSchema>

export const BuildJobView = Type.Object({
  id: Type.Integer(),
  kind: Type.Union([Type.Literal('linux'), Type.Literal('rebuild')]),
  request: Type.Record(Type.String(), Type.Unknown()),
  state: Type.Union([Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')]),
  started: Type.String(),
  ended: nullable(Type.String()),
  /** The events after `since` (all of them without it). */
  events: Type.Array(BuildEventSchema),
  /** The last event's seq (what to ask `since` next). */
  last_seq: Type.Integer({ minimum: 0 }),
  /** The new machines (name, ip, boot and snapshot times), the image and the acceleration. */
  result: nullable(Type.Object({
    machines: Type.Array(Type.Object({ name: Type.String(), ip: Type.String(), bootMs: Type.Number(), snapshotMs: Type.Number() }, { additionalProperties: true })),
    image: Type.Object({ key: Type.String(), cached: Type.Boolean(), diskBytes: Type.Number(), buildMs: Type.Number() }),
    accel: Type.Object({ type: Type.String(), reason: Type.String() })
  }, { additionalProperties: true })),
  error: nullable(Type.Object({ message: Type.String(), step: nullable(Type.String()), field: nullable(Type.String()), leftBehind: Type.Array(Type.String()) }))
})
export type BuildJobView = Static<typeof BuildJobView>

export const BuildAnswer = Type.Object({ build: BuildJobView })
export type BuildAnswer = Static<typeof BuildAnswer>
export const BuildsAnswer = Type.Object({ builds: Type.Array(BuildJobView), running: Type.Boolean() })
export type BuildsAnswer = Static<typeof BuildsAnswer>

export const BuildIdParams = Type.Object({
  id: allowed(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'a build id from POST /aviary/machines/builds' }), 'a build id')
})
export const BuildSinceQuery = Type.Object({
  since: Type.Optional(allowed(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'only the events after this seq' }), 'a whole number (an event seq)'))
})

export const DiskUseAnswer = Type.Object({
  machines: Type.Array(Type.Object({ name: Type.String(), built: Type.Boolean(), bytes: Bytes, image: nullable(Type.String()) })),
  images: Type.Array(Type.Object({ key: Type.String(), bytes: Bytes, usedBy: Type.Array(Type.String()) })),
  totalBytes: Bytes,
  cacheBytes: Bytes
})
export type DiskUseAnswer = Static<typeof DiskUseAnswer>

export const LeftoverSchema = Type.Object({
  kind: Type.Union([Type.Literal('folder'), Type.Literal('domain'), Type.Literal('snapshot'), Type.Literal('image'), Type.Literal('build')]),
  name: Type.String(),
  why: Type.String(),
  bytes: Bytes
})
export type LeftoverView = Static<typeof LeftoverSchema>
export const LeftoversAnswer = Type.Object({ leftovers: Type.Array(LeftoverSchema) })
export type LeftoversAnswer = Static<typeof LeftoversAnswer>
export const RemoveLeftoversBody = Type.Object({
  names: Type.Optional(allowed(Type.Array(Type.String({ minLength: 1, maxLength: 600 }), { maxItems: 1000, description: 'only these (as GET lists them); all without it' }), 'a list of leftover names'))
})
export const RemovedLeftoversAnswer = Type.Object({
  removed: Type.Array(LeftoverSchema),
  failed: Type.Array(Type.Object({ item: LeftoverSchema, error: Type.String() }))
})
export type RemovedLeftoversAnswer = Static<typeof RemovedLeftoversAnswer>

export const DeleteAnswer = Type.Object({ name: Type.String(), removed: Type.Array(Type.String()) })
export type DeleteAnswer = Static<typeof DeleteAnswer>

export const PrepareAnswer = Type.Object({
  machine: Type.String(),
  since: Type.String(),
  reach: Type.Array(Type.String(), { description: 'how to reach the guest meanwhile (its screen, serial console, agent)' })
})
export type PrepareAnswer = Static<typeof PrepareAnswer>
export const PreparingAnswer = Type.Object({ preparing: Type.Array(PrepareAnswer) })
export type PreparingAnswer = Static<typeof PreparingAnswer>
