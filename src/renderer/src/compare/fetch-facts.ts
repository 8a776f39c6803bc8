// Fetches one task's report and reduces it to its digest (facts.ts), in a worker where the page has
// one (facts.worker.ts), so that parsing a large report never blocks the page, and inline where it
// has none (tests). It asks /tasks/summary first (Aviary and Cuckoo 2.0.7: the report without its
// calls, and everything the comparison reads), and the full /tasks/report where the server has no
// summary (Cuckoo up to 2.0.6). Either way the report is let go once digested: the page holds two
// digests, never a report. A side can also be a file opened in the page: a report.json, or an
// analysis archive (the `all` archive of Aviary or Cuckoo, as the Offline page reads them).
import { reportFacts, type ReportFacts } from './facts'
import { detectFormat, readBlob, readToBlobs } from '../offline/archive'
import { findRoot } from '../offline/analysis'

/** The largest report parsed (JSON.parse of a larger string fails, or takes minutes). */
export const MAX_REPORT_BYTES = 400 * 1024 * 1024

export type FactsRequest = { summaryUrl: string; reportUrl: string } | { file: Blob }
export interface FactsAnswer { facts: ReportFacts; source: 'summary' | 'report' | 'file' }
export type FactsReply = { kind: 'done'; answer: FactsAnswer } | { kind: 'error'; status: number; message: string }

export class FetchError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

async function failure(res: Response): Promise<FetchError> {
  let message = `HTTP ${res.status}`
  try {
    const body = (await res.json()) as { message?: unknown }
    if (typeof body.message === 'string') message = body.message.slice(0, 1000)
  } catch {
    // not JSON (an HTML 404 of a server without the route): keep the status
  }
  return new FetchError(res.status, message)
}

async function readJson(res: Response): Promise<unknown> {
  const length = Number(res.headers.get('content-length') ?? NaN)
  const tooBig = (n: number) => new FetchError(413, `the report is ${(n / 1024 ** 2).toFixed(0)} MiB; reports up to ${MAX_REPORT_BYTES / 1024 ** 2} MiB are compared in the page`)
  if (Number.isFinite(length) && length > MAX_REPORT_BYTES) {
    await res.body?.cancel()
    throw tooBig(length)
  }
  const text = await res.text()
  if (text.length > MAX_REPORT_BYTES) throw tooBig(text.length)
  return parseReport(text)
}

function parseReport(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    throw new FetchError(400, `the report is not valid JSON: ${(err as Error).message}`)
  }
}

/** The report of a file: itself (a report.json), or the reports/report.json an archive holds. */
async function fileFacts(file: Blob): Promise<FactsAnswer> {
  let report: Blob = file
  if (detectFormat(new Uint8Array(await readBlob(file.slice(0, 512)))) !== null) {
    const entries = await readToBlobs(file)
    const found = findRoot(entries.map((e) => e.name))
    const name = found?.hasReport ? `${found.root === '' ? '' : `${found.root}/`}reports/report.json` : null
    const entry = entries.find((e) => e.name === name)
    if (entry === undefined) throw new FetchError(404, 'the archive holds no reports/report.json')
    report = entry.blob
  }
  if (report.size > MAX_REPORT_BYTES) throw new FetchError(413, `the report is ${(report.size / 1024 ** 2).toFixed(0)} MiB; reports up to ${MAX_REPORT_BYTES / 1024 ** 2} MiB are compared in the page`)
  return { facts: reportFacts(parseReport(new TextDecoder().decode(await readBlob(report)))), source: 'file' }
}

export async function fetchFacts(req: FactsRequest, signal?: AbortSignal): Promise<FactsAnswer> {
  if ('file' in req) return fileFacts(req.file)
  const init: RequestInit = { headers: { Accept: 'application/json' }, signal: signal ?? null }
  const summary = await fetch(req.summaryUrl, init)
  if (summary.ok) return { facts: reportFacts(await readJson(summary)), source: 'summary' }
  if (summary.status !== 404) throw await failure(summary)
  await summary.body?.cancel()
  const full = await fetch(req.reportUrl, init)
  if (!full.ok) throw await failure(full)
  return { facts: reportFacts(await readJson(full)), source: 'report' }
}

/** The digest of a task's report: in a worker when the platform has one, else here. */
export function loadFacts(req: FactsRequest, signal?: AbortSignal): Promise<FactsAnswer> {
  if (typeof Worker === 'undefined') return fetchFacts(req, signal)
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./facts.worker.ts', import.meta.url), { type: 'module' })
    const stop = () => { worker.terminate(); reject(new DOMException('The comparison was left', 'AbortError')) }
    signal?.addEventListener('abort', stop, { once: true })
    const done = () => { signal?.removeEventListener('abort', stop); worker.terminate() }
    worker.onmessage = (e: MessageEvent<FactsReply>) => {
      done()
      if (e.data.kind === 'done') resolve(e.data.answer)
      else reject(new FetchError(e.data.status, e.data.message))
    }
    worker.onerror = (e) => { done(); reject(new FetchError(0, `the report reader stopped: ${e.message || 'out of memory?'}`)) }
    worker.postMessage(req)
  })
}
