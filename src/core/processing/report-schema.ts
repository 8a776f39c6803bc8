// The contract of Aviary's report.json: one TypeBox schema composed of the schemas each processing
// module declares for its own output (info.ts, file-info.ts, static/, types.ts for behavior,
// network/, artifacts.ts, metadata.ts, signatures/), keyed by the sections of
// src/shared/report-sections.ts. `Report` is the type the pipeline builds; docs/report.schema.json
// is this schema as JSON Schema (written by `npm run report-schema`, checked by a test), and the
// tests validate real reports against it. Where Cuckoo 2.0.7's consumers read a key, its shape is
// Cuckoo's (test/cuckoo-report-fields.ts holds their field lists).
import type { ReportSectionKey } from '../../shared/report-sections'
import { InfoSchema } from './info'
import { DroppedFileSchema, FileInfoSchema, TargetSchema } from './file-info'
import { StaticSchema } from './static'
import { BehaviorSchema } from './types'
import { NetworkSchema } from './network'
import { SuricataSchema } from './suricata/eve'
import { DebugSchema, ExtractedSchema, MemoryDumpSchema, ProcessMemorySchema, ScreenshotSchema } from './artifacts'
import { MetadataSchema } from './metadata'
import { SignatureSchema } from './signatures/signature'
import { Type, type Static } from './schema'

export const REPORT_SCHEMA_ID = 'https://aviary.invalid/schemas/report.json'

const sections = {
  info: InfoSchema,
  target: TargetSchema,
  signatures: Type.Array(SignatureSchema),
  behavior: BehaviorSchema,
  network: NetworkSchema,
  suricata: SuricataSchema,
  dropped: Type.Array(DroppedFileSchema),
  buffer: Type.Array(FileInfoSchema),
  extracted: Type.Array(ExtractedSchema),
  static: StaticSchema,
  strings: Type.Array(Type.String()),
  procmemory: Type.Array(ProcessMemorySchema),
  /** Only when the task asked for a full memory dump (memory=1). */
  memory: Type.Optional(MemoryDumpSchema),
  screenshots: Type.Array(ScreenshotSchema),
  metadata: MetadataSchema,
  debug: DebugSchema
}

// Every section of the shared table has a schema here, and nothing else does.
type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never
const _sameKeys: Exact<keyof typeof sections, ReportSectionKey> = true
void _sameKeys

export const ReportSchema = Type.Object(sections, {
  $id: REPORT_SCHEMA_ID,
  title: 'Aviary report.json',
  description: "An analysis' report: Cuckoo Sandbox 2.0.7's keys and shapes, plus Aviary's additions.",
  additionalProperties: false
})
export type Report = Static<typeof ReportSchema>
