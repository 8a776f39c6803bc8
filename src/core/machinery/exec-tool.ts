// Runs a hypervisor's command-line tool (virsh, VBoxManage) with an argument array and turns its
// failures into MachineErrors a user can read: the tool's own error lines, summarised, never a
// stack trace. Shared by the kvm and virtualbox drivers, which both drive their hypervisor this way
// for what no library binding offers (snapshots, screenshots, memory dumps).
import { execFile } from 'node:child_process'
import { MachineError } from './driver'

export interface ToolResult {
  stdout: string
  stderr: string
}

/** A failed tool run: `summary` is what the tool said went wrong, in one line. */
export class ToolError extends MachineError {
  constructor(readonly summary: string, readonly stderr: string, readonly code: number | string | null) {
    super(summary)
  }
}

/**
 * The lines that say what went wrong, without the noise around them: VBoxManage's
 * `VBoxManage: error: ` prefix and its Details/Context lines, virsh's `error: ` prefix and its
 * "failed to get domain" preamble when a more precise line follows.
 */
export function summariseStderr(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.replace(/^VBoxManage(?:\.exe)?: error: /, '').replace(/^error: /, '').trim())
    .filter((l) => l !== '' && !/^Details: code|^Context: "|^\d+%\.\.\./.test(l))
  return lines.slice(0, 2).join(': ').slice(0, 400)
}

/** Runs `file ...args`; rejects with a ToolError naming `what` and the tool's summarised stderr. */
export function runTool(file: string, args: string[], what: string, timeoutMs: number, signal?: AbortSignal): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 * 2 ** 20, signal, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (!err) {
        resolve({ stdout, stderr })
        return
      }
      const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string | null }
      let summary: string
      if (e.code === 'ENOENT') summary = `${what}: ${file} was not found`
      else if (e.name === 'AbortError') summary = `${what}: aborted`
      else if (e.killed) summary = `${what}: no answer within ${Math.round(timeoutMs / 1000)} s`
      else summary = `${what}: ${summariseStderr(stderr) || `exit code ${String(e.code)}`}`
      reject(new ToolError(summary, stderr, e.code ?? null))
    })
  })
}

/** Polls `probe` every `intervalMs` until it returns true; false once `timeoutMs` passed. */
export async function pollUntil(probe: () => Promise<boolean>, timeoutMs: number, signal?: AbortSignal, intervalMs = 250): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (signal?.aborted) throw new MachineError('aborted while waiting for the machine')
    if (await probe()) return true
    if (Date.now() >= deadline) return false
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, Math.max(1, deadline - Date.now()))))
  }
}
