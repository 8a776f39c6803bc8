// Turns one analysis folder into reports/report.json and reports/report.html, in Cuckoo 2's order
// (shared/reference/cuckoo-internals.md §7.1): analysis info, target, static and strings,
// behavior, dropped files, screenshots, memory, then network, then YARA over what was collected,
// then signatures and the score, then the reports. A module that fails is noted in `debug.errors`
// and its key left empty: one bad pcap does not cost the analyst the rest of the report. Only a
// failure to write the report itself fails the task's processing.
import path from 'node:path'
import { mkdir } from 'node:fs/promises'
import type { FileTypeDetector } from '../hashing/magic'
import { parseDatetime } from '../../shared/time'
import type { ProcessingContext, YaraMatch } from './types'
import { fileInfo } from './file-info'
import { debugInfo, droppedFiles, fullMemoryDump, processMemory, screenshots } from './artifacts'
import { staticAnalysis } from './static'
import { analyzeBehavior } from './behavior'
import { readMitmFlows } from './network/mitm-flows'
import { analyzePcap, emptyNetworkReport } from './network'
import { yaraScan } from './yara'
import { runSignatures } from './signatures'
import { writeJsonReport } from '../reporting/json-writer'
import { renderHtmlReport } from '../reporting/html/render'

export const VERSION_TAG = '2.0.7'

export interface PipelineOptions {
  detectType: FileTypeDetector
  /** The version of Aviary that writes the report (info.aviary_version). */
  aviaryVersion: string
}

export interface PipelineResult {
  /** What went wrong in single modules (also in report.debug.errors). */
  errors: string[]
  score: number
}

type Report = Record<string, unknown>

/** Epoch seconds, as report.json writes datetimes (Cuckoo's jsondump). */
function epoch(text: unknown): number | null {
  if (typeof text !== 'string') return null
  const d = parseDatetime(text)
  return d ? d.getTime() / 1000 : null
}

export function analysisInfo(task: Record<string, unknown>, aviaryVersion: string): Record<string, unknown> {
  const guest = (task.guest ?? null) as Record<string, unknown> | null
  return {
    version: VERSION_TAG,
    aviary_version: aviaryVersion,
    id: task.id,
    category: task.category,
    custom: task.custom ?? null,
    owner: task.owner ?? null,
    package: task.package ?? null,
    platform: task.platform ?? null,
    options: task.options ?? null,
    route: task.route ?? null,
    added: epoch(task.added_on),
    started: epoch(task.started_on),
    ended: epoch(task.completed_on),
    duration: typeof task.duration === 'number' ? task.duration : null,
    machine: guest
      ? { name: guest.name, label: guest.label, manager: guest.manager, started_on: guest.started_on, shutdown_on: guest.shutdown_on, status: guest.status ?? null }
      : null,
    score: 0
  }
}

export async function processAnalysis(ctx: ProcessingContext, o: PipelineOptions): Promise<PipelineResult> {
  const errors: string[] = []
  const step = async <T>(what: string, fn: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await fn()
    } catch (err) {
      const msg = `${what}: ${(err as Error).message}`
      errors.push(msg)
      ctx.log(msg)
      return fallback
    }
  }
  const task = ctx.task
  const report: Report = { info: analysisInfo(task, o.aviaryVersion) }

  // target, static, strings
  const category = String(task.category ?? 'file')
  if (ctx.sample) {
    const sample = ctx.sample
    const file = await step('target', () => fileInfo(sample.path, sample.name, o.detectType), null)
    report.target = { category, file }
    const st = await step('static', () => staticAnalysis(sample.path, file?.type ?? sample.type), { static: {}, strings: [] })
    report.static = st.static
    report.strings = st.strings
  } else {
    report.target = { category, url: ctx.url }
    report.static = {}
    report.strings = []
  }

  report.behavior = await step('behavior', () => analyzeBehavior(ctx.dir), {})
  const dropped = await step('dropped', () => droppedFiles(ctx.dir, o.detectType, ctx.log), [])
  report.dropped = dropped
  report.screenshots = await step('screenshots', () => screenshots(ctx.dir), [])
  const procmemory = await step('procmemory', () => processMemory(ctx.dir), [])
  report.procmemory = procmemory
  const memory = await step('memory', () => fullMemoryDump(ctx.dir), null)
  if (memory) report.memory = { file: memory.path, size: memory.size }

  const network = await step('network', () => analyzePcap(path.join(ctx.dir, 'dump.pcap'), { log: ctx.log }), emptyNetworkReport())
  // What the decrypting proxy saw, when the task asked for it.
  const mitm = await step('network (decrypted)', () => readMitmFlows(ctx.dir), null)
  if (mitm) Object.assign(network, mitm)
  report.network = network

  // YARA over the sample, the dropped files and the memory dumps, with the user's rules.
  const scanned = [
    ...(ctx.sample ? [ctx.sample.path] : []),
    ...dropped.map((d) => d.path),
    ...procmemory.map((p) => p.file),
    ...(memory ? [memory.path] : [])
  ]
  const matches = await step('yara', () => yaraScan(scanned, ctx.yaraRules), new Map<string, YaraMatch[]>())
  const target = report.target as { file?: { yara: YaraMatch[] } | null }
  if (ctx.sample && target.file) target.file.yara = matches.get(ctx.sample.path) ?? []
  for (const d of dropped) d.yara = matches.get(d.path) ?? []
  for (const p of procmemory) p.yara = matches.get(p.file) ?? []
  if (memory) (report.memory as Record<string, unknown>).yara = matches.get(memory.path) ?? []

  const signatures = await step('signatures', async () => runSignatures(report), { signatures: [], score: 0 })
  report.signatures = signatures.signatures
  ;(report.info as Record<string, unknown>).score = signatures.score

  report.debug = await debugInfo(ctx.dir, [...((task.errors as string[] | undefined) ?? []), ...errors])

  const reports = path.join(ctx.dir, 'reports')
  await mkdir(reports, { recursive: true })
  await writeJsonReport(path.join(reports, 'report.json'), report)
  await step('report.html', () => renderHtmlReport(report, { dir: ctx.dir, out: path.join(reports, 'report.html') }), undefined)
  return { errors, score: signatures.score }
}
