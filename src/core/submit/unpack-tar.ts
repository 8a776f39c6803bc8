// Walks a tar (plain, gzip or bzip2) as a stream through tar-stream: one pass, no seeking, so
// a broken stream ends the walk and only what came before it is kept.
import tarStream, { type Header } from 'tar-stream'
import { openDecompressed } from './unpack-decompress'
import { MemberError, describeError, showName, type ArchiveFormat, type RawEntry, type WalkContext } from './unpack-common'

const KINDS: Record<string, string> = {
  file: 'file',
  'contiguous-file': 'file',
  directory: 'directory',
  symlink: 'symbolic link',
  link: 'hard link',
  'character-device': 'character device',
  'block-device': 'block device',
  fifo: 'fifo'
}

function kindOf(h: Header): string {
  // tar-stream gives null for types it does not know (sparse files, volume labels...).
  const type = (h.type as string | null) ?? 'unknown'
  const kind = KINDS[type] ?? `unsupported entry type ${showName(type)}`
  // Old tars mark directories only with a trailing slash.
  return kind === 'file' && /\/$/.test(h.name) ? 'directory' : kind
}

function brokenDetail(err: unknown): string {
  const text = describeError(err)
  if (/^Invalid tar header/i.test(text)) return 'invalid tar header'
  return text.charAt(0).toLowerCase() + text.slice(1)
}

const LOST = 'the rest of the archive was lost'

export async function walkTar(
  file: string,
  format: Exclude<ArchiveFormat, 'zip'>,
  w: WalkContext,
  visit: (e: RawEntry) => Promise<void>
): Promise<void> {
  const dec = openDecompressed(file, format)
  const extract = tarStream.extract()
  let produced = 0
  let broken = false
  dec.stream.on('data', (chunk: Buffer) => (produced += chunk.length))
  dec.stream.on('error', (err) => extract.destroy(err))
  dec.stream.pipe(extract)
  // Per-member compressed sizes are unknowable in a stream (and block compressors read far
  // ahead), so the ratio is that of the whole stream so far: robust, if a little lenient.
  const ratio = format === 'tar' ? undefined : () => produced / Math.max(1, dec.consumed() ?? 0)
  const settledFailure = () => Promise.race([dec.finished, new Promise<null>((r) => setTimeout(r, 250, null))])

  try {
    for await (const entry of extract) {
      if (w.halted) break
      const header = entry.header
      const pump = async (write: (chunk: Uint8Array) => Promise<void>): Promise<void> => {
        const chunks = (entry as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
        for (;;) {
          let next: IteratorResult<Buffer>
          try {
            next = await chunks.next()
          } catch (err) {
            broken = true
            const cause = (await settledFailure()) ?? err
            throw new MemberError(`incomplete: truncated or corrupt archive (${brokenDetail(cause)}), ${LOST}`)
          }
          if (next.done) return
          await write(next.value)
        }
      }
      // A skipped entry can carry data too (a "symlink" of 100 GiB): reading past it is metered.
      await visit({ name: header.name, kind: kindOf(header), ...(ratio ? { ratio } : {}), pump, drain: pump })
      if (w.halted) break
      entry.resume() // skipped entries still have to be read past
    }
    if (!w.halted && !broken) {
      // bzip2 can fail after tar-stream saw a clean end, e.g. when cut at a member boundary.
      const failure = await dec.finished
      if (failure) w.report(`${w.label}: truncated or corrupt archive (${brokenDetail(failure)}), ${LOST}`)
    }
  } catch (err) {
    if (!broken && !w.halted) {
      const cause = (await settledFailure()) ?? err
      w.report(`${w.label}: truncated or corrupt archive (${brokenDetail(cause)}), ${LOST}`)
    }
  } finally {
    extract.destroy()
    await dec.close()
  }
}
