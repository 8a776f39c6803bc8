// The grammar of one line of `strace -f -ttt -yy` output (as Aviary's Linux analyzer runs it and
// uploads it as logs/strace.log), taken apart without trusting it: the guest wrote the log, so a
// line may be anything. Every scan is linear and stops at the end of the line; nothing here throws.
//
//   PID EPOCH.USEC name(arg, arg, ...) = RET [ERRNO (text)]    a call
//   PID EPOCH.USEC name(arg, ... <unfinished ...>              a call interrupted by another task's line
//   PID EPOCH.USEC <... name resumed>rest) = RET               its second half
//   PID EPOCH.USEC +++ exited with N +++ / +++ killed by SIG +++
//   PID EPOCH.USEC --- SIGCHLD {...} ---                       a signal delivered
//
// Arguments are split at top-level commas: quotes ("..." with C escapes), brackets, braces,
// parentheses, /* comments */ and -yy decorations (`3</etc/passwd>`, `3<TCP:[a:1->b:2]>`,
// `0</dev/null<char 1:3>>`, where a literal < or > of a path is escaped as \74 \76) are skipped.

export type StraceLine =
  | { kind: 'call'; tid: number; time: number; name: string; body: string }
  | { kind: 'unfinished'; tid: number; time: number; name: string; body: string }
  | { kind: 'resumed'; tid: number; time: number; name: string; rest: string }
  | { kind: 'exit'; tid: number; time: number; code: number | null; signal: string | null }
  | { kind: 'signal'; tid: number; time: number; text: string }

const HEAD = /^(\d{1,10})\s+(\d{1,12}\.\d{1,9})\s+/
const NAME = /^([A-Za-z_][A-Za-z0-9_]{0,63})\(/
const RESUMED = /^<\.\.\. ([A-Za-z_][A-Za-z0-9_]{0,63}) resumed>/
const UNFINISHED = ' <unfinished ...>'

/** One line (without its '\n'), or null when it is not strace's (or not one we read). */
export function parseStraceLine(line: string): StraceLine | null {
  const head = HEAD.exec(line)
  if (head === null) return null
  const tid = Number(head[1])
  const time = Number(head[2])
  if (!Number.isSafeInteger(tid) || !Number.isFinite(time)) return null
  const rest = line.slice(head[0].length)
  if (rest.startsWith('+++ ')) {
    const m = /^\+\+\+ (?:exited with (\d{1,3})|killed by (SIG[A-Z0-9+]{1,16}))/.exec(rest)
    if (m === null) return null
    return { kind: 'exit', tid, time, code: m[1] !== undefined ? Number(m[1]) : null, signal: m[2] ?? null }
  }
  if (rest.startsWith('--- ')) return { kind: 'signal', tid, time, text: rest }
  const resumed = RESUMED.exec(rest)
  if (resumed !== null) return { kind: 'resumed', tid, time, name: resumed[1] as string, rest: rest.slice(resumed[0].length) }
  const name = NAME.exec(rest)
  if (name === null) return null
  const body = rest.slice(name[0].length)
  if (body.endsWith(UNFINISHED)) return { kind: 'unfinished', tid, time, name: name[1] as string, body: body.slice(0, -UNFINISHED.length) }
  return { kind: 'call', tid, time, name: name[1] as string, body }
}

const isAlnum = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95

/** Index just past the string literal that starts at s[i] ('"'), or -1 when it never ends. */
export function skipString(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s.charCodeAt(j)
    if (c === 92) j++
    else if (c === 34) return j + 1
  }
  return -1
}

/**
 * Index just past the decoration that starts at s[i] ('<'), nested ones included; -1 if unclosed.
 * Inside, strace escapes a path's own < and > (\74, \76), so the unescaped ones are structure.
 */
export function skipDecoration(s: string, i: number): number {
  let depth = 0
  for (let j = i; j < s.length; j++) {
    const c = s.charCodeAt(j)
    if (c === 92) j++
    else if (c === 60) depth++
    // `->` joins the two ends of a socket decoration; it closes nothing.
    else if (c === 62 && s.charCodeAt(j - 1) !== 45 && --depth === 0) return j + 1
  }
  return -1
}

export interface SplitArgs {
  args: string[]
  /** Index of the ')' that closes the list, or -1 when the text ends first. */
  end: number
}

/**
 * Splits `s` from `from` at top-level ", " up to the ')' that closes the list (or `closer`).
 * At most `maxArgs` arguments are kept; the rest of the list is skipped, not split.
 */
