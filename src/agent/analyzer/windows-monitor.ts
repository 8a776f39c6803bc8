// The Windows analyzer's process, connection and registry monitor.
//
// HelperMonitor runs helper.exe (src/agent/windows-helper/, shipped next to analyzer.cjs)
// before the sample starts, with the analyzer's own pid as its anchor: the helper reports every
// process descending from the analyzer, its exits and TCP connections, and registry values
// written or deleted under the autorun keys, as JSON lines on a pipe (C programs under Wine write
// to a pipe fine; it is node.exe's own stdout that fails there). This class keeps the sample's
// tree (the started pid and its descendants, not the analyzer's other children) and says the tree
// has ended only after a grace period in which the helper could still report a child that was
// starting (Wine shows a starting process late).
//
// PowerShellMonitor is the fallback for an analyzer built without mingw-w64: one PowerShell loop
// printing processes (CIM) and TCP connections every 500 ms. PowerShell is a stub under Wine, so
// it is untested here; on Windows it costs ~300 ms of CPU per poll and misses short-lived children.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { ConnectionRecord, ProcessRecord, RegistryRecord } from '../../guest-protocol/behavior.js'
import type { Monitor } from './monitor.js'
import { LineSplitter, parseHelperLine, type HelperEvent } from './windows-helper-lines.js'

/** Shipped next to analyzer.cjs (scripts/build-agent.mjs WINDOWS_HELPER). A name that says
 * nothing of Aviary: it is in the analyzer folder and in the process list the sample can read. */
export const HELPER_EXE = 'helper.exe'

/** What one run keeps at most, whatever the helper (or the sample feeding it) says. */
const MAX_PROCESSES = 10_000
const MAX_CONNECTIONS = 4096
const MAX_REGISTRY = 8192
/** After the tree's last known process ended, how long a late-reported child may still appear. */
const GRACE_MS = 600

export interface WindowsMonitor extends Monitor {
  /** The name in the analyzer record's `monitors`. */
  readonly kind: 'winmon' | 'wmi'
  /**
   * The sample's pid, once it was started (the helper runs before it), with what the analyzer
   * knows of it: the process it stands for if the monitor never saw it (it ended between polls).
   */
  setRoot(pid: number, known: { command_line: string; exe: string }): void
  /** The started process has ended (the analyzer's own child handle says so). */
  rootExited(code: number | null): void
  registryRecords(): RegistryRecord[]
  /** Resolves once the monitor watches (the helper said hello), or after `ms`. */
  ready(ms?: number): Promise<void>
  /** Stops and waits (at most `ms`) for the monitor's last poll. */
  finish(ms?: number): Promise<void>
  /** Problems worth a log line (the helper died, limits reached). */
  notes(): string[]
}

/** The helper when it was shipped (built with mingw), else PowerShell. */
export function windowsMonitor(analyzerDir: string): WindowsMonitor {
  const exe = join(analyzerDir, HELPER_EXE)
  return existsSync(exe) ? new HelperMonitor(exe, process.pid) : new PowerShellMonitor()
}

export class HelperMonitor implements WindowsMonitor {
  readonly kind = 'winmon'
  private readonly all = new Map<number, ProcessRecord>()
  private readonly conns = new Map<string, ConnectionRecord>()
  private readonly registry: RegistryRecord[] = []
  private readonly problems: string[] = []
  private child: ChildProcess | null = null
  private root = -1
  private known: ProcessRecord | null = null
  private lastExit = 0
  private ended: Promise<void> = Promise.resolve()
  private running = false
  private hello: (() => void) | null = null
  private said = false

  constructor(private readonly exe: string, private readonly anchor: number, private readonly args: string[] = []) {}

  start(): void {
    const child = spawn(this.exe, ['--parent', String(this.anchor), '--stdin', ...this.args], { stdio: ['pipe', 'pipe', 'ignore'], windowsHide: true })
    this.child = child
    this.running = true
    const splitter = new LineSplitter((line) => {
      const e = parseHelperLine(line)
      if (e !== null) this.apply(e)
    })
    child.stdout?.setEncoding('utf8')
    child.stdout?.on('data', (s: string) => splitter.push(s))
    child.stdin?.on('error', () => {})
    this.ended = new Promise((done) => {
      child.once('error', (err) => {
        this.problems.push(`the helper ${this.exe} did not start: ${err.message}`)
        this.running = false
        done()
      })
      child.once('close', (code) => {
        if (this.running && code !== 0) this.problems.push(`the helper exited with code ${code ?? '?'} before the end`)
        this.running = false
        if (splitter.dropped > 0) this.problems.push(`${splitter.dropped} over-long helper line(s) skipped`)
        done()
      })
    })
  }

