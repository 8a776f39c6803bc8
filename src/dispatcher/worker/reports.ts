// Fetching one finished node task into `<reports-dir>/<dist id>/`: every configured format as
// `report.<fmt>`, the pcap as `dump.pcap`, and `node-task.json` (which node ran it, its node-side
// status and errors, so a task that failed there says so). All files go to a temporary folder
// next to the final one and are renamed into place at once: the API never sees half a set, and a
// fetch that fails leaves nothing behind (the caller retries it later).
import { createWriteStream } from 'node:fs'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { randomUUID } from 'node:crypto'
import path from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import type { AnalysisClient } from '../../shared/api/client'
import type { Task } from '../../shared/api/schemas'

export interface FetchSpec {
  reportsDir: string
  formats: string[]
  pcap: boolean
  /** Cap of one downloaded file: a node that sends more (an endless body) fails the fetch. */
  maxBytes: number
}

/** Passes a download through, failing it once it exceeds `max` bytes. */
function capped(max: number): Transform {
  let size = 0
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length
      if (size > max) done(new Error(`the node sent more than ${max} bytes`))
      else done(null, chunk)
    }
  })
}

/** What the dispatcher keeps about the node-side run (node-task.json). */
export interface NodeTaskNote {
  node: string
  node_task_id: number | null
  status: string
  errors: string[]
  started_on: string | null
  completed_on: string | null
}

export function reportDir(reportsDir: string, distId: number): string {
  return path.join(reportsDir, String(distId))
}

/** Downloads everything of one node task; throws (leaving nothing) when any download fails. */
export async function fetchReports(client: AnalysisClient, spec: FetchSpec, distId: number, nodeTask: Task, note: NodeTaskNote): Promise<string[]> {
  const tmp = path.join(spec.reportsDir, `.incoming-${distId}-${randomUUID()}`)
  const saved: string[] = []
  try {
    await mkdir(tmp, { recursive: true })
    const wanted: Array<[string | null, string]> = spec.formats.map((f) => [f, `report.${f}`])
    if (spec.pcap) wanted.push([null, 'dump.pcap'])
    for (const [format, file] of wanted) {
      // A 404 means the node has no such file (a format it does not make, a run without a pcap,
      // a failed analysis): skipped, as Cuckoo's dispatcher does. Anything else is an error.
      // The client's transfer timeout bounds the whole download, the cap its size.
      const res = await client.download(nodeTask.id, format)
      if (!res?.body) continue
      try {
        await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), capped(spec.maxBytes), createWriteStream(path.join(tmp, file)))
      } catch (err) {
        const e = err as Error
        throw new Error(`${file}: ${e.name === 'TimeoutError' ? 'not complete within the transfer timeout' : e.message}`, { cause: err })
      }
      saved.push(file)
    }
    await writeFile(path.join(tmp, 'node-task.json'), JSON.stringify(note, null, 1))
    const dest = reportDir(spec.reportsDir, distId)
    // Left by an attempt that renamed but died before marking the task finished.
    await rm(dest, { recursive: true, force: true })
    await rename(tmp, dest)
    return saved
  } catch (err) {
    await rm(tmp, { recursive: true, force: true })
    throw err
  }
}

/** For a task that never reached a node (its sample vanished, or the node refused it for good). */
export async function writeNote(reportsDir: string, distId: number, note: NodeTaskNote): Promise<void> {
  const dest = reportDir(reportsDir, distId)
  await mkdir(dest, { recursive: true })
  const tmp = path.join(dest, `.node-task.json.${randomUUID()}`)
  await writeFile(tmp, JSON.stringify(note, null, 1))
  await rename(tmp, path.join(dest, 'node-task.json'))
}
