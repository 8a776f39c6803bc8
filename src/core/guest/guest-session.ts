// The host side of one analysis in a guest, over the Cuckoo 2 agent HTTP protocol
// (Cuckoo 2.0.7's cuckoo/core/guest.py, GuestManager): wait until the agent answers, then Cuckoo 2.0.7's
// GuestManager.start_analysis sequence (identify the agent, pin it, environment, analyzer
// folder, analyzer zip, analysis.conf, sample, start the analyzer), then poll GET /status until
// the analyzer reports. It works with Cuckoo's agent.py (0.7–0.10), CAPE's (0.2x) and Aviary's
// own; the old XML-RPC agent of Cuckoo 1.x is refused with a clear error. Requests are strictly
// one at a time: Cuckoo's agent is single-threaded.
//
// The guest is hostile: every exchange is bounded (agent-http.ts), the exchange under way is
// kept so a run that runs out of time can say what the agent was doing (trouble()), an agent that
// can end earlier analyses (Aviary's, POST /reset) is asked to before each one, and the run's id
// goes to the analyzer so that one left from an earlier run cannot end this one (status-poll.ts).
import type { GuestStartSpec } from './start-spec'
import { access } from 'node:fs/promises'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { DEADLINE_FILE, EXCHANGE_MS, ROUTES, RUN_FIELD, TRUSTED_CA_FILE, TRUSTED_CA_HASH_FILE } from '../../guest-protocol/agent-api'
import { subjectHash } from '../network/mitm-ca'
import {
  AgentError, agentErrorText, agentRequest, describeProgress, errMessage, jsonObject,
  type AgentResponse, type ExchangeProgress, type RequestBody
} from './agent-http'
import { abortError, identify, NotAnAgent, tcpConnect, type AgentInfo } from './agent-identity'
import { analysisConf, guestFileName, parseOptions } from './analysis-conf'
import { analyzerTagsRun, buildAnalyzerZip } from './analyzer-zip'
import { guestDirname, guestJoin, guestLayout, isWindows } from './guest-paths'
import { PollHistory, pollUntilFinal, type Completion, type PollOptions } from './status-poll'

/** kind: 'cuckoo' | 'cape' | 'aviary' | 'unknown' (a new-style agent that names itself otherwise). */
export type { GuestStartSpec } from './start-spec'
export type { Completion, CompletionOutcome } from './status-poll'

export type { AgentInfo } from './agent-identity'
export { probeAgent } from './agent-identity'

const SMALL_MS = EXCHANGE_MS.small
const UPLOAD_MS = EXCHANGE_MS.uploadIdle
const POLL_MS = EXCHANGE_MS.poll

export class GuestSession {
  private readonly ip: string
  private readonly port: number
  private readonly log: (msg: string) => void
  private readonly pollMs: number
  private readonly run: string | null
  /** The latest exchange, for trouble(). */
  private current: ExchangeProgress | null = null
  private readonly history = new PollHistory()
  /** The analyzer tags its statuses with the run (Aviary's): set by start(). */
  private tagged = false
  private info: AgentInfo | null = null
  /** Where analysis.conf went: the deadline file goes next to it. */
  private confDir: { platform: string; dir: string } | null = null
  private deadlineSeq = 0

  constructor(o: { ip: string; port: number; log: (msg: string) => void; pollMs?: number; run?: string | null }) {
    this.ip = o.ip
    this.port = o.port
    this.log = o.log
    this.pollMs = o.pollMs ?? 1000
    this.run = o.run ?? null
  }

  /** What the agent was doing when the run's time ran out, in words; null when nothing stands out. */
  trouble(): string | null {
    const inflight = this.current !== null && !this.current.over ? this.current : null
    const past = this.history.describe()
    // An exchange that had just begun when time ran out says little; what came before says more.
    if (inflight !== null && (inflight.received >= 0 || Date.now() - inflight.startedAt >= 1000)) {
      return past === null ? describeProgress(inflight) : `${describeProgress(inflight)}; before that, ${past}`
    }
    return past ?? (inflight === null ? null : describeProgress(inflight))
  }

  private exchange(r: Omit<Parameters<typeof agentRequest>[0], 'ip' | 'port' | 'watch'>): Promise<AgentResponse> {
    return agentRequest({ ...r, ip: this.ip, port: this.port, watch: (p) => { this.current = p } })
  }

