// Downloads for the desktop bridge's saveDownload: plain Node (no Electron), so it is tested
// against a real service. Only URLs of the local service are fetched: the renderer is untrusted
// and must not turn the main process into a fetcher of arbitrary addresses.
import { rename, rm } from 'node:fs/promises'
import { createWriteStream } from 'node:fs'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import { replaceInvisible } from '../shared/invisible'

// The invisible set (src/shared/invisible.ts) becomes `_`: `invoice\u202Egpj.exe` must not land on
// disk looking like a .jpg. So do the characters Windows refuses in a name, and separators.
const RESERVED_IN_NAME = /[/\\:*?"<>|]/g
const MAX_NAME = 200

/** A file name for the save dialog: no directory part, no invisible or reserved characters. */
export function safeFileName(name: unknown): string {
  if (typeof name !== 'string') return 'download'
  const cleaned = replaceInvisible(name, () => '_').replace(RESERVED_IN_NAME, '_').replace(/^[.\s]+/, '').trim().slice(0, MAX_NAME)
    .replace(/[\ud800-\udbff]$/, '') // the cut may halve a pair
  return cleaned || 'download'
}

/** The URL when it belongs to the service at `base` (same origin), else null. */
export function serviceUrl(value: unknown, base: string): URL | null {
  if (typeof value !== 'string' || value.length > 8192) return null
  try {
    const url = new URL(value, base)
    return url.origin === new URL(base).origin ? url : null
  } catch {
    return null
  }
}

/** Streams `url` into `file` (through `file.part`, so a failed download leaves nothing behind). */
export async function downloadTo(url: URL, file: string, signal?: AbortSignal): Promise<void> {
  const res = await fetch(url, { signal: signal ?? null })
  if (!res.ok || !res.body) {
    let message = `HTTP ${res.status}`
    try {
      const body = (await res.json()) as { message?: unknown }
      if (typeof body.message === 'string') message = body.message
    } catch {
      // not JSON: the status says enough
    }
    throw new Error(`the download failed: ${message}`)
  }
  const part = `${file}.part`
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(part))
    await rename(part, file)
  } catch (err) {
    await rm(part, { force: true })
    throw err
  }
}
