// The host side of one analysis in a guest, over the Cuckoo 2 agent HTTP protocol
// (cuckoo-internals.md §1, §2.1, §8.2): wait until the agent answers, then Cuckoo 2.0.7's
// GuestManager.start_analysis sequence (identify the agent, pin it, environment, analyzer
// folder, analyzer zip, analysis.conf, sample, start the analyzer), then poll GET /status until
// the analyzer reports. It works with Cuckoo's agent.py (0.7–0.10), CAPE's (0.2x) and Aviary's
// own; the old XML-RPC agent of Cuckoo 1.x is refused with a clear error. Requests are strictly
// one at a time: Cuckoo's agent is single-threaded.
import type { GuestStartSpec } from './start-spec'
import { access } from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { agentErrorText, agentRequest, describeSocketError, errMessage, jsonObject, type AgentResponse, type RequestBody } from './agent-http'
import { analysisConf, guestFileName, parseOptions } from './analysis-conf'
import { buildAnalyzerZip } from './analyzer-zip'
import { guestDirname, guestJoin, guestLayout, isWindows } from './guest-paths'

/** kind: 'cuckoo' | 'cape' | 'aviary' | 'unknown' (a new-style agent that names itself otherwise). */
export type { GuestStartSpec } from './start-spec'

export interface AgentInfo { kind: string; version: string | null; features: string[] }

export type CompletionOutcome = 'complete' | 'exception' | 'failed' | 'aborted' | 'timeout'

const SMALL_MS = 15_000 // GET /, /environ, /mkdir, /status...: answered at once by a live agent
const UPLOAD_MS = 120_000 // inactivity limit of /extract and /store: the agent writes to disk before answering
const POLL_MS = 5_000 // Cuckoo's own limit for a status poll

function abortError(what: string): Error {
  const e = new Error(`${what}: interrupted`)
  e.name = 'AbortError'
  return e
}

/** Tells the agents apart from GET / (§1.3). Throws for the XML-RPC agent and for non-agents. */
function identify(ip: string, port: number, res: AgentResponse): AgentInfo {
  if (res.status === 501) {
    throw new Error(`the agent on ${ip}:${port} is Cuckoo's old XML-RPC agent (Cuckoo 1.x / 2.0-rc), which Aviary does not ` +
      'support: install the agent.py of Cuckoo 2.0.x (or Aviary\'s agent) in the guest and take the snapshot again')
  }
  const j = jsonObject(res.body)
  if (res.status !== 200 || !j) {
    throw new Error(`what answers on ${ip}:${port} is not a Cuckoo-compatible agent (GET / gave HTTP ${res.status}` +
      `${j ? '' : ', not JSON'})`)
  }
  const words = `${typeof j.message === 'string' ? j.message : ''} ${String(res.headers.server ?? '')}`
  const kind = /aviary/i.test(words) ? 'aviary' : /cape/i.test(words) ? 'cape' : /cuckoo/i.test(words) ? 'cuckoo' : 'unknown'
  const features = Array.isArray(j.features) ? j.features.filter((f): f is string => typeof f === 'string') : []
  return { kind, version: typeof j.version === 'string' ? j.version : null, features }
}

/** GET / once: which agent answers on ip:port. Throws with a clear message when none (or the old one) does. */
export async function probeAgent(ip: string, port: number, timeoutMs: number): Promise<AgentInfo> {
  const res = await agentRequest({ ip, port, method: 'GET', path: '/', timeoutMs, step: 'asking the agent what it is' })
  return identify(ip, port, res)
}

function tcpConnect(ip: string, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: ip, port })
    const t = setTimeout(() => {
      s.destroy()
      reject(new Error('connect timed out'))
    }, timeoutMs)
    s.once('connect', () => {
      clearTimeout(t)
      s.destroy()
      resolve()
    })
    s.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(t)
      reject(new Error(describeSocketError(err)))
    })
  })
}

