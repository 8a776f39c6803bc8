// The analyzer's side of the result server protocol (Cuckoo 2 netlog): one `LOG\n` connection for
// text log lines `YYYY-MM-DD HH:MM:SS,mmm [analyzer] LEVEL: msg`, and one connection per uploaded
// file: `FILE 2\n<dump path>\n<guest path>\n<space-separated pids>\n` followed by the raw bytes
// until the socket closes (the server sends nothing back).
import { connect, type Socket } from 'node:net'
import { pipeline } from 'node:stream/promises'
import type { Readable } from 'node:stream'

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0')
}

export function logTimestamp(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())},${pad(d.getMilliseconds(), 3)}`
}

function open(host: string, port: number): Promise<Socket> {
  return new Promise((ok, fail) => {
    const s = connect({ host, port }, () => {
      s.off('error', fail)
      ok(s)
    })
    s.once('error', fail)
  })
}

export class NetlogLog {
  private socket: Socket | null = null
  private readonly pending: string[] = []

  constructor(private readonly host: string, private readonly port: number, private readonly echo?: (line: string) => void) {}

  async start(): Promise<void> {
    try {
      this.socket = await open(this.host, this.port)
      this.socket.on('error', () => {
        this.socket = null
      })
      this.socket.write('LOG\n' + this.pending.join(''))
      this.pending.length = 0
    } catch (err) {
      this.echo?.(`result server unreachable for LOG: ${(err as Error).message}`)
    }
  }

  log(level: 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR', message: string): void {
    // One line each: the server limits lines to 4096 bytes.
    const text = `${logTimestamp(new Date())} [analyzer] ${level}: ${message.replace(/[\r\n]+/g, ' ')}`.slice(0, 4000) + '\n'
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
export async function uploadFile(
  host: string,
  port: number,
  dumpPath: string,
  guestPath: string,
  pids: number[],
  body: Readable | Buffer
): Promise<void> {
  const s = await open(host, port)
  const header = `FILE 2\n${dumpPath}\n${guestPath.replace(/[\r\n]/g, ' ')}\n${pids.join(' ')}\n`
  s.write(header)
  if (Buffer.isBuffer(body)) await new Promise<void>((done) => s.end(body, () => done()))
  else await pipeline(body, s)
}
