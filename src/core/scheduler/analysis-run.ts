// One task on one machine, from the locked machine to `completed` (ARCHITECTURE.md, "The story
// of a task"), in the order Cuckoo 2's AnalysisManager does it: analysis folder → result
// server learns the guest's IP → capture → revert and start the VM → screenshots → the agent
// (analyzer, config, sample, start; guest-phase.ts, under one deadline) → wait for completion or
// the critical timeout → then, always:
// screenshots and capture stopped, memory dumped if asked, VM stopped, guest unregistered,
// machine unlocked, task completed or failed with the reason. Every stage goes to the timeline.
import path from 'node:path'
import { existsSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import type { TaskRow } from '../db/tasks.repository'
import type { MachineRow } from '../db/machines.repository'
import type { TimelineStage } from '../../shared/api/schemas'
import type { Sample } from '../../shared/api/schemas'
import type { DriverMachine, MachineDriver } from '../machinery/driver'
import { GuestSession, type GuestStartSpec } from '../guest/guest-session'
import { analyzerTagsRun } from '../guest/analyzer-zip'
import { AgentError } from '../guest/agent-http'
import { GuestPhase, type Ending } from './guest-phase'
import { TaskNetwork } from '../network/task-network'
import { rooterOwner } from '../network/rooter-client'
import { chooseRoute, unroutedNote } from '../network/task-route'
import { AGENT_PORT } from '../../guest-protocol/agent-api'
import { startCapture, type Capture } from '../capture/tcpdump'
import { startScreenshots } from '../capture/screenshots'
import { prepareAnalysisFolder, rebootFiles, writeTaskJson, writeTaskJsonNow } from './analysis-folder'
import { ARTIFACTS } from '../storage/layout'
import { CURRENT_SNAPSHOT, ensureMemoryBaseline } from './memory-baseline'
import { guestLine, TaskLog } from './task-log'
import type { RunnerDeps } from './run-deps'
import { parseOptions } from '../guest/analysis-conf'
import { openRunConsole } from './run-console'

export class AnalysisRun {
  private log!: TaskLog
  private readonly errors: string[] = []
  private guestId: number | null = null
  private registered = false
  private capture: Capture | null = null
  private captureStarting: Promise<void> | null = null
  private captureLater = false
  private shots: { stop(): Promise<number> } | null = null
  private vmStarted = false
  /** The guest's part of the run, once the machine is being started. */
  private phase: GuestPhase | null = null
  /** The run's route (and proxy), on before the machine starts. */
  private net: TaskNetwork | null = null
  /** Set when the route was lost mid-run: the run stops at once and fails with this reason. */
  private routeLost: string | null = null
  private readonly lostRoute = new AbortController()
  /** The service stopping, or the route lost: what every wait of the run gives up on. */
  private readonly runSignal: AbortSignal
  private readonly dm: DriverMachine
  private driver!: MachineDriver
  /** The machine's live console while it runs; closed first at teardown. */
  private console: { close(reason: string): void } | null = null
  /** Ends the API's hold on this run's clock (Extend, Finish now). */
  private releaseControl: (() => void) | null = null
  /** Cuckoo's and CAPE's `interactive=1`: the machine is kept until the end or Finish now. */
  private readonly interactive: boolean

  constructor(
    private readonly d: RunnerDeps,
    private readonly task: TaskRow,
    private readonly machine: MachineRow,
    private readonly signal: AbortSignal
  ) {
    this.runSignal = AbortSignal.any([signal, this.lostRoute.signal])
    this.interactive = /^(1|yes|true|on)$/i.test(parseOptions(task.options).get('interactive') ?? '')
    this.dm = {
      name: machine.name, label: machine.label, ip: machine.ip, snapshot: machine.snapshot, platform: machine.platform,
      interface: machine.interface, options: JSON.parse(machine.options) as string[]
    }
  }

  private get id(): number {
    return this.task.id
  }

  private stage(stage: TimelineStage, message: string | null = null): void {
    this.d.timeline.add(this.id, stage, message)
    this.log.info(message ? `${stage.replace(/_/g, ' ')}: ${message}` : stage.replace(/_/g, ' '))
  }

  async execute(): Promise<void> {
    const sample = this.task.sample_id === null ? undefined : this.d.samples.get(this.task.sample_id)
    await prepareAnalysisFolder(this.d.layout, this.id, sample?.sha256 ?? null)
    this.log = new TaskLog(this.d.layout.artifact(this.id, ARTIFACTS.analysisLog))
    let ending: Ending
    try {
      this.driver = this.d.driver(this.machine.driver)
      this.stage('machine_locked', `${this.machine.name} (${this.machine.driver}, label ${this.machine.label})`)
      await this.writeTaskJson()
      ending = await this.analyze(sample)
    } catch (err) {
      ending = this.signal.aborted ? { kind: 'interrupted' } : { kind: 'failed', reason: failure(err) }
    }
    if (this.routeLost !== null && !this.signal.aborted) ending = { kind: 'failed', reason: this.routeLost }
    await this.teardown()
    this.finish(ending)
    await this.log.close()
  }

  private async analyze(sample: Sample | undefined): Promise<Ending> {
    const s = this.d.settings()
    const m = this.machine
    const rsPort = await this.d.resultServer.listen(m.resultserver_ip, m.resultserver_port).catch((err: unknown) => {
      throw new Error(`the result server cannot listen on ${m.resultserver_ip}:${m.resultserver_port}: ${message(err)} ` +
        `(is the machines' network up? run aviary doctor)`)
    })
    const analyzer = this.analyzerFolder()
    const phase = new GuestPhase({
      ip: m.ip, log: this.log, signal: this.runSignal, stage: (st, msg) => this.stage(st, msg), note: (msg) => this.note(msg),
      errors: this.errors, guestStatus: (st) => this.d.guests.setStatus(this.guestId!, st),
      timelineError: (msg) => this.d.timeline.add(this.id, 'error', msg),
      clock: (clock) => {
        this.releaseControl = this.d.runControls.set(this.id, { clock, interactive: this.interactive, timeline: (st, msg) => this.stage(st, msg) })
      }
    })
    this.phase = phase
    this.d.resultServer.addTask(m.ip, {
      taskId: this.id,
      dir: this.d.layout.analysis(this.id),
      run: (await analyzerTagsRun(analyzer.dir)) ? phase.runId : null,
      onLogLine: (line) => this.log.guest(line),
      logLineBytes: (line) => Buffer.byteLength(guestLine(line)),
      onUpload: (u) => this.log.info(`received ${u.path} (${u.bytes} bytes${u.truncated ? ', truncated' : ''})`),
      onRefused: (why) => phase.foreign(`the result server refused ${why}`),
      onCapReached: (cap) => phase.capReached(cap)
    })
    this.registered = true
    if (!this.driver.capabilities.revert) await this.endEarlierFirst()
    // tcpdump takes a moment to start listening; the revert does not wait for it, the agent does:
    // nothing of the sample can run before the host has talked to the agent.
    this.captureStarting = this.startCapture(rsPort, false)
    await this.routeNetwork(rsPort)

    this.guestId = this.d.guests.start(this.id, m)
    const caps = this.driver.capabilities
    this.stage('reverting', caps.revert ? `snapshot ${m.snapshot ?? '(current)'}`
      : caps.power ? `${m.driver} machine: no snapshot, starting it` : `${m.driver} machine: waiting for its agent`)
    this.vmStarted = true // from here on the VM may run: teardown stops it whatever happens
    await this.driver.start(this.dm, this.runSignal)
    this.d.machines.setStatus(m.id, 'running')
    this.stage('started', this.interactive ? 'interactive: the machine is kept until the end of the timeout or Finish now' : null)
    if (this.task.memory === 1 && caps.memoryDump && caps.revert) {
      await this.step('memory baseline', async () => {
        await ensureMemoryBaseline({
          driver: this.driver, machine: this.dm, file: this.d.layout.memoryBaseline(m.name, m.snapshot ?? CURRENT_SNAPSHOT),
          into: this.d.layout.artifact(this.id, ARTIFACTS.memoryBaseline), log: (msg) => this.log.info(msg)
        })
      })
    }
    if (this.driver.capabilities.console) {
      this.console = openRunConsole(this.d, { task: this.id, machine: m.name, endpoint: () => this.driver.consoleEndpoint(this.dm), log: this.log })
    }
    if (this.captureLater) {
      await this.captureStarting
      this.captureStarting = this.startCapture(rsPort, true)
    }
    if (this.driver.capabilities.screenshots && s.screenshotInterval > 0) {
      this.shots = startScreenshots({
        grab: () => this.driver.screenshot(this.dm),
        dir: this.d.layout.artifact(this.id, ARTIFACTS.shots),
        intervalSeconds: s.screenshotInterval,
        log: (msg) => this.log.warn(msg)
      })
    }

    const timeout = this.task.timeout || s.timeouts.default
    if (this.dm.options.includes('noagent')) {
      await sleep(timeout * 1000, undefined, { signal: this.runSignal })
      this.stage('finished', 'noagent machine: ran for the timeout')
      return { kind: 'completed' }
    }
    await this.captureStarting
    return phase.run({ timeout, critical: s.timeouts.critical, interactive: this.interactive, spec: () => this.startSpec(sample, timeout, rsPort, analyzer) })
  }

  /**
   * A machine that is never reverted (physical) may still run an earlier analysis: this task's
   * first attempt, cut off when the service was killed, or a run whose end could not reach the
   * agent. Its agent is asked to end them before this run's capture, route and proxy start, so
   * that nothing they still send is recorded as this run's (the guest phase asks again before the
   * analyzer goes in). An agent that has not done so within 10 s is left to the guest phase.
   */
  private async endEarlierFirst(): Promise<void> {
    const session = new GuestSession({ ip: this.machine.ip, port: AGENT_PORT, log: (msg) => this.log.info(msg) })
    const signal = AbortSignal.any([this.runSignal, AbortSignal.timeout(10_000)])
    try {
      await session.waitAvailable({ timeoutMs: 5_000, signal })
      await session.endEarlierAnalyses(signal)
    } catch (err) {
      if (this.runSignal.aborted) throw err
      this.log.info(`earlier analyses not ended before the capture (${message(err)}): the guest phase asks again`)
    }
  }

  /**
   * Cuckoo's route_network: the task's route on, through the rooter, before the machine starts,
   * and the route that runs shown on the task. Decided now, from machines.json as it is now: a
   * route not offered (any more) runs on none, with the reason in errors and on the timeline. No
   * `routing` in machines.json: nothing is routed, and what cannot be honoured so fails the run.
   */
  private async routeNetwork(rsPort: number): Promise<void> {
    const routing = this.d.settings().routing
    if (routing === null) {
      chooseRoute(this.task.options, null) // throws for what an unrouted run cannot honour
      const unrouted = unroutedNote(this.task.options)
      if (unrouted !== null) this.note(unrouted)
      return
    }
    await this.d.routesReady
    const m = this.machine
    this.net = new TaskNetwork({
      routing, options: this.task.options, guest: m.ip, resultserver: { ip: m.resultserver_ip, port: rsPort },
      mitmConf: this.d.layout.mitmConf, analysisDir: this.d.layout.analysis(this.id), log: (msg) => this.log.info(msg),
      owner: rooterOwner(this.d.layout.root),
      onLost: (reason) => {
        this.routeLost = reason
        this.lostRoute.abort()
      }
    })
    for (const why of [this.net.choice.fallback, this.net.choice.mitmDropped]) if (why !== null) this.note(why)
    this.d.tasks.setRoute(this.id, this.net.route)
    await this.net.start()
  }

  private analyzerFolder(): GuestStartSpec['analyzer'] {
    const analyzer = this.d.settings().analyzers[this.machine.platform]
    return analyzer ? { dir: analyzer.path, monitor: analyzer.monitor } : { dir: this.d.analyzerDir, monitor: null }
  }

  private async startSpec(sample: Sample | undefined, timeout: number, rsPort: number, analyzer: GuestStartSpec['analyzer']): Promise<GuestStartSpec> {
    const t = this.task
    const reboot = t.package === 'reboot' && t.custom !== null && /^\d+$/.test(t.custom)
    return {
      taskId: t.id,
      category: t.category as GuestStartSpec['category'],
      target: t.target,
      package: t.package,
      options: t.options,
      timeout,
      // interactive=1 keeps the analyzer watching until the end, as the host keeps the machine.
      enforceTimeout: t.enforce_timeout === 1 || this.interactive,
      terminateProcesses: false,
      // The clock the user asked for, else now (Cuckoo sent the submission time, a stale clock
      // after a long queue; CAPE refreshes it at start, and so do we).
      clock: t.clock !== t.added_on ? new Date(t.clock.replace(' ', 'T')) : new Date(),
      ...(sample ? { file: { name: path.basename(t.target), type: sample.file_type, peExports: [], localPath: t.target } } : {}),
      resultserver: { ip: this.machine.resultserver_ip, port: rsPort },
      analyzer,
      pushFiles: reboot ? await rebootFiles(this.d.layout, Number(t.custom)) : [],
      platform: this.machine.platform,
      // attempts counts claims; a clean stop gives its attempt back, so a second one means a crash.
      earlierRunMayLive: !this.driver.capabilities.reset && this.d.queue.attempts(t.id) > 1,
      caCert: this.net?.caCert ?? null
    }
  }

  /**
   * `final` false: the first try, while the VM reverts. A VM's own tap interface (vnetN, or a
   * named tap) exists only once the VM runs, so a missing interface is tried again after start.
   */
  private async startCapture(rsPort: number, final: boolean): Promise<void> {
    const m = this.machine
    if (!m.interface) {
      this.log.warn('the machine has no network interface configured: no packet capture')
      return
    }
    try {
      this.capture = await startCapture({
        tcpdump: this.d.settings().tcpdump, iface: m.interface, guestIp: m.ip, agentPort: AGENT_PORT,
        resultserver: { ip: m.resultserver_ip, port: rsPort }, file: this.d.layout.artifact(this.id, ARTIFACTS.pcap)
      })
    } catch (err) {
      if (!final && !existsSync(path.join('/sys/class/net', m.interface))) {
        this.captureLater = true
        return
      }
      this.note(`packet capture did not start: ${message(err)}`)
    }
  }

  /** Always runs, in Cuckoo's order; each step's failure is noted and the next still runs. */
  private async teardown(): Promise<void> {
    // The analyst's view ends first: nothing typed from here on reaches a guest being torn down.
    this.releaseControl?.()
    this.console?.close('the analysis ended')
    await this.captureStarting
    if (this.shots) await this.step('stopping screenshots', async () => {
      const n = await this.shots!.stop()
      this.log.info(`${n} screenshots kept`)
    })
    if (this.capture) {
      await this.step('packet capture', () => this.capture!.stop())
      const st = this.capture.stats()
      if (st !== undefined) {
        this.log.info(`packet capture stopped: ${st.captured ?? '?'} packets in dump.pcap; ${st.waited === 'counts'
          ? `tcpdump's counts said it was complete after ${st.waitedMs} ms` : `waited ${st.waitedMs} ms without tcpdump's counts`}`)
        if ((st.unwritten ?? 0) > 0) this.log.warn(`packet capture: ${st.unwritten} packets the kernel took were still not written by tcpdump when it was stopped; they are not in dump.pcap`)
        if ((st.droppedByKernel ?? 0) > 0) this.log.warn(`packet capture: the kernel dropped ${st.droppedByKernel} packets (capture ring full)`)
      }
    }
    if (this.vmStarted && this.task.memory === 1) {
      await this.step('memory dump', async () => {
        if (!this.driver.capabilities.memoryDump) throw new Error(`the ${this.machine.driver} driver cannot dump a machine's memory`)
        const file = this.d.layout.artifact(this.id, ARTIFACTS.memoryDump)
        await this.driver.dumpMemory(this.dm, file)
        this.stage('memory_dumped', `${(await stat(file)).size} bytes`)
      })
    }
    if (this.phase !== null && !this.driver.capabilities.reset) {
      // Never reset: what this run left running in the guest is ended now (Aviary's agent).
      await this.step('ending the analysis in the guest', () => this.phase!.endInGuest())
    }
    if (this.vmStarted) {
      if (this.guestId !== null) this.d.guests.setStatus(this.guestId, 'stopping')
      await this.step('stopping the machine', async () => {
        await this.driver.stop(this.dm)
        this.stage('machine_stopped', null)
      })
      await this.driver.state(this.dm).then((st) => this.d.machines.setStatus(this.machine.id, st), () => undefined)
    }
    if (this.net !== null) await this.step('turning the route off', () => this.net!.stop())
    if (this.guestId !== null) this.d.guests.stop(this.guestId)
    if (this.registered) await this.step('closing the result server for the guest', () => this.d.resultServer.removeTask(this.machine.ip))
    this.d.machines.unlock(this.machine.id)
  }

  private finish(ending: Ending): void {
    const q = this.d.queue
    if (ending.kind === 'interrupted') {
      q.move(this.id, 'running', 'pending', { requeue: true, refund: true })
      this.d.timeline.add(this.id, 'interrupted', 'the service stopped during the analysis; the task is queued again')
      return
    }
    if (ending.kind === 'failed') this.errors.unshift(ending.reason)
    for (const e of this.errors) q.addError(this.id, e)
    const to = ending.kind === 'completed' ? 'completed' : 'failed_analysis'
    if (q.move(this.id, 'running', to, { completed: true })) {
      this.stage(ending.kind === 'completed' ? 'completed' : 'failed', ending.kind === 'failed' ? ending.reason : null)
      const json = this.d.tasks.viewJson(this.id)
      try {
        if (json !== undefined) writeTaskJsonNow(this.d.layout, this.id, json)
      } catch (err) {
        this.log.warn(`${ARTIFACTS.taskJson} not written: ${message(err)}`)
      }
    }
  }

  private note(msg: string): void {
    this.errors.push(msg)
    this.log.error(msg)
    this.d.timeline.add(this.id, 'error', msg)
  }

  private async step(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn()
    } catch (err) {
      this.note(`${what}: ${message(err)}`)
    }
  }

  private async writeTaskJson(): Promise<void> {
    const json = this.d.tasks.viewJson(this.id)
    if (json !== undefined) await writeTaskJson(this.d.layout, this.id, json).catch(() => undefined)
  }
}

function message(err: unknown): string {
  if (err instanceof Error) return err.name === 'AbortError' ? 'interrupted' : err.message
  return String(err)
}

/** A run's failure reason: an agent's answer that no agent gives is named as such. */
function failure(err: unknown): string {
  return err instanceof AgentError && err.kind === 'misbehaved' ? `the agent misbehaved: ${err.message}` : message(err)
}
