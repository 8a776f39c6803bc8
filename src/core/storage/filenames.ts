// Client-supplied file names are hostile: they may carry directories (Windows or POSIX), NUL,
// control or bidi characters, or be empty. They end up as a path component of the task target
// and inside JSON, so they are reduced to one safe, printable component.

const MAX_BYTES = 200
// C0/C1 controls, DEL, bidi overrides and isolates, zero-width and BOM characters.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g

/** The last path component of a client file name, made safe; `fallback` when nothing is left. */
export function safeBaseName(raw: string | undefined | null, fallback: string): string {
  if (!raw) return fallback
  // Split on both separators: clients send "C:\\x\\foo.exe" as well as "/tmp/foo.exe".
  const last = raw.split(/[\\/]/).pop() ?? ''
  let name = last.replace(UNSAFE, '').replace(/[:*?"<>|]/g, '_').trim()
  // A name made only of dots would be "." or ".." or hidden-but-empty: not a file name.
  if (/^\.*$/.test(name)) return fallback
  name = truncateUtf8(name, MAX_BYTES)
  return name || fallback
}

/** Truncates to at most `max` UTF-8 bytes, keeping the extension when there is one. */
function truncateUtf8(name: string, max: number): string {
  if (Buffer.byteLength(name) <= max) return name
  const dot = name.lastIndexOf('.')
  const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : ''
  let stem = name.slice(0, name.length - ext.length)
  while (Buffer.byteLength(stem + ext) > max) stem = Array.from(stem).slice(0, -1).join('')
  return stem + ext
}
