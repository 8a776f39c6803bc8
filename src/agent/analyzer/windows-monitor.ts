// Windows process and connection monitor: one long-lived PowerShell prints, every 500 ms, a JSON
// line with all processes (Win32_Process via CIM) and TCP connections (Get-NetTCPConnection);
// the sample's tree is followed from the started pid like on Linux. Starting PowerShell per poll
// would cost ~300 ms each time, hence one loop. UNTESTED here: there is no Windows guest in this
// repository's test setup, so this file is kept deliberately small.
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { ConnectionRecord, ProcessRecord } from '../../guest-protocol/behavior.js'
import type { Monitor } from './monitor.js'

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

export class WindowsMonitor implements Monitor {
  private readonly tracked = new Map<number, ProcessRecord>()
  private readonly conns = new Map<string, ConnectionRecord>()
  private ps: ChildProcess | null = null
  private seen = false

  constructor(private readonly root: number) {}

  start(): void {
    this.ps = spawn('powershell.exe', ['-NoProfile', '-NonInteractive', '-Command', SCRIPT], { stdio: ['ignore', 'pipe', 'ignore'], windowsHide: true })
    this.ps.on('error', () => {})
    if (this.ps.stdout !== null) createInterface({ input: this.ps.stdout }).on('line', (line) => this.update(line))
  }

  stop(): void {
    this.ps?.kill()
    this.ps = null
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

  private update(line: string): void {
    let data: { p?: unknown[]; c?: unknown[] }
    try {
      data = JSON.parse(line) as { p?: unknown[]; c?: unknown[] }
    } catch {
      return
    }
    this.seen = true
    const now = Date.now()
    const rows = (data.p ?? []).filter(Array.isArray) as Row[]
    const live = new Set(rows.map((r) => r[0]))
    for (const p of this.tracked.values()) if (p.exited === null && !live.has(p.pid)) p.exited = now
    let grew = true
    while (grew) {
      grew = false
      for (const [pid, ppid, cmd, exe] of rows) {
        if (this.tracked.has(pid)) continue
        const parent = this.tracked.get(ppid)
        if (pid !== this.root && (parent === undefined || parent.exited !== null)) continue
        this.tracked.set(pid, { type: 'process', pid, ppid, command_line: cmd ?? '', exe, first_seen: now, exited: null })
        grew = true
      }
    }
    for (const c of (data.c ?? []).filter(Array.isArray) as ConnRow[]) {
      const [src, sport, dst, dport, pid] = c
      if (!this.tracked.has(pid) || dport === 0) continue
      const key = `${src}|${sport}|${dst}|${dport}|${pid}`
      if (!this.conns.has(key)) this.conns.set(key, { type: 'connection', proto: 'tcp', src, sport, dst, dport, pid, time: now })
    }
  }
}
