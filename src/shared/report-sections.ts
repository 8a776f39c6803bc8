// The sections of report.json, in one table that the core and the UI both read. The table's order is
// the order of the report's keys and of report.html's sections (the order an analyst reads); each
// entry also says when processing builds it (Cuckoo's module `order`), what /tasks/summary keeps of
// it (Cuckoo 2.0.7's cut), and which tab of the UI shows it. Adding a section is one entry here plus
// its module (src/core/processing/sections.ts makes the compiler ask for the module, the schema
// entry and, where `html` is set, the HTML renderer).

/** The UI's report tabs, in the order they are shown. */
export const REPORT_TABS = [
  { id: 'summary', label: 'Summary' },
  { id: 'signatures', label: 'Signatures' },
  { id: 'behavior', label: 'Behavior' },
  { id: 'network', label: 'Network' },
  { id: 'static', label: 'Static' },
  { id: 'dropped', label: 'Dropped' },
  { id: 'screenshots', label: 'Screenshots' },
  { id: 'memory', label: 'Memory' },
  { id: 'raw', label: 'Raw JSON' }
] as const
export type ReportTabId = (typeof REPORT_TABS)[number]['id']

export interface ReportSection {
  /** The top-level key of report.json. */
  key: string
  title: string
  /**
   * When processing builds it, as Cuckoo's module order: 1 what the run left (files, logs, shots),
   * 2 what reads those (network, metadata; YARA runs between 1 and 2), 3 what reads everything
   * (signatures), 4 last words (debug, which lists what went wrong before it).
   */
  phase: 1 | 2 | 3 | 4
  /** What /tasks/summary keeps: all of it, none of it, or all but some of its keys. */
  summary: 'keep' | 'drop' | { readonly drop: readonly string[] }
  /** The tab that shows it, or null when only the raw JSON does. */
  tab: ReportTabId | null
  /** Whether report.html has a section for it. */
  html: boolean
}

export const REPORT_SECTIONS = [
  { key: 'info', title: 'Analysis', phase: 1, summary: 'keep', tab: 'summary', html: true },
  { key: 'target', title: 'Target', phase: 1, summary: 'keep', tab: 'summary', html: false },
  { key: 'signatures', title: 'Signatures', phase: 3, summary: 'keep', tab: 'signatures', html: true },
  { key: 'behavior', title: 'Behavior', phase: 1, summary: { drop: ['processes', 'generic', 'apistats'] }, tab: 'behavior', html: true },
  { key: 'network', title: 'Network', phase: 2, summary: 'keep', tab: 'network', html: true },
  { key: 'suricata', title: 'IDS alerts (Suricata)', phase: 2, summary: 'keep', tab: 'network', html: true },
  { key: 'dropped', title: 'Dropped files', phase: 1, summary: 'keep', tab: 'dropped', html: true },
  { key: 'buffer', title: 'Buffers', phase: 1, summary: 'keep', tab: 'dropped', html: true },
  { key: 'extracted', title: 'Extracted', phase: 2, summary: 'keep', tab: 'dropped', html: false },
  { key: 'static', title: 'Static analysis', phase: 1, summary: 'keep', tab: 'static', html: true },
  { key: 'strings', title: 'Strings', phase: 1, summary: 'keep', tab: 'static', html: false },
  { key: 'procmemory', title: 'Process memory', phase: 1, summary: 'drop', tab: 'memory', html: true },
  { key: 'memory', title: 'Memory dump', phase: 1, summary: 'keep', tab: 'memory', html: false },
  { key: 'screenshots', title: 'Screenshots', phase: 1, summary: 'drop', tab: 'screenshots', html: true },
  { key: 'metadata', title: 'Output files', phase: 2, summary: 'drop', tab: null, html: false },
  { key: 'debug', title: 'Processing errors', phase: 4, summary: 'drop', tab: null, html: true }
] as const satisfies readonly ReportSection[]

export type ReportSectionKey = (typeof REPORT_SECTIONS)[number]['key']
/** Sections report.html renders. */
export type HtmlSectionKey = Extract<(typeof REPORT_SECTIONS)[number], { html: true }>['key']

/** Keys of a section that /tasks/summary leaves out: all of them ('*'), some, or none. */
export function summaryDrops(key: string): '*' | readonly string[] {
  const s = REPORT_SECTIONS.find((x) => x.key === key) as ReportSection | undefined
  if (s === undefined || s.summary === 'keep') return []
  return s.summary === 'drop' ? '*' : s.summary.drop
}

/**
 * Tabs that need the full report: they show a section /tasks/summary drops whole. (The Behavior
 * tab reads the process tree and summary, which the summary keeps, and pages calls through their
 * own route.) The raw JSON always does.
 */
export const FULL_TABS: ReadonlySet<ReportTabId> = new Set<ReportTabId>([
  ...REPORT_SECTIONS.filter((s) => (s as ReportSection).summary === 'drop' && s.tab !== null).map((s) => s.tab as ReportTabId),
  'raw'
])