export class GuestSession {
  private readonly ip: string
  private readonly port: number
  private readonly log: (msg: string) => void
  private readonly pollMs: number

  constructor(o: { ip: string; port: number; log: (msg: string) => void; pollMs?: number }) {
    this.ip = o.ip
    this.port = o.port
    this.log = o.log
    this.pollMs = o.pollMs ?? 1000
  }

  /** Until the agent's port accepts and GET / answers (any HTTP answer), like Cuckoo's wait_available. */
  async waitAvailable(o: { timeoutMs: number; signal?: AbortSignal }): Promise<void> {
    const end = Date.now() + o.timeoutMs
    for (;;) {
      if (o.signal?.aborted) throw abortError('waiting for the agent')
      let last: string
      let pause: boolean
      try {
        await tcpConnect(this.ip, this.port, 1000)
        await agentRequest({ ip: this.ip, port: this.port, method: 'GET', path: '/', timeoutMs: POLL_MS, signal: o.signal, step: 'GET /' })
        return
      } catch (err) {
        if (o.signal?.aborted) throw abortError('waiting for the agent')
        last = errMessage(err)
        pause = last !== 'connect timed out' // like Cuckoo: a connect timeout already waited
      }
      const left = end - Date.now()
      if (left <= 0) {
        throw new Error(`no agent answered on ${this.ip}:${this.port} within ${Math.round(o.timeoutMs / 1000)} s (last attempt: ${last})`)
      }
      if (pause) await sleep(Math.min(this.pollMs, left), undefined, { signal: o.signal }).catch(() => undefined)
    }
  }

  /** One request that must succeed (HTTP 200); returns the JSON object of the answer. */
  private async call(step: string, method: 'GET' | 'POST', p: string, body: RequestBody | undefined,
    timeoutMs: number, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    const res = await agentRequest({ ip: this.ip, port: this.port, method, path: p, body, timeoutMs, signal, step })
    if (res.status !== 200) throw new Error(`${step}: the agent refused ${method} ${p}: ${agentErrorText(res)}`)
    return jsonObject(res.body) ?? {}
  }

  private form(fields: Record<string, string>): RequestBody {
    return { kind: 'urlencoded', fields }
  }

