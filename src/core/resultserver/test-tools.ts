// Test tools for the result server: a guest-side TCP client that connects from a chosen loopback
// source address (Linux routes all of 127/8 to lo, so 127.0.0.N stands for guest N), and a
// recorder of what the server reports. Used by result-server.test.ts and hostile.test.ts only.
import net, { type Socket } from 'node:net'
import { mkdir, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { TaskRegistration, UploadInfo } from './result-server'
import { RESULT_DIRS } from '../scheduler/analysis-folder'

/** The folders the engine makes before a run (analysis-folder.ts). */
export const FOLDERS = RESULT_DIRS

export function connectFrom(port: number, localAddress: string, host = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host, localAddress }, () => {
      s.off('error', reject)
      resolve(s)
    })
    s.once('error', reject)
  })
}

/** Resolves when the peer has closed the socket (or it errored); never rejects. */
export function closed(s: Socket): Promise<void> {
  return new Promise((resolve) => {
    if (s.destroyed) return resolve()
    s.once('close', () => resolve())
    s.on('error', () => undefined)
    s.resume() // the server sends nothing, but a read side that flows notices the FIN
  })
}

/** Connects, sends `parts` one write each, half-closes, and waits for the server to close. */
export async function send(port: number, localAddress: string, ...parts: (string | Buffer)[]): Promise<void> {
  const s = await connectFrom(port, localAddress)
  const done = closed(s)
  for (const p of parts) {
    if (s.destroyed) break
    await new Promise<void>((resolve) => s.write(p, () => resolve()))
  }
  s.end()
  await done
}

export async function waitUntil(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

export async function makeTaskDir(parent: string, name: string): Promise<string> {
  const dir = path.join(parent, name)
  for (const f of FOLDERS) await mkdir(path.join(dir, f), { recursive: true })
  return dir
}

export const makeTemp = (): Promise<string> => mkdtemp(path.join(tmpdir(), 'aviary-rs-'))

/** What the server told one task and the log. */
export class Recorder {
  readonly lines: string[] = []
  readonly uploads: UploadInfo[] = []
  readonly warnings: string[] = []
  readonly infos: string[] = []
  readonly refused: string[] = []
  readonly caps: number[] = []
  readonly log = {
    info: (m: string): void => { this.infos.push(m) },
    warn: (m: string): void => { this.warnings.push(m) }
  }

  /** `run`: the run id the task's analyzer must name on every connection (Aviary's analyzer). */
  task(taskId: number, dir: string, run: string | null = null): TaskRegistration {
    return {
      taskId, dir, run, onLogLine: (l) => this.lines.push(l), onUpload: (u) => this.uploads.push(u),
      onRefused: (why) => this.refused.push(why), onCapReached: (cap) => this.caps.push(cap)
    }
  }

  upload(p: string): UploadInfo | undefined {
    return this.uploads.find((u) => u.path === p)
  }

  warned(re: RegExp): boolean {
    return this.warnings.some((w) => re.test(w))
  }
}
