// Two Cuckoo clients replayed call by call, with the bytes they send and only the keys they read:
// FAME's Cuckoo processing module (certsocietegenerale/fame_modules, processing/cuckoo/cuckoo.py)
// and Rapid7 InsightConnect's Cuckoo plugin (plugins/cuckoo, util/api.py and the
// reschedule_task action). Where the client would crash (FAME's `response.json()['task_id']` on an
// error body is a KeyError), the replay throws an error saying so.
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * requests.post(url, files={'file': fp}, data=d) as python-requests encodes it (urllib3's
 * encode_multipart_formdata): the data fields first, each value str()'d, then the file part named
 * by fp's base name; no Content-Type on any part; a 32 hex digit boundary.
 */
export function requestsMultipart(data: [string, string][], file: { name: string; content: Buffer }): { body: Buffer; contentType: string } {
  const boundary = randomBytes(16).toString('hex')
  const parts: Buffer[] = []
  for (const [k, v] of data) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`))
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\n\r\n`), file.content,
    Buffer.from(`\r\n--${boundary}--\r\n`))
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` }
}

export interface FameOptions {
  /** The module's `analysis_time` (default 300). */
  analysisTime?: number
  /** The module's `allow_internet_access` (default True): route=internet, else route=drop. */
  allowInternetAccess?: boolean
}

/** define_options(): what FAME sends with every submission. Python's str(True) is "True". */
function fameData(o: FameOptions): [string, string][] {
  return [
    ['timeout', String(o.analysisTime ?? 300)],
    ['enforce_timeout', 'True'],
    ['options', `route=${o.allowInternetAccess ?? true ? 'internet' : 'drop'}`]
  ]
}

/** FAME's `self.task_id = response.json()['task_id']`: the id, or the KeyError FAME would raise. */
async function fameTaskId(res: Response): Promise<number> {
  const body = await res.json() as Record<string, unknown>
  if (!('task_id' in body)) throw new Error(`FAME: KeyError: 'task_id' (HTTP ${res.status} ${JSON.stringify(body)})`)
  return body.task_id as number
}

export const fame = {
  /** submit_file(): POST /tasks/create/file, multipart. */
  async submitFile(base: string, file: { name: string; content: Buffer }, o: FameOptions = {}): Promise<number> {
    const { body, contentType } = requestsMultipart(fameData(o), file)
    return fameTaskId(await fetch(new URL('/tasks/create/file', base), { method: 'POST', body, headers: { 'content-type': contentType } }))
  },

  /** submit_url(): POST /tasks/create/url, the same fields plus `url`, form-urlencoded (requests' data= without files). */
  async submitUrl(base: string, url: string, o: FameOptions = {}): Promise<number> {
    const body = new URLSearchParams([...fameData(o), ['url', url]]).toString()
    return fameTaskId(await fetch(new URL('/tasks/create/url', base), {
      method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' }
    }))
  },

  /** wait_for_analysis(): GET /tasks/view/<id>, reading ['task']['status'] until it is 'reported'. */
  async waitForAnalysis(base: string, id: number, o: { waitTimeoutMs: number; waitStepMs: number }): Promise<void> {
    let status = ''
    for (let waited = 0; waited < o.waitTimeoutMs; waited += o.waitStepMs) {
      const body = await (await fetch(new URL(`/tasks/view/${id}`, base))).json() as { task: { status: string } }
      status = body.task.status
      if (status === 'reported') return
      await sleep(o.waitStepMs)
    }
    throw new Error(`FAME: could not get report before timeout (last status ${status})`)
  },

  /** process_report(): GET /tasks/report/<id>, then signatures' name/severity/description and info.score. */
  async processReport(base: string, id: number): Promise<{ score: number; signatures: { name: string; severity: number; description: string }[] }> {
    const res = await fetch(new URL(`/tasks/report/${id}`, base))
    if (res.status !== 200) throw new Error(`FAME: could not find report for task id ${id} (HTTP ${res.status})`)
    const r = await res.json() as { info: { score: number }; signatures: { name: string; severity: number; description: string }[] }
    return { score: Number(r.info.score), signatures: r.signatures.map((s) => ({ name: s.name, severity: s.severity, description: s.description })) }
  }
}

export const rapid7 = {
  /**
   * The reschedule_task action: GET {url}/tasks/reschedule/{task_id}, or .../{priority} when a
   * priority is given; any 4xx or 5xx is a PluginException; the output is the answer's task_id.
   */
  async rescheduleTask(base: string, taskId: number, priority?: number): Promise<{ task_id: number }> {
    const endpoint = priority ? `tasks/reschedule/${taskId}/${priority}` : `tasks/reschedule/${taskId}`
    const res = await fetch(`${base.replace(/\/$/, '')}/${endpoint}`)
    const text = await res.text()
    if (res.status >= 400) throw new Error(`Rapid7: PluginException (HTTP ${res.status}): ${text}`)
    const body = JSON.parse(text) as { task_id?: unknown }
    if (typeof body.task_id !== 'number') throw new Error(`Rapid7: the output has no task_id: ${text}`)
    return { task_id: body.task_id }
  }
}