export function splitArgs(s: string, from = 0, closer = 41, maxArgs = 64): SplitArgs {
  const args: string[] = []
  let depth = 0
  let start = from
  const push = (to: number): void => {
    const text = s.slice(start, to).trim()
    if (args.length < maxArgs && (text !== '' || args.length > 0)) args.push(text)
  }
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 34) {
      const j = skipString(s, i)
      if (j < 0) break
      i = j - 1
    } else if (c === 60 && i > 0 && isAlnum(s.charCodeAt(i - 1))) {
      const j = skipDecoration(s, i)
      if (j < 0) break
      i = j - 1
    } else if (c === 47 && s.charCodeAt(i + 1) === 42) {
      const j = s.indexOf('*/', i + 2)
      if (j < 0) break
      i = j + 1
    } else if (c === 40 || c === 91 || c === 123) {
      depth++
    } else if (c === 41 || c === 93 || c === 125) {
      if (depth === 0) {
        if (c !== closer) return { args, end: -1 }
        push(i)
        return { args, end: i }
      }
      depth--
    } else if (c === 44 && depth === 0) {
      push(i)
      start = i + 1
    }
  }
  return { args, end: -1 }
}

/** What follows the argument list: ` = RET ...`. */
export interface StraceReturn {
  /** The number (decimal), a pointer or other token as text, or null for `?`. */
  value: number | string | null
  /** ENOENT etc. when the call failed (or was restarted). */
  errno: string | null
  /** The decoration of a returned descriptor (`3</etc/passwd>` → "/etc/passwd"), raw. */
  decoration: string | null
}

export function parseReturn(text: string): StraceReturn | null {
  const m = /^\s*=\s*(0x[0-9a-f]+|-?\d+|\?)(<.*>)?(?:\S*)\s*(?:(E[A-Z0-9]{1,31}|ERESTART[A-Z_]{0,24})\b)?/.exec(text)
  if (m === null) return null
  const raw = m[1] as string
  let value: number | string | null = raw === '?' ? null : raw.startsWith('0x') ? raw : Number(raw)
  if (typeof value === 'number' && !Number.isSafeInteger(value)) value = raw
  const decoration = m[2] !== undefined ? decorationText(m[2]) : null
  return { value, errno: m[3] ?? null, decoration }
}

/** The inside of the first decoration of `text` (which starts with '<'), nested ones cut off. */
function decorationText(text: string): string | null {
  const end = skipDecoration(text, 0)
  if (end < 0) return null
  const inner = text.slice(1, end - 1)
  // `/dev/null<char 1:3>`: the device numbers are not part of the path.
  const nested = inner.search(/<(?:char|block) \d+:\d+>$/)
  return nested >= 0 ? inner.slice(0, nested) : inner
}

/** An fd argument as strace -yy prints it: `3</path>`, `AT_FDCWD</cwd>`, `3<TCP:[...]>`, or bare. */
export function parseFd(token: string): { fd: number | string; decoration: string | null } {
  const lt = token.indexOf('<')
  if (lt < 0) return { fd: numberOr(token), decoration: null }
  return { fd: numberOr(token.slice(0, lt)), decoration: decorationText(token.slice(lt)) }
}

function numberOr(text: string): number | string {
  return /^-?\d{1,15}$/.test(text) ? Number(text) : text
}

const SIMPLE_ESCAPES: Record<string, number> = { n: 10, t: 9, r: 13, v: 11, f: 12, a: 7, b: 8, e: 27, '\\': 92, '"': 34, "'": 39, '?': 63 }

/** The bytes of a C-escaped text (strace's \NNN octal, \xHH, \n...); other characters as latin-1 bytes. */
export function unescapeBytes(s: string): Buffer {
  const out = Buffer.allocUnsafe(s.length)
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c !== 92 || i + 1 >= s.length) {
      out[n++] = c & 0xff
      continue
    }
    const e = s[i + 1] as string
    if (e >= '0' && e <= '7') {
      let v = 0
      let k = i + 1
      while (k < s.length && k < i + 4 && s[k]! >= '0' && s[k]! <= '7') v = v * 8 + (s.charCodeAt(k++) - 48)
      out[n++] = v & 0xff
      i = k - 1
    } else if (e === 'x' && /^[0-9a-fA-F]{2}$/.test(s.slice(i + 2, i + 4))) {
      out[n++] = Number.parseInt(s.slice(i + 2, i + 4), 16)
      i += 3
    } else {
      out[n++] = SIMPLE_ESCAPES[e] ?? e.charCodeAt(0) & 0xff
      i++
    }
  }
  return out.subarray(0, n)
}

