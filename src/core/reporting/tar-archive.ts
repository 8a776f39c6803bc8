// Streams a tar of entries of an analysis folder. The folder holds what a hostile guest
// uploaded: links are followed only when they resolve inside the data directory, special files
// are skipped, and files are re-checked on the opened descriptor. One file is read at a time,
// paced by the consumer, so memory stays flat whatever the sizes.
import type { Stats } from 'node:fs'
import { lstat, readdir, realpath, stat } from 'node:fs/promises'
import { once } from 'node:events'
import { Readable } from 'node:stream'
import tar, { type Header, type Pack } from 'tar-stream'
import { compress, type TarCompression } from './compress'
import { childPath, compareNames, errorCode, isInside, openRegular, readExactly } from './file-source'

type Sink = ReturnType<Pack['entry']>

interface Walk {
  pack: Pack
  /** realpath of the data directory: links may only resolve below it. */
  root: Buffer
  /** dev:ino of the directories being walked, so a link to an ancestor cannot loop. */
  ancestors: Set<string>
}

/**
 * A tar of `entries` (top-level names inside `dir`, walked recursively, sorted), compressed as
 * asked. Returns at once; any later error (a file vanished or shrank, a read failed, bzip2 died)
 * destroys the returned stream with that error. Destroying the stream stops the work.
 * Throws synchronously only for invalid arguments.
 */
export function tarStream(dir: string, entries: string[], compression: TarCompression, opts: { containRoot: string }): Readable {
  for (const name of entries) {
    if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name)) {
      throw new RangeError(`not a top-level entry name: ${JSON.stringify(name)}`)
    }
  }
  const pack = tar.pack()
  const output = compress(Readable.from(pack, { objectMode: false }), compression)
  packTree(pack, dir, [...entries].sort(compareNames), opts.containRoot).then(
    () => {
      if (!pack.destroying) pack.finalize()
    },
    (err: unknown) => pack.destroy(err instanceof Error ? err : new Error(String(err)))
  )
  return output
}

async function packTree(pack: Pack, dir: string, entries: string[], containRoot: string): Promise<void> {
  const root = await realpath(containRoot, { encoding: 'buffer' })
  const base = await realpath(dir, { encoding: 'buffer' })
  if (!isInside(root, base)) throw new Error('the folder to archive is outside the data directory')
  const walk: Walk = { pack, root, ancestors: new Set([identity(await stat(base))]) }
  for (const name of entries) await addPath(walk, childPath(base, Buffer.from(name)), name)
}

async function addPath(walk: Walk, fsPath: Buffer, member: string): Promise<void> {
  if (walk.pack.destroying) throw new Error('archive stream destroyed') // the consumer left: stop walking
  let target = fsPath
  let st = await lstat(fsPath) // ENOENT here: the entry vanished mid-archive, an error
  if (st.isSymbolicLink()) {
    const resolved = await resolveLink(walk.root, fsPath)
    if (!resolved) return
    ;[target, st] = resolved
  }
  if (st.isDirectory()) return addDirectory(walk, target, member, st)
  if (st.isFile()) return addFile(walk.pack, target, member)
  // Sockets, fifos and devices hold nothing worth archiving, and reading a fifo would block.
}

/** The link's target and its stats, or null for dangling links and targets outside the root. */
async function resolveLink(root: Buffer, link: Buffer): Promise<[Buffer, Stats] | null> {
  try {
    const real = await realpath(link, { encoding: 'buffer' })
    if (!isInside(root, real)) return null
    return [real, await stat(real)]
  } catch (err) {
    if (errorCode(err) === 'ENOENT' || errorCode(err) === 'ELOOP') return null
    throw err
  }
}

async function addDirectory(walk: Walk, fsPath: Buffer, member: string, st: Stats): Promise<void> {
  const id = identity(st)
  if (walk.ancestors.has(id)) return
  await writeEntry(walk.pack, { name: `${member}/`, type: 'directory', mode: st.mode & 0o7777, mtime: st.mtime })
  const names = (await readdir(fsPath, { encoding: 'buffer' })).sort(Buffer.compare)
  walk.ancestors.add(id)
  try {
    // Names that are not UTF-8 are read through their raw bytes and listed with U+FFFD.
    for (const name of names) await addPath(walk, childPath(fsPath, name), `${member}/${name.toString('utf8')}`)
  } finally {
    walk.ancestors.delete(id)
  }
}

async function addFile(pack: Pack, fsPath: Buffer, member: string): Promise<void> {
  const opened = await openRegular(fsPath)
  if (!opened) return // replaced by a link or special file since it was listed
  const { fh, stats } = opened
  try {
    const header = { name: member, type: 'file' as const, size: stats.size, mode: stats.mode & 0o7777, mtime: stats.mtime }
    await writeEntry(pack, header, readExactly(fh, stats.size, member))
  } finally {
    await fh.close()
  }
}

/** Adds one entry and waits until tar-stream has taken all of it, honouring backpressure. */
async function writeEntry(pack: Pack, header: Partial<Header> & Pick<Header, 'name'>, body?: AsyncIterable<Buffer>): Promise<void> {
  let sink!: Sink
  const done = new Promise<void>((resolve, reject) => {
    sink = pack.entry(header, (err) => (err ? reject(err) : resolve()))
  })
  done.catch(() => {}) // awaited below; this only covers leaving early on a read error
  sink.on('error', () => {}) // streamx throws unheard errors; the entry callback reports them
  if (body) {
    for await (const chunk of body) {
      if (!sink.write(chunk)) await Promise.race([once(sink, 'drain'), done])
    }
  }
  sink.end(null) // streamx types want an argument; null writes nothing
  await done
}

function identity(st: Stats): string {
  return `${st.dev}:${st.ino}`
}
