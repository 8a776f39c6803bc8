// Client-supplied file names are hostile: they may carry directories (Windows or POSIX), NUL,
// or be `..` or empty. They end up as a path component of the task target, so only what could
// leave that component is neutralised: the name is cut to its last component after either
// separator (as Cuckoo 2.0.3+ does), NUL becomes `_`, a name of dots only (`.`, `..`) or an empty
// one gets the fallback, and an over-long one is shortened (file systems refuse > 255 bytes).
// Everything else (unicode, bidi controls as in `invoice\u202Egpj.exe`, spaces, `:*?"<>|`) is
// kept: the guest must see the name the sample came with; displays escape it, and the guest
// side replaces what Windows refuses (guest/analysis-conf.ts guestFileName).

const MAX_BYTES = 200

/** The last path component of a client file name, made safe; `fallback` when nothing is left. */
export function safeBaseName(raw: string | undefined | null, fallback: string): string {
  if (!raw) return fallback
  // Split on both separators: clients send "C:\\x\\foo.exe" as well as "/tmp/foo.exe".
  const last = raw.split(/[\\/]/).pop() ?? ''
  let name = last.replaceAll('\u0000', '_')
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
