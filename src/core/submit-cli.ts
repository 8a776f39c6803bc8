// `aviary submit`: files, folders (every regular file inside, recursively) and URLs, sent
// through the API one task each, streamed from disk. Prints one line per target.
import { openAsBlob } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import path from 'node:path'
import { AnalysisClient, ApiClientError, type Fields } from '../shared/api/client'
import { printable } from '../shared/api/request-errors'

const shown = (s: string): string => printable(s, 4096)

interface SubmitOptions {
  url?: boolean
  package?: string
  timeout?: number
  priority?: number
  options?: string
  machine?: string
  platform?: string
  tags?: string
  custom?: string
  owner?: string
  memory?: boolean
  enforceTimeout?: boolean
  route?: string
  mitm?: boolean
  unique?: boolean
  json?: boolean
  remote: string
  apiToken?: string
}

interface Outcome {
  target: string
  task_id?: number
  error?: string
}

export async function runSubmit(targets: string[], o: SubmitOptions): Promise<number> {
  const client = new AnalysisClient(o.remote, { token: o.apiToken })
  // The route and the proxy travel in options, as Cuckoo carries route=<name>.
  const extra = [...(o.route ? [`route=${o.route}`] : []), ...(o.mitm ? ['mitm=1'] : [])]
  const options = [o.options, ...extra].filter((x) => x !== undefined && x !== '').join(',') || undefined
  const fields: Fields = {
    package: o.package, timeout: o.timeout, priority: o.priority, options, machine: o.machine,
    platform: o.platform, tags: o.tags, custom: o.custom, owner: o.owner, memory: o.memory,
    enforce_timeout: o.enforceTimeout
  }
  const outcomes: Outcome[] = []
  const report = (r: Outcome) => {
    outcomes.push(r)
    if (o.json) return
    // A sample's file name, or a server's message, never writes control or bidi characters to the terminal.
    if (r.task_id !== undefined) process.stdout.write(`Success: ${o.url || !isPathLike(r.target) ? 'URL' : 'File'} "${shown(r.target)}" added as task with ID #${r.task_id}\n`)
    else process.stderr.write(`Error: "${shown(r.target)}": ${shown(r.error ?? '')}\n`)
  }
  for (const target of targets) {
    try {
      if (o.url) {
        report({ target, task_id: (await client.createUrl(target, fields)).task_id })
        continue
      }
      const files = await filesOf(target)
      if (files === null) {
        if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) report({ target, task_id: (await client.createUrl(target, fields)).task_id })
        else report({ target, error: 'no such file or folder (use --url for a URL without a scheme)' })
        continue
      }
      for (const file of files) {
        try {
          const blob = await openAsBlob(file)
          const res = await client.createFile(blob, path.basename(file), { ...fields, unique: o.unique })
          report({ target: file, task_id: res.task_id })
        } catch (err) {
          report({ target: file, error: messageOf(err) })
          if (err instanceof ApiClientError && err.status === 0) break
        }
      }
    } catch (err) {
      report({ target, error: messageOf(err) })
    }
  }
  if (o.json) process.stdout.write(JSON.stringify(outcomes, null, 2) + '\n')
  return outcomes.some((r) => r.error !== undefined) ? 1 : 0
}

/** The files a target names: itself, or every regular file below a folder; null when absent. */
async function filesOf(target: string): Promise<string[] | null> {
  let s
  try {
    s = await stat(target)
  } catch {
    return null
  }
  if (s.isFile()) return [target]
  if (!s.isDirectory()) return []
  const out: string[] = []
  for (const entry of (await readdir(target, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(target, entry.name)
    if (entry.isFile()) out.push(full)
    else if (entry.isDirectory()) out.push(...((await filesOf(full)) ?? []))
  }
  return out
}

const isPathLike = (t: string) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(t)
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err))
