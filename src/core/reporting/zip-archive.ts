// A stored (uncompressed: JPEGs do not shrink) zip of the regular files directly in a folder,
// for the screenshots download. Files are opened one at a time as the consumer reads.
import type { Stats } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import { PassThrough, Readable } from 'node:stream'
import { ZipFile } from 'yazl'
import { childPath, errorCode, openRegular, readExactly } from './file-source'

interface ZipItem {
  path: Buffer
  name: string
  stats: Stats
}

/**
 * Zip of the regular files in `dir` (links, folders and special files are left out), named by
 * bare filename and sorted by name; an empty folder gives a valid empty zip. Rejects if `dir`
 * cannot be listed; later errors destroy the returned stream.
 */
export async function zipOfFiles(dir: string): Promise<Readable> {
  const items = await listFiles(dir)
  const zip = new ZipFile()
  const out = new PassThrough()
  const fail = (err: Error): void => {
    if (!out.destroyed) out.destroy(err)
  }
  const sources: Readable[] = []
  zip.on('error', fail)
  for (const item of items) {
    zip.addReadStreamLazy(item.name, { compress: false, mtime: item.stats.mtime, mode: item.stats.mode }, (cb) => {
      const source = Readable.from(fileChunks(item), { objectMode: false })
      source.on('error', fail)
      sources.push(source)
      cb(null, source)
    })
  }
  zip.end()
  const zipped = zip.outputStream as PassThrough
  zipped.on('error', fail)
  zipped.pipe(out)
  out.on('close', () => {
    // The consumer left (or an error): release the open file and stop yazl's pump.
    for (const source of sources) source.destroy()
    zipped.destroy()
  })
  return out
}

async function listFiles(dir: string): Promise<ZipItem[]> {
  const base = Buffer.from(dir)
  const items: ZipItem[] = []
  for (const raw of (await readdir(base, { encoding: 'buffer' })).sort(Buffer.compare)) {
    const name = raw.toString('utf8')
    // yazl turns '\' into '/' and refuses drive-letter names; neither is a screenshot.
    if (name.includes('\\') || /^[a-zA-Z]:/.test(name)) continue
    const p = childPath(base, raw)
    let stats: Stats
    try {
      stats = await lstat(p)
    } catch (err) {
      if (errorCode(err) === 'ENOENT') continue // removed while listing
      throw err
    }
    if (stats.isFile()) items.push({ path: p, name, stats })
  }
  return items
}

async function* fileChunks(item: ZipItem): AsyncGenerator<Buffer> {
  const opened = await openRegular(item.path)
  if (!opened) throw new Error(`${item.name} is no longer a regular file`)
  try {
    yield* readExactly(opened.fh, opened.stats.size, item.name)
  } finally {
    await opened.fh.close()
  }
}