  /** Cuckoo 2.0.7's GuestManager.start_analysis, in its order. */
  async start(spec: GuestStartSpec, signal?: AbortSignal): Promise<AgentInfo> {
    const { ip, port } = this
    const info = identify(ip, port, await agentRequest({ ip, port, method: 'GET', path: '/', timeoutMs: SMALL_MS, signal, step: 'asking the agent what it is' }))
    this.log(`guest runs the ${info.kind} agent ${info.version ?? '(no version)'} (features: ${info.features.join(', ') || 'none'})`)

    if (info.features.includes('pinning')) {
      const res = await agentRequest({ ip, port, method: 'GET', path: '/pinning', timeoutMs: SMALL_MS, signal, step: 'pinning the agent' })
      // 500 = already pinned (a physical machine's agent is never reverted): carry on, later calls tell.
      if (res.status === 500) this.log('the agent was already pinned (to this host, if the next requests succeed)')
      else if (res.status !== 200) throw new Error(`pinning the agent: ${agentErrorText(res)}`)
    }

    // A physical machine's agent keeps the last run's status ('complete'), which would end this
    // run at the first poll. Cuckoo reboots physical machines instead; Aviary resets the status.
    const st = (await this.call('reading the agent\'s status', 'GET', '/status', undefined, SMALL_MS, signal)).status
    if (st !== null && st !== undefined && st !== 'init') {
      this.log(`the agent still reports '${String(st)}' from a previous analysis: resetting it to 'init'`)
      await this.call('resetting the agent\'s status', 'POST', '/status', this.form({ status: 'init' }), SMALL_MS, signal)
    }

    const environ = (await this.call('reading the guest\'s environment', 'GET', '/environ', undefined, SMALL_MS, signal)).environ
    const env = environ !== null && typeof environ === 'object' ? environ as Record<string, unknown> : {}
    const analpath = parseOptions(spec.options).get('analpath') ?? null

    let zip: Buffer // packed before anything is created in the guest, as Cuckoo does
    try {
      zip = await buildAnalyzerZip(spec.analyzer.dir, spec.analyzer.monitor)
    } catch (err) {
      throw new Error(`packing the analyzer: ${errMessage(err)}`, { cause: err })
    }

    // Cuckoo's agent answers 500 when the folder exists: a random name is drawn again (twice at
    // most); a folder named by `analpath` is reused.
    let layout = guestLayout(spec.platform, env, analpath)
    for (let attempt = 1; ; attempt++) {
      const mk = await agentRequest({ ip, port, method: 'POST', path: '/mkdir', body: this.form({ dirpath: layout.analyzerDir }), timeoutMs: SMALL_MS, signal, step: 'creating the analyzer folder' })
      if (mk.status === 200 || (layout.fixedName && mk.status === 500)) break
      if (mk.status !== 500 || attempt === 3) throw new Error(`creating the analyzer folder ${layout.analyzerDir}: ${agentErrorText(mk)}`)
      layout = guestLayout(spec.platform, env, null)
    }
    const dir = layout.analyzerDir
    this.log(`uploading the analyzer (${zip.length} bytes) to ${dir}`)
    await this.call('uploading the analyzer', 'POST', '/extract', {
      kind: 'multipart', parts: [{ name: 'dirpath', value: dir }, { name: 'zipfile', filename: 'zipfile', data: zip }]
    }, UPLOAD_MS, signal)
    await this.call('uploading analysis.conf', 'POST', '/store', {
      kind: 'multipart',
      parts: [{ name: 'filepath', value: guestJoin(spec.platform, dir, 'analysis.conf') },
        { name: 'file', filename: 'file', data: Buffer.from(analysisConf(spec), 'utf8') }]
    }, UPLOAD_MS, signal)

    // Cuckoo's prepare_guest callback (the reboot auxiliary) runs before the sample upload.
    for (const f of spec.pushFiles) {
      const parent = guestDirname(f.guestPath)
      this.log(`putting back ${f.guestPath}`)
      // Cuckoo's agent answers 500 when the folder exists; the /store below is what must succeed.
      if (parent) await agentRequest({ ip, port, method: 'POST', path: '/mkdir', body: this.form({ dirpath: parent }), timeoutMs: SMALL_MS, signal, step: 'creating a folder' })
      await this.call(`putting back ${f.guestPath}`, 'POST', '/store', {
        kind: 'multipart', parts: [{ name: 'filepath', value: f.guestPath }, { name: 'file', filename: 'file', path: f.localPath }]
      }, UPLOAD_MS, signal)
    }

    if (spec.category === 'file' || spec.category === 'archive') {
      const local = spec.file?.localPath ?? spec.target
      const guestPath = guestJoin(spec.platform, layout.tempDir, guestFileName(spec.file?.name ?? spec.target))
      this.log(`uploading the sample to ${guestPath}`)
      await this.call('uploading the sample', 'POST', '/store', {
        kind: 'multipart', parts: [{ name: 'filepath', value: guestPath }, { name: 'file', filename: 'sample.bin', path: local }]
      }, UPLOAD_MS, signal)
    }

    await this.startAnalyzer(spec, info, dir, signal)
    return info
  }

