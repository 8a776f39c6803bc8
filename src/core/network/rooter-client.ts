// The service's side of the rooter's socket (src/rooter/protocol.ts): one request, one answer
// line, on a connection of its own, within a deadline. A rooter that is not there, or refuses,
// is an Error whose message says what to do; never a hang.
import { createHash } from 'node:crypto'
import { connect } from 'node:net'
import type { DropCounts, EnableRequest, RooterAbilities, RooterAnswer, RooterRequest } from '../../rooter/protocol'

/**
 * This service's owner id at the rooter: the same for every start on one data folder (so a
 * service restarted after a crash clears what it left itself), different for another data folder
 * (a second service, or the desktop app beside a headless one, never clears this one's grants).
 */
export function rooterOwner(dataRoot: string): string {
  return createHash('sha256').update(`aviary-rooter-owner\0${dataRoot}`).digest('hex').slice(0, 32)
}

const DEADLINE_MS = 30_000
const MAX_ANSWER = 64 * 1024

export class RooterError extends Error {}

export function askRooter(socket: string, req: RooterRequest, timeoutMs = DEADLINE_MS): Promise<RooterAnswer> {
  return new Promise((resolve, reject) => {
    const s = connect(socket)
    let buf = ''
    const fail = (msg: string): void => {
      s.destroy()
      reject(new RooterError(msg))
    }
    const timer = setTimeout(() => fail(`the rooter at ${socket} did not answer within ${timeoutMs / 1000} s`), timeoutMs)
    s.setEncoding('utf8')
    s.once('connect', () => s.write(JSON.stringify(req) + '\n'))
    s.on('data', (chunk: string) => {
      buf += chunk
      if (buf.length > MAX_ANSWER) return fail('the rooter\'s answer is too long')
      const nl = buf.indexOf('\n')
      if (nl < 0) return
      clearTimeout(timer)
      s.end()
      try {
        resolve(JSON.parse(buf.slice(0, nl)) as RooterAnswer)
      } catch {
        reject(new RooterError('the rooter\'s answer is not JSON'))
      }
    })
    s.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      const hint = err.code === 'ENOENT' || err.code === 'ECONNREFUSED'
        ? `no rooter listens on ${socket}: install and start it (sudo aviary rooter install, docs/network.md)`
        : err.code === 'EACCES'
          ? `the service may not use ${socket}: add its user to the rooter's group and log in again`
          : `the rooter at ${socket}: ${err.message}`
      fail(hint)
    })
    s.once('close', () => {
      clearTimeout(timer)
      if (!buf.includes('\n')) reject(new RooterError(`the rooter at ${socket} closed the connection without answering`))
    })
  })
}

async function must(socket: string, req: RooterRequest): Promise<RooterAnswer & { ok: true }> {
  const a = await askRooter(socket, req)
  if (!a.ok) throw new RooterError(`the rooter refused (${req.op}): ${a.error}`)
  return a
}

export const rooter = {
  async abilities(socket: string): Promise<RooterAbilities> {
    const a = await must(socket, { op: 'ping' })
    if (!a.abilities) throw new RooterError('the rooter did not say what it can do')
    return a.abilities
  },
  async enable(socket: string, req: Omit<EnableRequest, 'op'>): Promise<void> {
    await must(socket, { op: 'enable', ...req })
  },
  async disable(socket: string, owner: string, guest: string): Promise<DropCounts> {
    return (await must(socket, { op: 'disable', owner, guest })).dropped ?? { packets: 0, bytes: 0 }
  },
  /** Whether the rooter still routes this guest for this owner (asking renews the grant). */
  async status(socket: string, owner: string, guest: string, timeoutMs = 10_000): Promise<boolean> {
    const a = await askRooter(socket, { op: 'status', owner, guest }, timeoutMs)
    if (!a.ok) throw new RooterError(`the rooter refused (status): ${a.error}`)
    return a.routed === true
  },
  /** Removes this owner's grants (what its crashed runs left); says how many. */
  async flush(socket: string, owner: string): Promise<number> {
    return (await must(socket, { op: 'flush', owner })).cleared ?? 0
  }
}
