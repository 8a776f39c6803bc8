// Turns one analysis folder into reports/report.json and reports/report.html. The sections and
// their order come from the shared table (src/shared/report-sections.ts); their modules from
// sections.ts. Modules run by phase, as Cuckoo's run by `order`: first what the run left (target,
// static, behavior, files, shots, memory), then YARA over everything collected, then what reads
// those (network, the IDS, metadata; the capture's DNS answers then name the hosts the behaviour connected to,
// behavior/connects-host.ts), then the signatures and the score, then debug. A module that fails is
// noted in `debug.errors` and its section holds its empty value: one bad pcap does not cost the
// analyst the rest of the report. Only a failure to write the report itself fails the task's
// processing. report.json's keys are written in the table's order.
import { mkdir } from 'node:fs/promises'
import type { FileTypeDetector } from '../hashing/magic'
import { inlineFileHashing, type FileHashing } from '../hashing/file-digest'
import { REPORT_SECTIONS, type ReportSectionKey } from '../../shared/report-sections'
import type { ProcessingContext, YaraMatch } from './types'
import type { Report } from './report-schema'
import { SECTION_MODULES, type PartialReport, type SectionContext } from './sections'
import { staticAnalysis, type StaticReport } from './static'
import { yaraScan } from './yara'
import { scoreOf } from './signatures'
import { nameConnectedHosts } from './behavior/connects-host'
import { writeJsonReport } from '../reporting/json-writer'
import { renderHtmlReport } from '../reporting/html/render'
import { ARTIFACTS, artifactPath } from '../storage/layout'

export { VERSION_TAG, analysisInfo } from './info'

export interface PipelineOptions {
  detectType: FileTypeDetector
  /** Reads and digests the files the report describes: the service's hashing workers; default, this thread. */
  hashing?: FileHashing
  /** The version of Aviary that writes the report (info.aviary_version). */
  aviaryVersion: string
}

export interface PipelineResult {
  /** What went wrong in single modules (also in report.debug.errors). */
  errors: string[]
  score: number
  /** The report as written to report.json (the search index reads its terms here, not from disk). */
  report: Report
}

const PHASES = [1, 2, 3, 4] as const

/** YARA over the sample, the dropped files, the buffers and the memory dumps, with the user's rules. */
async function yaraOverCollected(ctx: SectionContext, report: PartialReport): Promise<void> {
  const file = report.target !== undefined && 'file' in report.target ? report.target.file : null
  const dropped = report.dropped ?? []
  const buffers = report.buffer ?? []
  const procmemory = report.procmemory ?? []
  const memory = report.memory
  const scanned = [
    ...(file !== null ? [file.path] : []),
    ...dropped.map((d) => d.path),
    ...buffers.map((b) => b.path),
    ...procmemory.map((p) => p.file),
    ...(memory !== undefined ? [memory.file] : [])
  ]
  if (scanned.length === 0) return
  const matches = await yaraScan(scanned, ctx.yaraRules)
  const of = (p: string): YaraMatch[] => matches.get(p) ?? []
  if (file !== null) file.yara = of(file.path)
  for (const d of dropped) d.yara = of(d.path)
  for (const b of buffers) b.yara = of(b.path)
  for (const p of procmemory) p.yara = of(p.file)
  if (memory !== undefined) memory.yara = of(memory.file)
}

export async function processAnalysis(processing: ProcessingContext, o: PipelineOptions): Promise<PipelineResult> {
  const errors: string[] = []
  let statics: Promise<{ static: StaticReport; strings: string[] }> | null = null
  const ctx: SectionContext = {
    ...processing,
    detectType: o.detectType,
    hashing: o.hashing ?? inlineFileHashing,
    aviaryVersion: o.aviaryVersion,
    errors,
    staticOnce: () => (statics ??= processing.sample === null
      ? Promise.resolve({ static: {}, strings: [] })
      : staticAnalysis(processing.sample.path, processing.sample.type))
  }
  const fail = (what: string, err: unknown): void => {
    const msg = `${what}: ${(err as Error).message}`
    errors.push(msg)
    processing.log(msg)
  }

  const built: Record<string, unknown> = {}
  const report = built as PartialReport
  for (const phase of PHASES) {
    if (phase === 2) await yaraOverCollected(ctx, report).catch((err: unknown) => fail('yara', err))
    for (const section of REPORT_SECTIONS.filter((s) => s.phase === phase)) {
      const key: ReportSectionKey = section.key
      const module = SECTION_MODULES[key]
      try {
        built[key] = await module.build(ctx, report)
      } catch (err) {
        fail(key, err)
        built[key] = module.fallback(ctx)
      }
    }
    // The capture's DNS answers name the hosts the behaviour connected to, before signatures read it.
    if (phase === 2 && report.behavior !== undefined && report.network !== undefined) nameConnectedHosts(report.behavior, report.network.dns)
    if (phase === 3 && report.info !== undefined) report.info.score = scoreOf(report.signatures ?? [])
  }

  // The table's order, and no key for a section without a value (a run without a memory dump).
  const ordered = Object.fromEntries(REPORT_SECTIONS.filter((s) => built[s.key] !== undefined).map((s) => [s.key, built[s.key]])) as Report

  await mkdir(artifactPath(processing.dir, ARTIFACTS.reports), { recursive: true })
  await writeJsonReport(artifactPath(processing.dir, ARTIFACTS.reportJson), ordered)
  try {
    await renderHtmlReport(ordered, { dir: processing.dir, out: artifactPath(processing.dir, ARTIFACTS.reportHtml) })
  } catch (err) {
    fail('report.html', err)
  }
  return { errors, score: ordered.info.score, report: ordered }
}