const utf8 = new TextDecoder('utf-8', { fatal: false })

/** A decoded string argument: its bytes, and whether strace cut it (`"..."...`). */
export interface StraceString {
  bytes: Buffer
  truncated: boolean
}

/** `"text"` or `"text"...` → its bytes; null when the token is not a string literal. */
export function parseString(token: string): StraceString | null {
  if (!token.startsWith('"')) return null
  const end = skipString(token, 0)
  if (end < 0) return null
  return { bytes: unescapeBytes(token.slice(1, end - 1)), truncated: token.startsWith('...', end) }
}

/** A string argument as text: UTF-8 (bad bytes as U+FFFD), `...` appended when strace cut it. */
export function stringText(token: string): string | null {
  const s = parseString(token)
  if (s === null) return null
  return utf8.decode(s.bytes) + (s.truncated ? '...' : '')
}

/** Unescapes a decoration's path (`\74` is '<', `\342\200\256` is U+202E). */
export function decorationPath(decoration: string): string {
  return decoration.includes('\\') ? utf8.decode(unescapeBytes(decoration)) : decoration
}

/** `[a, b, ...]` → its elements (raw tokens), at most `max`; null when the token is not an array. */
export function parseArray(token: string, max = 256): string[] | null {
  if (!token.startsWith('[')) return null
  const { args } = splitArgs(token, 1, 93, max)
  return args
}

/** `{k=v, k=v}` → the raw values by key (top level only), at most `max` keys. */
export function parseStruct(token: string, max = 32): Map<string, string> {
  const out = new Map<string, string>()
  if (!token.startsWith('{')) return out
  for (const field of splitArgs(token, 1, 125, max).args) {
    const eq = field.indexOf('=')
    if (eq > 0 && /^[a-z_][a-z0-9_]*$/i.test(field.slice(0, eq))) out.set(field.slice(0, eq), field.slice(eq + 1))
    else out.set(field, '')
  }
  return out
}

/** An address a socket structure or a -yy socket decoration names. */
export interface SockAddr {
  family: string
  ip?: string
  port?: number
  path?: string
}

/** `{sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.1")}` and the IPv6, UNIX forms. */
export function parseSockaddr(token: string): SockAddr | null {
  if (!token.startsWith('{sa_family=')) return null
  const family = /^\{sa_family=([A-Z0-9_]{1,32})/.exec(token)?.[1] ?? ''
  const out: SockAddr = { family }
  const port = /sin6?_port=htons\((\d{1,5})\)/.exec(token)
  if (port !== null) out.port = Number(port[1])
  const v4 = /sin_addr=inet_addr\("([0-9.]{7,15})"\)/.exec(token)
  const v6 = /inet_pton\(AF_INET6, "([0-9a-fA-F:.]{2,45})"/.exec(token)
  const ip = v4?.[1] ?? v6?.[1]
  if (ip !== undefined) out.ip = ip
  const unix = /sun_path=(@?"(?:[^"\\]|\\.)*")/.exec(token)
  if (unix?.[1] !== undefined) {
    const abstract = unix[1].startsWith('@')
    out.path = (abstract ? '@' : '') + (stringText(abstract ? unix[1].slice(1) : unix[1]) ?? '')
  }
  return out
}

/** A -yy socket decoration: `TCP:[10.0.0.2:4321->1.2.3.4:80]`, `UDPv6:[[::1]:53->[::1]:99]`, `UNIX-STREAM:[123]`. */
export function parseSocketDecoration(decoration: string): { proto: string; local?: SockAddr; remote?: SockAddr } | null {
  const m = /^([A-Z][A-Z0-9-]{0,15}(?:v6)?):\[(.*)\]$/.exec(decoration)
  if (m === null) return null
  const proto = m[1] as string
  const inner = m[2] as string
  const ends = inner.split('->')
  const endpoint = (text: string | undefined): SockAddr | undefined => {
    if (text === undefined) return undefined
    const e = /^\[([0-9a-fA-F:.]{2,45})\]:(\d{1,5})$/.exec(text) ?? /^([0-9.]{7,15}):(\d{1,5})$/.exec(text)
    if (e === null) return undefined
    return { family: proto.endsWith('v6') ? 'AF_INET6' : 'AF_INET', ip: e[1] as string, port: Number(e[2]) }
  }
  const out: { proto: string; local?: SockAddr; remote?: SockAddr } = { proto }
  const local = endpoint(ends[0])
  const remote = endpoint(ends[1])
  if (local !== undefined) out.local = local
  if (remote !== undefined) out.remote = remote
  return out
}
