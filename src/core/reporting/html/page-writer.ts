// Where report.html is written: pieces of markup are collected in a small buffer and written out in
// ~64 KiB chunks, each write awaited (the file handle's backpressure), to a temporary file renamed
// over the target at the end, so a reader never sees half a page and a big report never becomes one
// string in memory.
import { open, rename, unlink, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { randomBytes } from 'node:crypto'

const CHUNK = 64 * 1024

export class PageWriter {
  private buf = ''
  private constructor(private readonly fh: FileHandle, private readonly tmp: string, private readonly out: string) {}

  static async create(out: string): Promise<PageWriter> {
    const tmp = path.join(path.dirname(out), `.${path.basename(out)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
    return new PageWriter(await open(tmp, 'wx', 0o644), tmp, out)
  }

  /** Appends markup (already escaped by the caller). */
  put(html: string): void {
    this.buf += html
  }

  /** Writes the buffer out once it is big enough; call it in loops. */
  async tick(): Promise<void> {
    if (this.buf.length >= CHUNK) await this.flush()
  }

  private async flush(): Promise<void> {
    const b = this.buf
    this.buf = ''
    if (b !== '') await this.fh.write(b)
  }

  async finish(): Promise<void> {
    await this.flush()
    await this.fh.sync()
    await this.fh.close()
    await rename(this.tmp, this.out)
  }

  async abort(): Promise<void> {
    await this.fh.close().catch(() => undefined)
    await unlink(this.tmp).catch(() => undefined)
  }
}