  /**
   * Until the agent's port accepts and GET / answers, like Cuckoo's wait_available; the answer
   * tells which agent it is (read once: start() uses it). No answer is tried again until the time
   * is up; an answer that is not an agent's fails at once.
   */
  async waitAvailable(o: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<AgentInfo> {
    const end = Date.now() + o.timeoutMs
    for (;;) {
      if (o.signal?.aborted) throw abortError('waiting for the agent')
      let last: string
      let pause: boolean
      try {
        await tcpConnect(this.ip, this.port, 1000)
        const res = await this.exchange({ method: 'GET', path: ROUTES.root, timeoutMs: POLL_MS, deadlineMs: POLL_MS, signal: o.signal, step: 'asking the agent what it is' })
        this.info = identify(this.ip, this.port, res)
        return this.info
      } catch (err) {
        if (o.signal?.aborted) throw abortError('waiting for the agent')
        // An answer that is no agent's will not become one: only silence is waited out.
        if ((err instanceof AgentError && err.kind === 'misbehaved') || err instanceof NotAnAgent) throw err
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
    timeoutMs: number, signal: AbortSignal | undefined, deadlineMs: number | undefined = timeoutMs): Promise<Record<string, unknown>> {
    const res = await this.exchange({ method, path: p, body, timeoutMs, deadlineMs, signal, step })
    if (res.status !== 200) throw new Error(`${step}: the agent refused ${method} ${p}: ${agentErrorText(res)}`)
    return jsonObject(res.body) ?? {}
  }

  private form(fields: Record<string, string>): RequestBody {
    return { kind: 'urlencoded', fields }
  }

  /**
   * Ends every analysis the agent started before (Aviary's agent, feature `reset`); false when
   * the agent cannot. Used before an analysis and, on machines that are never reverted, after.
   */
  async endEarlierAnalyses(signal?: AbortSignal): Promise<boolean> {
    if (!this.info?.features.includes('reset')) return false
    const j = await this.call('ending earlier analyses in the guest', 'POST', ROUTES.reset, undefined, SMALL_MS, signal)
    const ended = typeof j.ended === 'number' ? j.ended : 0
    if (ended > 0) this.log(`the agent ended ${ended} process(es) left from an earlier analysis`)
    return true
  }

  /**
   * Cuckoo 2.0.7's GuestManager.start_analysis, in its order. `info` is waitAvailable()'s answer
   * (GET / is asked here when it is absent).
   */
  async start(spec: GuestStartSpec, signal?: AbortSignal, info?: AgentInfo): Promise<AgentInfo> {
    const { ip, port } = this
    info ??= identify(ip, port, await this.exchange({ method: 'GET', path: ROUTES.root, timeoutMs: SMALL_MS, deadlineMs: SMALL_MS, signal, step: 'asking the agent what it is' }))
    this.info = info
    this.log(`guest runs the ${info.kind} agent ${info.version ?? '(no version)'} (features: ${info.features.join(', ') || 'none'})`)

    if (info.features.includes('pinning')) {
      const res = await this.exchange({ method: 'GET', path: ROUTES.pinning, timeoutMs: SMALL_MS, deadlineMs: SMALL_MS, signal, step: 'pinning the agent' })
      // 500 = already pinned (a physical machine's agent is never reverted): carry on, later calls tell.
      if (res.status === 500) this.log('the agent was already pinned (to this host, if the next requests succeed)')
      else if (res.status !== 200) throw new Error(`pinning the agent: ${agentErrorText(res)}`)
    }

    const aviaryAnalyzer = await analyzerTagsRun(spec.analyzer.dir)
    this.tagged = aviaryAnalyzer && this.run !== null
    if (!(await this.endEarlierAnalyses(signal))) {
      if (spec.earlierRunMayLive && !aviaryAnalyzer) {
        throw new Error('this task\'s earlier attempt was cut off on a machine that is never reverted, and its analyzer may still ' +
          `run in the guest: the ${info.kind} agent cannot end it (no /reset) and Cuckoo's analyzer cannot be told apart from this ` +
          'run\'s; restart the guest (or use Aviary\'s agent), then reschedule the task')
      }
      // A physical machine's agent keeps the last run's status ('complete'), which would end this
      // run at the first poll. Cuckoo reboots physical machines instead; Aviary resets the status.
      const st = (await this.call('reading the agent\'s status', 'GET', ROUTES.status, undefined, SMALL_MS, signal)).status
      if (st !== null && st !== undefined && st !== 'init') {
        this.log(`the agent still reports '${String(st).slice(0, 80)}' from a previous analysis: resetting it to 'init'`)
        await this.call('resetting the agent\'s status', 'POST', ROUTES.status, this.form({ status: 'init' }), SMALL_MS, signal)
      }
    }

    const environ = (await this.call('reading the guest\'s environment', 'GET', ROUTES.environ, undefined, SMALL_MS, signal)).environ
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
      const mk = await this.exchange({ method: 'POST', path: ROUTES.mkdir, body: this.form({ dirpath: layout.analyzerDir }), timeoutMs: SMALL_MS, deadlineMs: SMALL_MS, signal, step: 'creating the analyzer folder' })
      if (mk.status === 200 || (layout.fixedName && mk.status === 500)) break
      if (mk.status !== 500 || attempt === 3) throw new Error(`creating the analyzer folder ${layout.analyzerDir}: ${agentErrorText(mk)}${platformHint(spec, mk)}`)
      layout = guestLayout(spec.platform, env, null)
    }
    const dir = layout.analyzerDir
    this.confDir = { platform: spec.platform, dir }
    this.log(`uploading the analyzer (${zip.length} bytes) to ${dir}`)
    // Uploads: an idle limit, no deadline of their own (a large sample on a slow link keeps
    // moving); the run's deadline bounds them.
    await this.call('uploading the analyzer', 'POST', ROUTES.extract, {
      kind: 'multipart', parts: [{ name: 'dirpath', value: dir }, { name: 'zipfile', filename: 'zipfile', data: zip }]
    }, UPLOAD_MS, signal, undefined)
    await this.call('uploading analysis.conf', 'POST', ROUTES.store, {
      kind: 'multipart',
      parts: [{ name: 'filepath', value: guestJoin(spec.platform, dir, 'analysis.conf') },
        { name: 'file', filename: 'file', data: Buffer.from(analysisConf(spec, this.run), 'utf8') }]
    }, UPLOAD_MS, signal, undefined)

    if (spec.caCert) {
      await this.call('uploading the proxy\'s CA certificate', 'POST', ROUTES.store, {
        kind: 'multipart',
        parts: [{ name: 'filepath', value: guestJoin(spec.platform, dir, TRUSTED_CA_FILE) }, { name: 'file', filename: 'file', path: spec.caCert }]
      }, UPLOAD_MS, signal, undefined)
      // Without it a Linux guest still trusts the CA through its bundle, not through its CA folder.
      const hash = await subjectHash(spec.caCert).catch((err: unknown) => {
        this.log(`no subject hash for the proxy's CA (${errMessage(err)}): the guest's OpenSSL CA folder will not list it`)
        return null
      })
      if (hash !== null) {
        await this.call('uploading the proxy\'s CA subject hash', 'POST', ROUTES.store, {
          kind: 'multipart',
          parts: [{ name: 'filepath', value: guestJoin(spec.platform, dir, TRUSTED_CA_HASH_FILE) }, { name: 'file', filename: 'file', data: Buffer.from(`${hash}\n`) }]
        }, UPLOAD_MS, signal, undefined)
      }
    }

    // Cuckoo's prepare_guest callback (the reboot auxiliary) runs before the sample upload.
    for (const f of spec.pushFiles) {
      const parent = guestDirname(f.guestPath)
      this.log(`putting back ${f.guestPath}`)
      // Cuckoo's agent answers 500 when the folder exists; the /store below is what must succeed.
      if (parent) await this.exchange({ method: 'POST', path: ROUTES.mkdir, body: this.form({ dirpath: parent }), timeoutMs: SMALL_MS, deadlineMs: SMALL_MS, signal, step: 'creating a folder' })
      await this.call(`putting back ${f.guestPath}`, 'POST', ROUTES.store, {
        kind: 'multipart', parts: [{ name: 'filepath', value: f.guestPath }, { name: 'file', filename: 'file', path: f.localPath }]
      }, UPLOAD_MS, signal, undefined)
    }

    if (spec.category === 'file' || spec.category === 'archive') {
      const local = spec.file?.localPath ?? spec.target
      const guestPath = guestJoin(spec.platform, layout.tempDir, guestFileName(spec.file?.name ?? spec.target))
      this.log(`uploading the sample to ${guestPath}`)
      await this.call('uploading the sample', 'POST', ROUTES.store, {
        kind: 'multipart', parts: [{ name: 'filepath', value: guestPath }, { name: 'file', filename: 'sample.bin', path: local }]
      }, UPLOAD_MS, signal, undefined)
    }

    await this.startAnalyzer(spec, info, dir, signal)
    return info
  }

  /**
   * Tells Aviary's analyzer how long it has left (Extend, Finish now: DEADLINE_FILE). Does nothing
   * for Cuckoo's analyzer, which never reads it, or before the analyzer folder exists.
   */
  async tellDeadline(remainingMs: number, signal: AbortSignal | undefined): Promise<void> {
    if (!this.tagged || this.confDir === null) return
    const body = JSON.stringify({ seq: ++this.deadlineSeq, remaining_ms: Math.round(remainingMs) })
    await this.call('telling the analyzer its end', 'POST', ROUTES.store, {
      kind: 'multipart',
      parts: [{ name: 'filepath', value: guestJoin(this.confDir.platform, this.confDir.dir, DEADLINE_FILE) }, { name: 'file', filename: 'file', data: Buffer.from(body) }]
    }, SMALL_MS, signal)
  }

  /** analyzer.py → /execpy (any agent); analyzer.cjs → /execnode (Aviary's agent) or /execute `node ...`. */
  private async startAnalyzer(spec: GuestStartSpec, info: AgentInfo, dir: string, signal: AbortSignal | undefined): Promise<void> {
    const has = (name: string): Promise<boolean> => access(path.join(spec.analyzer.dir, name)).then(() => true, () => false)
    const win = isWindows(spec.platform)
    const step = 'starting the analyzer'
    // Aviary's agent follows the analyzer it starts and tags its death with the run (`run` field).
    const runField: Record<string, string> = this.run !== null && info.kind === 'aviary' ? { [RUN_FIELD]: this.run } : {}
    if (await has('analyzer.py')) {
      const script = guestJoin(spec.platform, dir, 'analyzer.py')
      if (info.features.includes('execpy')) {
        await this.call(step, 'POST', ROUTES.execpy, this.form({ filepath: script, async: 'yes', cwd: dir, ...runField }), SMALL_MS, signal)
      } else {
        // Cuckoo's fallback for agents without execpy.
        const python = win ? 'C:\\Python27\\pythonw.exe' : 'python'
        await this.call(step, 'POST', ROUTES.execute, this.form(this.executeFields(info, win, `${python} "${script}"`, dir)), SMALL_MS, signal)
      }
    } else if (await has('analyzer.cjs')) {
      const script = guestJoin(spec.platform, dir, 'analyzer.cjs')
      if (info.features.includes('execnode')) {
        await this.call(step, 'POST', ROUTES.execnode, this.form({ filepath: script, async: 'yes', cwd: dir, ...runField }), SMALL_MS, signal)
      } else {
        await this.call(step, 'POST', ROUTES.execute, this.form(this.executeFields(info, win, `node "${script}"`, dir)), SMALL_MS, signal)
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

  /** Polls GET /status until the analyzer reports, the time is up, the agent misbehaves, or the signal aborts (status-poll.ts). */
  waitForCompletion(o: PollOptions): Promise<Completion> {
    return pollUntilFinal({
      ip: this.ip, port: this.port, pollMs: this.pollMs, log: this.log, run: this.tagged ? this.run : null,
      watch: (p) => { this.current = p }
    }, o, this.history)
  }
}

/** When the agent refused a path of the other platform's form, the machine's platform is likely wrong. */
function platformHint(spec: GuestStartSpec, res: AgentResponse): string {
  return res.status === 400 && /not an absolute path on this guest/.test(agentErrorText(res))
    ? ` (is the machine's platform '${spec.platform}' in machines.json right?)`
    : ''
}
