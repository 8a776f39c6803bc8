// Fetching one finished node task into `<reports-dir>/<dist id>/`: every configured format as
// `report.<fmt>`, the pcap as `dump.pcap`, and `node-task.json` (which node ran it, its node-side
// status and errors, so a task that failed there says so). All files go to a temporary folder
// next to the final one and are renamed into place at once: the API never sees half a set, and a
// fetch that fails leaves nothing behind (the caller retries it later).
import { createWriteStream } from 'node:fs'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { randomUUID } from 'node:crypto'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import type { AnalysisClient } from '../../shared/api/client'
import type { Task } from '../../shared/api/schemas'

export interface FetchSpec {
  reportsDir: string
  formats: string[]
  pcap: boolean
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
      const res = await client.download(nodeTask.id, format)
      if (!res?.body) continue
      await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(path.join(tmp, file)))
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
