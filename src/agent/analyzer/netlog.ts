// The analyzer's side of the result server protocol (src/guest-protocol/netlog.ts): one `LOG\n`
// connection for its log records, and one connection per uploaded file: `FILE 2\n<dump path>\n
// <guest path>\n<space-separated pids>\n` followed by the raw bytes until the socket closes (the
// server sends nothing back). Every connection opens with this run's `AVIARY-RUN <id>` line, so
// the host can tell this run's analyzer from one left over from an earlier run.
import { connect, type Socket } from 'node:net'
import { pipeline } from 'node:stream/promises'
import type { Readable } from 'node:stream'
import { ANALYZER_LOGGER, logRecordLine, NETLOG_COMMANDS, type LogLevel } from '../../guest-protocol/netlog.js'
import { runLine } from '../../guest-protocol/run-identity.js'

/** Where the result server is, and the run this analyzer belongs to (null: a host that sent none). */
export interface NetlogServer {
  ip: string
  port: number
  run: string | null
}

function open(server: NetlogServer): Promise<Socket> {
  return new Promise((ok, fail) => {
    const s = connect({ host: server.ip, port: server.port }, () => {
      s.off('error', fail)
      if (server.run !== null) s.write(runLine(server.run))
      ok(s)
    })
    s.once('error', fail)
  })
}

export class NetlogLog {
  private socket: Socket | null = null
  private readonly pending: string[] = []

  constructor(private readonly server: NetlogServer, private readonly echo?: (line: string) => void) {}

  async start(): Promise<void> {
    try {
      this.socket = await open(this.server)
      this.socket.on('error', () => {
        this.socket = null
      })
      this.socket.write(`${NETLOG_COMMANDS.log}\n${this.pending.join('')}`)
      this.pending.length = 0
    } catch (err) {
      this.echo?.(`result server unreachable for LOG: ${(err as Error).message}`)
    }
  }

  log(level: LogLevel, message: string): void {
    const text = logRecordLine(ANALYZER_LOGGER, level, message)
    this.echo?.(text.trimEnd())
    if (this.socket !== null) this.socket.write(text)
    else this.pending.push(text)
  }

  info(m: string): void {
    this.log('INFO', m)
  }

  warning(m: string): void {
    this.log('WARNING', m)
  }

  error(m: string): void {
    this.log('ERROR', m)
  }

  async close(): Promise<void> {
    const s = this.socket
    this.socket = null
    if (s === null) return
    await new Promise<void>((done) => s.end(() => done()))
  }
}

/** Sends one file (or stream) to the result server as `FILE 2`. */
export async function uploadFile(server: NetlogServer, dumpPath: string, guestPath: string, pids: number[], body: Readable | Buffer): Promise<void> {
  const s = await open(server)
  const header = `${NETLOG_COMMANDS.file2}\n${dumpPath}\n${guestPath.replace(/[\r\n]/g, ' ')}\n${pids.join(' ')}\n`
  s.write(header)
  if (Buffer.isBuffer(body)) await new Promise<void>((done) => s.end(body, () => done()))
  else await pipeline(body, s)
}
