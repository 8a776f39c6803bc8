// Monitor log arguments and API declarations (the `info` messages of Cuckoo's monitor) turned
// into report values, with Cuckoo 2's netlog.py conversions: pointers (`p`, `x`) as 0x-hex of
// the process's word size, negative 32-bit values as unsigned, binary as latin-1 text, flag
// values and bitmasks resolved to names. Kept apart from windows-calls.ts, which walks the log.
import type { BsonDocument, BsonValue } from './bson.js'

export interface ApiInfo {
  name: string
  category: string
  argNames: string[]
  argTypes: (string | null)[]
  flagsValue: Map<string, Map<number, string>>
  flagsBitmask: Map<string, [number, string][]>
}

function toUnsigned(value: number | bigint, bits: 32 | 64): bigint {
  const mod = 1n << BigInt(bits)
  return ((BigInt(value) % mod) + mod) % mod
}

/** Cuckoo's converters: pointers as 0x-hex (`p` 32/64-bit, `x` always 32), buffers as latin-1 text. */
export function convert(value: BsonValue, type: string | null, is64: boolean): unknown {
  if ((type === 'p' || type === 'x') && (typeof value === 'number' || typeof value === 'bigint')) {
    const bits = type === 'p' && is64 ? 64 : 32
    return '0x' + toUnsigned(value, bits).toString(16).padStart(bits / 4, '0')
  }
  if (typeof value === 'number' && !is64 && value < 0 && Number.isInteger(value)) return value + 2 ** 32
  if (typeof value === 'bigint') return value.toString()
  return plain(value)
}

/** A BSON value as JSON-ready data: binary as latin-1 text (as Cuckoo's Python 2 str), bigint as decimal text. */
export function plain(value: BsonValue): unknown {
  if (Buffer.isBuffer(value)) return value.toString('latin1')
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) return value.map(plain)
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
  return value
}

export function str(value: unknown): string {
  return typeof value === 'string' ? value : value === null || value === undefined ? '' : String(value)
}

export function list(value: BsonValue | undefined): BsonValue[] {
  return Array.isArray(value) ? value : []
}

function doc(value: BsonValue | undefined): BsonDocument {
  return value !== null && value !== undefined && typeof value === 'object' && !Array.isArray(value) && !Buffer.isBuffer(value) ? value : {}
}

export function parseInfo(d: BsonDocument): ApiInfo {
  const argNames: string[] = []
  const argTypes: (string | null)[] = []
  for (const a of list(d.args)) {
    if (Array.isArray(a)) {
      argNames.push(str(a[0]))
      argTypes.push(typeof a[1] === 'string' ? a[1] : null)
    } else {
      argNames.push(str(a))
      argTypes.push(null)
    }
  }
  const flagsValue = new Map<string, Map<number, string>>()
  for (const [arg, pairs] of Object.entries(doc(d.flags_value))) {
    flagsValue.set(arg, new Map(list(pairs).map((p) => [Number(list(p)[0]), str(list(p)[1])])))
  }
  const flagsBitmask = new Map<string, [number, string][]>()
  for (const [arg, pairs] of Object.entries(doc(d.flags_bitmask))) {
    flagsBitmask.set(arg, list(pairs).map((p): [number, string] => [Number(list(p)[0]), str(list(p)[1])]))
  }
  return { name: str(d.name) || 'NONAME', category: str(d.category), argNames, argTypes, flagsValue, flagsBitmask }
}

function flagNumber(v: unknown): number | null {
  if (typeof v === 'number') return v
  if (typeof v === 'string' && /^0x[0-9a-f]+$/i.test(v)) return Number.parseInt(v, 16)
  return null
}

export function resolveFlags(info: ApiInfo, args: Record<string, unknown>): Record<string, string> {
  const flags: Record<string, string> = {}
  for (const [arg, values] of info.flagsValue) {
    const v = flagNumber(args[arg])
    const name = v === null ? undefined : values.get(v)
    if (name !== undefined) flags[arg] = name
  }
  for (const [arg, bits] of info.flagsBitmask) {
    const v = flagNumber(args[arg])
    if (arg in flags || v === null) continue
    // Unsigned 32-bit AND (flags are DWORDs).
    flags[arg] = bits.filter(([bit]) => ((v & bit) >>> 0) === bit >>> 0).map(([, n]) => n).join('|')
  }
  return flags
}
