// Compression of a tar byte stream: gzip in-process, bzip2 through the system binary (a pure-JS
// bzip2 is an order of magnitude slower). Errors end up on the returned stream either way.
import { spawn } from 'node:child_process'
import { PassThrough, pipeline, type Readable } from 'node:stream'
import { createGzip } from 'node:zlib'

export type TarCompression = 'bz2' | 'gz' | 'none'

const STDERR_KEEP = 2048

export function compress(tar: Readable, compression: TarCompression): Readable {
  switch (compression) {
    case 'none':
      return tar
    case 'gz': {
      const gz = createGzip({ level: 6 })
      // pipeline destroys gz with any error of tar (and tar when gz is destroyed); the caller
      // listens on gz, so the callback has nothing left to do.
      pipeline(tar, gz, () => {})
      return gz
    }
    case 'bz2':
      return bzip2(tar)
    default:
      throw new RangeError(`unknown tar compression ${JSON.stringify(compression)}`)
  }
}

/**
 * tar → `bzip2 -c` → returned stream. The output only ends once bzip2 has exited with 0, so a
 * crashed compressor cannot pass for a complete archive. Destroying the output (the client went
 * away) stops the tar producer and kills bzip2; Node reaps it, so no zombie is left.
 */
function bzip2(tar: Readable): Readable {
  const out = new PassThrough()
  const child = spawn('bzip2', ['-z', '-c'], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  const fail = (err: Error): void => {
    if (!out.destroyed) out.destroy(err)
  }
  child.on('error', (err) => fail(new Error(`cannot run bzip2: ${err.message}`)))
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    if (stderr.length < STDERR_KEEP) stderr += text
  })
  child.stdout.on('error', fail)
  child.stdout.pipe(out, { end: false })
  pipeline(tar, child.stdin, (err) => {
    if (err) fail(err)
  })
  child.on('close', (code, signal) => {
    if (code === 0) out.end()
    else fail(new Error(`bzip2 failed (${signal ?? `exit code ${code}`})${stderr ? `: ${stderr.trim()}` : ''}`))
  })
  out.on('close', () => {
    tar.destroy()
    if (child.exitCode !== null || child.signalCode !== null) return
    child.stdin.destroy()
    child.stdout.destroy() // a paused stdout would otherwise hold the pipe open
    child.kill('SIGTERM')
  })
  return out
}
