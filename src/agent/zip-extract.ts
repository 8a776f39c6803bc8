// POST /extract: unpacks an uploaded zip (the analyzer package) into a folder. Cuckoo's agent uses
// Python's ZipFile.extractall; we read the archive with @zip.js/zip.js straight from the uploaded
// file (a Blob backed by the file, so a large zip is never loaded whole) and refuse the whole
// archive, before writing anything, if one entry would land outside the target ("zip slip":
// absolute names, drive letters, `..` components).
import { BlobReader, ZipReader, configure, type Entry } from '@zip.js/zip.js'
import { createWriteStream, openAsBlob } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { dirname, resolve, sep } from 'node:path'
import { Writable } from 'node:stream'
import { HttpError } from './http-error.js'

configure({ useWebWorkers: false })

/** The safe destination of one entry, or null if its name escapes `root`. */
export function entryDestination(root: string, name: string): string | null {
  const clean = name.replace(/\\/g, '/')
  if (clean.startsWith('/') || /^[a-zA-Z]:/.test(clean) || clean.includes('\0')) return null
  if (clean.split('/').some((part) => part === '..')) return null
  const base = resolve(root)
  const dest = resolve(base, ...clean.split('/').filter((p) => p !== '' && p !== '.'))
  return dest === base || dest.startsWith(base + sep) ? dest : null
}

/** Extracts every entry of `zipPath` below `dirpath`; returns the entries' names. */
export async function extractZip(zipPath: string, dirpath: string, password?: string): Promise<string[]> {
  const reader = new ZipReader(new BlobReader(await openAsBlob(zipPath)))
  try {
    let entries: Entry[]
    try {
      entries = await reader.getEntries()
    } catch (err) {
      // zip.js itself already refuses some escaping names ("Unsafe filename").
      const msg = (err as Error).message
      if (/unsafe/i.test(msg)) throw new HttpError(400, `Refusing zip entry outside the target folder (${msg})`)
      throw new HttpError(400, `Invalid zip file: ${msg}`)
    }
    const plan = entries.map((entry) => ({ entry, dest: entryDestination(dirpath, entry.filename) }))
    const bad = plan.find((p) => p.dest === null)
    if (bad !== undefined) throw new HttpError(400, `Refusing zip entry outside the target folder: ${bad.entry.filename}`)
    await mkdir(dirpath, { recursive: true })
    for (const { entry, dest } of plan) {
      if (dest === null) continue
      if (entry.directory) {
        await mkdir(dest, { recursive: true })
        continue
      }
      await mkdir(dirname(dest), { recursive: true })
      if (entry.getData === undefined) continue
      await entry.getData(Writable.toWeb(createWriteStream(dest)), password !== undefined ? { password } : {})
    }
    return plan.map((p) => p.entry.filename)
  } finally {
    await reader.close()
  }
}
