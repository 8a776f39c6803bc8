// What builds each section of the report: one module per entry of the shared section table
// (src/shared/report-sections.ts). The mapped type makes the compiler ask for a module for every
// section and nothing else; `fallback` is what the section holds when its module fails (the
// failure goes into debug.errors and the rest of the report is still written, as Cuckoo does).
import type { ReportSectionKey } from '../../shared/report-sections'
import type { FileTypeDetector } from '../hashing/magic'
import type { FileHashing } from '../hashing/file-digest'
import type { ProcessingContext } from './types'
import type { Report } from './report-schema'
import { analysisInfo } from './info'
import { fileInfo } from './file-info'
import type { StaticReport } from './static'
import { analyzeBehaviorDetailed, behaviorOptions } from './behavior'
import { bufferFiles, debugInfo, droppedFiles, fullMemoryDump, processMemory, screenshots } from './artifacts'
import { analyzePcap, emptyNetworkReport } from './network'
import { readMitmFlows } from './network/mitm-flows'
import { metadata } from './metadata'
import { suricataStep, emptySuricataReport } from './suricata'
import { runSignatures } from './signatures'
import type { Behavior } from './types'
import { ARTIFACTS, artifactPath } from '../storage/layout'

export interface SectionContext extends ProcessingContext {
  detectType: FileTypeDetector
  /** Reads and digests the files the report describes (the service's hashing workers). */
  hashing: FileHashing
  aviaryVersion: string
  /** What went wrong so far (modules add what they could not do; debug.errors lists them). */
  errors: string[]
  /** The sample's static analysis, computed once for `static` and `strings`. */
  staticOnce(): Promise<{ static: StaticReport; strings: string[] }>
}

/** The report while it is built: the sections of earlier phases are there. */
export type PartialReport = Partial<Report>

interface SectionModule<K extends ReportSectionKey> {
  build(ctx: SectionContext, report: PartialReport): Promise<Report[K]>
  fallback(ctx: SectionContext): Report[K]
}

export const SECTION_MODULES: { [K in ReportSectionKey]: SectionModule<K> } = {
  info: {
    build: async (ctx) => analysisInfo(ctx.task, ctx.aviaryVersion),
    fallback: (ctx) => analysisInfo({ id: ctx.taskId }, ctx.aviaryVersion)
  },
  target: {
    build: async (ctx) => {
      const category = String(ctx.task.category ?? 'file')
      if (ctx.sample === null) return { category: 'url', url: ctx.url }
      return { category, file: await fileInfo(ctx.sample.path, ctx.sample.name, ctx.detectType, ctx.hashing) }
    },
    fallback: () => ({ category: 'file', file: null })
  },
  static: {
    build: async (ctx) => (await ctx.staticOnce()).static,
    fallback: () => ({})
  },
  strings: {
    build: async (ctx) => (await ctx.staticOnce()).strings,
    fallback: () => []
  },
  behavior: {
    build: async (ctx) => {
      const b = await analyzeBehaviorDetailed(ctx.dir, behaviorOptions(ctx.task))
      for (const note of b.notes) ctx.log(`behavior: ${note}`)
      ctx.errors.push(...b.incomplete.map((n) => `behavior: ${n}`))
      return b.behavior as Behavior
    },
    fallback: () => ({ processes: [], processtree: [], summary: {}, generic: [], apistats: {}, anomaly: [] })
  },
  dropped: { build: (ctx) => droppedFiles(ctx.dir, ctx.detectType, ctx.log, ctx.hashing), fallback: () => [] },
  buffer: { build: (ctx) => bufferFiles(ctx.dir, ctx.detectType, ctx.log, ctx.hashing), fallback: () => [] },
  screenshots: { build: (ctx) => screenshots(ctx.dir), fallback: () => [] },
  procmemory: { build: (ctx) => processMemory(ctx.dir), fallback: () => [] },
  memory: {
    build: async (ctx) => {
      const m = await fullMemoryDump(ctx.dir)
      return m === null ? undefined : { file: m.path, size: m.size, yara: [] }
    },
    fallback: () => undefined
  },
  // Cuckoo's extractor carves scripts and configs out of what the run did; Aviary has none (yet).
  extracted: { build: async () => [], fallback: () => [] },
  network: {
    build: async (ctx) => {
      const network = await analyzePcap(artifactPath(ctx.dir, ARTIFACTS.pcap), { log: ctx.log })
      // What the decrypting proxy saw, when the task asked for it.
      try {
        Object.assign(network, await readMitmFlows(ctx.dir))
      } catch (err) {
        ctx.errors.push(`network (decrypted): ${(err as Error).message}`)
      }
      return network
    },
    fallback: emptyNetworkReport
  },
  // The IDS over the capture (and the decrypted HTTPS of mitm=1 tasks): processing/suricata.
  suricata: {
    build: (ctx) => suricataStep({ dir: ctx.dir, suricataDir: ctx.suricataDir ?? null, log: ctx.log, errors: ctx.errors }),
    fallback: () => emptySuricataReport('the IDS step failed (debug.errors says why)')
  },
  metadata: {
    build: (ctx, r) => metadata(ctx.dir, { dropped: r.dropped ?? [], buffer: r.buffer ?? [], procmemory: r.procmemory ?? [] }),
    fallback: () => ({ output: { memdumps: [], buffers: [], dropped: [] } })
  },
  signatures: {
    build: async (ctx, r) => runSignatures(r as Record<string, unknown>, { log: ctx.log }).signatures,
    fallback: () => []
  },
  debug: {
    build: (ctx) => debugInfo(ctx.dir, taskErrorsAnd(ctx)),
    fallback: (ctx) => ({ log: [], cuckoo: [], action: [], dbgview: [], errors: taskErrorsAnd(ctx) })
  }
}

/** The task's own errors (the run's), then what processing could not do. */
function taskErrorsAnd(ctx: SectionContext): string[] {
  const own = Array.isArray(ctx.task.errors) ? ctx.task.errors.filter((e): e is string => typeof e === 'string') : []
  return [...own, ...ctx.errors]
}
