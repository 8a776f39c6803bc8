// Large bodies built per request (a /tasks/list page of 100 tasks is ~100 KB) are written into a
// few reusable buffers instead of a fresh allocation each time. Node counts every new ArrayBuffer
// as external memory, and V8 answers a few hundred MB/s of it with a full mark-compact about ten
// times a second: measured on random /tasks/list pages, ~5.7k req/s with fresh buffers, ~10k with
// reused ones (docs/benchmarks.md).
// A buffer goes back only when its response emits 'close'. Node emits that after 'finish', which
// waits for the socket write of the last byte to complete, or after the connection was torn down
// (pending writes are then cancelled): either way nothing reads the buffer any more. A body
// handed out here must therefore never be kept beyond its response.
import type { ServerResponse } from 'node:http'
import type { Alloc } from '../db/task-views'

export class ResponseBuffers {
  private readonly free: Buffer[] = []

  constructor(
    private readonly slotBytes = 256 * 1024,
    private readonly keep = 32
  ) {}

  /** An allocator for bodies of this response only. */
  for(res: ServerResponse): Alloc {
    return (size) => {
      if (size > this.slotBytes || res.closed) return Buffer.allocUnsafe(size)
      const slot = this.free.pop() ?? Buffer.allocUnsafeSlow(this.slotBytes)
      res.once('close', () => {
        if (this.free.length < this.keep) this.free.push(slot)
      })
      return slot.subarray(0, size)
    }
  }
}