  /** analyzer.py → /execpy (any agent); analyzer.cjs → /execnode (Aviary's agent) or /execute `node ...`. */
  private async startAnalyzer(spec: GuestStartSpec, info: AgentInfo, dir: string, signal: AbortSignal | undefined): Promise<void> {
    const has = (name: string): Promise<boolean> => access(path.join(spec.analyzer.dir, name)).then(() => true, () => false)
    const win = isWindows(spec.platform)
    const step = 'starting the analyzer'
    if (await has('analyzer.py')) {
      const script = guestJoin(spec.platform, dir, 'analyzer.py')
      if (info.features.includes('execpy')) {
        await this.call(step, 'POST', '/execpy', this.form({ filepath: script, async: 'yes', cwd: dir }), SMALL_MS, signal)
      } else {
        // Cuckoo's fallback for agents without execpy.
        const python = win ? 'C:\\Python27\\pythonw.exe' : 'python'
        await this.call(step, 'POST', '/execute', this.form(this.executeFields(info, win, `${python} "${script}"`, dir)), SMALL_MS, signal)
      }
    } else if (await has('analyzer.cjs')) {
      const script = guestJoin(spec.platform, dir, 'analyzer.cjs')
      if (info.features.includes('execnode')) {
        await this.call(step, 'POST', '/execnode', this.form({ filepath: script, async: 'yes', cwd: dir }), SMALL_MS, signal)
      } else {
        await this.call(step, 'POST', '/execute', this.form(this.executeFields(info, win, `node "${script}"`, dir)), SMALL_MS, signal)
      }
    } else {
      throw new Error(`${step}: the analyzer folder ${spec.analyzer.dir} has neither analyzer.py nor analyzer.cjs`)
    }
    this.log(`analyzer started in ${dir}`)
  }

  /**
   * Cuckoo's agent hands `command` to Popen as one string: without a shell that only works on
   * Windows, so other guests get shell=yes. CAPE's agent (feature "execute") splits it with
   * shlex and must not get a shell (Popen would run only the first word).
   */
  private executeFields(info: AgentInfo, win: boolean, command: string, cwd: string): Record<string, string> {
    const fields: Record<string, string> = { command, async: 'yes', cwd }
    if (!win && !info.features.includes('execute')) fields.shell = 'yes'
    return fields
  }

  /** Polls GET /status every pollMs until the analyzer reports, the time is up, or the signal aborts. */
  async waitForCompletion(o: { timeoutMs: number; signal?: AbortSignal; onRunning?: () => void }):
    Promise<{ outcome: CompletionOutcome; description: string | null }> {
    const end = Date.now() + o.timeoutMs
    let running = false
    let lastError = ''
    for (;;) {
      if (o.signal?.aborted) return { outcome: 'aborted', description: null }
      const left = end - Date.now()
      if (left <= 0) return { outcome: 'timeout', description: null }
      try {
        await sleep(Math.min(this.pollMs, left), undefined, { signal: o.signal })
      } catch {
        return { outcome: 'aborted', description: null }
      }
      try {
        const res = await agentRequest({ ip: this.ip, port: this.port, method: 'GET', path: '/status', timeoutMs: POLL_MS, signal: o.signal, step: 'polling the analysis status' })
        const j = res.status === 200 ? jsonObject(res.body) : null
        if (!j) throw new Error(`polling the analysis status: ${agentErrorText(res)}`)
        const status = j.status === null || j.status === undefined ? null : String(j.status)
        if (status === 'complete' || status === 'exception' || status === 'failed') {
          const d = j.description
          const description = d === null || d === undefined || d === '' ? null : String(d)
          this.log(`the analyzer reported ${status}${description ? `: ${description}` : ''}`)
          return { outcome: status, description }
        }
        // Any answered non-final status means the analyzer was started and runs: CAPE's agent says
        // 'running', Cuckoo's never does (null, or 'init' after start() reset a kept status).
        if (!running) {
          running = true
          o.onRunning?.()
        }
        lastError = ''
      } catch (err) {
        if (o.signal?.aborted) return { outcome: 'aborted', description: null }
        const msg = errMessage(err)
        if (msg !== lastError) this.log(`status poll failed, retrying: ${msg}`) // like Cuckoo: log and retry
        lastError = msg
      }
    }
  }
}