  ready(ms = 5000): Promise<void> {
    if (this.said || !this.running) return Promise.resolve()
    return new Promise((done) => {
      const timer = setTimeout(() => {
        this.problems.push(`the helper did not answer within ${ms} ms`)
        done()
      }, ms)
      const finish = (): void => { clearTimeout(timer); done() }
      this.hello = finish
      void this.ended.then(finish)
    })
  }

  setRoot(pid: number, known: { command_line: string; exe: string }): void {
    this.root = pid
    this.lastExit = Date.now()
    this.known = { type: 'process', pid, ppid: this.anchor, command_line: known.command_line, exe: known.exe, first_seen: Date.now(), exited: null }
  }

  rootExited(code: number | null): void {
    if (this.known !== null && this.known.exited === null) {
      this.known.exited = Date.now()
      this.known.exit_code = code
      this.lastExit = Date.now()
    }
  }

  stop(): void {
    this.child?.stdin?.end()
  }

  async finish(ms = 5000): Promise<void> {
    if (this.child === null) return
    this.running = false
    this.child.stdin?.end()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.ended, new Promise<void>((r) => { timer = setTimeout(r, ms) })])
    clearTimeout(timer)
    if (this.child.exitCode === null) {
      this.problems.push(`the helper did not finish within ${ms} ms`)
      this.child.kill()
    }
  }

  notes(): string[] {
    return [...this.problems]
  }

  alive(): number[] {
    const tree = this.tree()
    // A helper that died (a sample may end it) reports no more exits: the OS is asked instead.
    const gone = this.child === null || this.child.exitCode !== null || this.child.signalCode !== null
    const live = tree.filter((p) => p.exited === null && (!gone || pidAlive(p.pid))).map((p) => p.pid)
    if (live.length > 0) return live
    // Nothing known alive: until the grace has passed since the last end (or since the start,
    // before the helper has even seen the root), a child may still be reported.
    if (this.root >= 0 && Date.now() - this.lastExit < GRACE_MS && this.child?.exitCode === null) return [this.root]
    return []
  }

  processes(): ProcessRecord[] {
    return this.tree()
  }

  connectionRecords(): ConnectionRecord[] {
    const pids = new Set(this.tree().map((p) => p.pid))
    return [...this.conns.values()].filter((c) => c.pid !== null && pids.has(c.pid))
  }

  registryRecords(): RegistryRecord[] {
    return [...this.registry]
  }

  /**
   * The root and every process whose parent is in the tree (parents are always reported first).
   * A root the helper never saw (it ended between two polls) is the one the analyzer started.
   */
  private tree(): ProcessRecord[] {
    const root = this.all.get(this.root) ?? this.known
    if (root === null) return []
    const out = [root]
    const inTree = new Set([root.pid])
    for (const p of this.all.values()) {
      if (p === root || !inTree.has(p.ppid) || p.first_seen < root.first_seen) continue
      inTree.add(p.pid)
      out.push(p)
    }
    return out
  }

  private apply(e: HelperEvent): void {
    switch (e.t) {
      case 'hello':
        this.said = true
        this.hello?.()
        return
      case 'process': {
        if (this.all.size >= MAX_PROCESSES && !this.all.has(e.pid)) return
        // A pid seen again belongs to a new process: the earlier one has ended (Windows reuses pids).
        this.all.delete(e.pid)
        this.all.set(e.pid, {
          type: 'process', pid: e.pid, ppid: e.ppid, command_line: e.cmd ?? '', exe: e.exe,
          first_seen: e.created ?? e.time, exited: null
        })
        return
      }
      case 'exit': {
        const p = this.all.get(e.pid)
        if (p === undefined || p.exited !== null) return
        p.exited = e.time
        p.exit_code = e.code
        this.lastExit = Date.now()
        return
      }
      case 'connection': {
        const key = `${e.proto}|${e.src}|${e.sport}|${e.dst}|${e.dport}|${e.pid}`
        if (this.conns.size < MAX_CONNECTIONS && !this.conns.has(key)) {
          this.conns.set(key, { type: 'connection', proto: e.proto, src: e.src, sport: e.sport, dst: e.dst, dport: e.dport, pid: e.pid, time: e.time })
        }
        return
      }
      case 'registry':
        if (this.registry.length < MAX_REGISTRY) {
          const r: RegistryRecord = { type: 'registry', op: e.op, key: e.key, name: e.name, pid: null, time: e.time }
          if (e.op === 'written') r.data = e.data
          this.registry.push(r)
        }
        return
      case 'limit':
        this.problems.push(`the helper reached its limit of ${e.max} ${e.what}`)
        return
      default:
    }
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

const SCRIPT = [
  '$ErrorActionPreference = "SilentlyContinue"',
  'while ($true) {',
  '  $p = @(Get-CimInstance Win32_Process | ForEach-Object { @($_.ProcessId, $_.ParentProcessId, $_.CommandLine, $_.ExecutablePath) })',
  '  $c = @(Get-NetTCPConnection | ForEach-Object { @($_.LocalAddress, $_.LocalPort, $_.RemoteAddress, $_.RemotePort, $_.OwningProcess) })',
  '  [Console]::Out.WriteLine((ConvertTo-Json -Compress -Depth 3 @{ p = $p; c = $c }))',
  '  Start-Sleep -Milliseconds 500',
  '}'
].join('\n')

type Row = [number, number, string | null, string | null]
type ConnRow = [string, number, string, number, number]

export class PowerShellMonitor implements WindowsMonitor {
  readonly kind = 'wmi'
  private readonly tracked = new Map<number, ProcessRecord>()
  private readonly conns = new Map<string, ConnectionRecord>()
  private ps: ChildProcess | null = null
  private seen = false
  private root = -1

  start(): void {
    this.ps = spawn('powershell.exe', ['-NoProfile', '-NonInteractive', '-Command', SCRIPT], { stdio: ['ignore', 'pipe', 'ignore'], windowsHide: true })
    this.ps.on('error', () => {})
    if (this.ps.stdout !== null) createInterface({ input: this.ps.stdout }).on('line', (line) => this.update(line.slice(0, 4 << 20)))
  }

  setRoot(pid: number): void {
    this.root = pid
  }

  rootExited(): void {}

  stop(): void {
    this.ps?.kill()
    this.ps = null
  }

  ready(): Promise<void> {
    return Promise.resolve()
  }

  finish(): Promise<void> {
    this.stop()
    return Promise.resolve()
  }

  notes(): string[] {
    return [`no ${HELPER_EXE} next to the analyzer (built without mingw-w64): processes are polled through PowerShell`]
  }

  alive(): number[] {
    // Until PowerShell's first answer (1-2 s), count the root as alive so the run does not end early.
    if (!this.seen) return [this.root]
    return [...this.tracked.values()].filter((p) => p.exited === null).map((p) => p.pid)
  }

  processes(): ProcessRecord[] {
    return [...this.tracked.values()]
  }

  connectionRecords(): ConnectionRecord[] {
    return [...this.conns.values()]
  }

  registryRecords(): RegistryRecord[] {
    return []
  }

  private update(line: string): void {
    let data: { p?: unknown[]; c?: unknown[] }
    try {
      data = JSON.parse(line) as { p?: unknown[]; c?: unknown[] }
    } catch {
      return
    }
    this.seen = true
    const now = Date.now()
    const rows = (Array.isArray(data.p) ? data.p : []).filter(Array.isArray) as Row[]
    const live = new Set(rows.map((r) => r[0]))
    for (const p of this.tracked.values()) if (p.exited === null && !live.has(p.pid)) p.exited = now
    let grew = true
    while (grew && this.tracked.size < MAX_PROCESSES) {
      grew = false
      for (const [pid, ppid, cmd, exe] of rows) {
        if (this.tracked.has(pid) || typeof pid !== 'number') continue
        const parent = this.tracked.get(ppid)
        if (pid !== this.root && (parent === undefined || parent.exited !== null)) continue
        this.tracked.set(pid, { type: 'process', pid, ppid, command_line: String(cmd ?? '').slice(0, 16384), exe: exe === null ? null : String(exe).slice(0, 4096), first_seen: now, exited: null })
        grew = true
      }
    }
    for (const c of (Array.isArray(data.c) ? data.c : []).filter(Array.isArray) as ConnRow[]) {
      const [src, sport, dst, dport, pid] = c
      if (!this.tracked.has(pid) || dport === 0 || this.conns.size >= MAX_CONNECTIONS) continue
      const key = `${src}|${sport}|${dst}|${dport}|${pid}`
      if (!this.conns.has(key)) this.conns.set(key, { type: 'connection', proto: 'tcp', src, sport, dst, dport, pid, time: now })
    }
  }
}
