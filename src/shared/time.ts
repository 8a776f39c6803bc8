// Timestamps on the wire are local time as `YYYY-MM-DD HH:MM:SS` (the specs' format, which
// Cuckoo's dispatcher parses). The same string is stored, so it sorts and compares as text.

const pad = (n: number): string => (n < 10 ? `0${n}` : String(n))

export function formatDatetime(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

export function now(): string {
  return formatDatetime(new Date())
}

/** Parses `YYYY-MM-DD HH:MM:SS` (local time); null when it is not a real date. */
export function parseDatetime(text: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(text)
  if (!m) return null
  return checked(+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!)
}

/** Parses Cuckoo's `clock` form field, `%m-%d-%Y %H:%M:%S`; null when it is not a real date. */
export function parseClock(text: string): Date | null {
  const m = /^(\d{2})-(\d{2})-(\d{4}) (\d{2}):(\d{2}):(\d{2})$/.exec(text)
  if (!m) return null
  return checked(+m[3]!, +m[1]!, +m[2]!, +m[4]!, +m[5]!, +m[6]!)
}

function checked(y: number, mo: number, d: number, h: number, mi: number, s: number): Date | null {
  const date = new Date(y, mo - 1, d, h, mi, s)
  const same = date.getFullYear() === y && date.getMonth() === mo - 1 && date.getDate() === d &&
    date.getHours() === h && date.getMinutes() === mi && date.getSeconds() === s
  return same ? date : null
}
