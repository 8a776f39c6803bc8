// Test support: writes BSON streams the way Cuckoo's Windows monitor does (cuckoosandbox/monitor
// src/log.c): an `info` message the first time an API index is used (name, category, argument
// names with `p`/`x` types for pointers, flag tables), then calls {I, T, t, h, [e, E], args[]}
// whose first two args are is_success and retval; `buffer` messages with a sha1 checksum; `debug`
// messages. The encoder follows the BSON spec (bsonspec.org) for the element types the monitor uses.
import { createHash } from 'node:crypto'

export type Value = number | bigint | string | boolean | null | Buffer | Value[] | { [k: string]: Value }

function cstr(s: string): Buffer {
  return Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])])
}

function element(key: string, v: Value): Buffer {
  const head = (t: number): Buffer => Buffer.concat([Buffer.from([t]), cstr(key)])
  if (v === null) return head(0x0a)
  if (typeof v === 'boolean') return Buffer.concat([head(0x08), Buffer.from([v ? 1 : 0])])
  if (typeof v === 'bigint') {
    const b = Buffer.alloc(8)
    b.writeBigInt64LE(v)
    return Buffer.concat([head(0x12), b])
  }
  if (typeof v === 'number') {
    if (Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31) {
      const b = Buffer.alloc(4)
      b.writeInt32LE(v)
      return Buffer.concat([head(0x10), b])
    }
    const b = Buffer.alloc(8)
    if (Number.isInteger(v)) {
      b.writeBigInt64LE(BigInt(v))
      return Buffer.concat([head(0x12), b])
    }
    b.writeDoubleLE(v)
    return Buffer.concat([head(0x01), b])
  }
  if (typeof v === 'string') {
    const s = cstr(v)
    const len = Buffer.alloc(4)
    len.writeInt32LE(s.length)
    return Buffer.concat([head(0x02), len, s])
  }
  if (Buffer.isBuffer(v)) {
    const len = Buffer.alloc(5)
    len.writeInt32LE(v.length)
    return Buffer.concat([head(0x05), len, v])
  }
  if (Array.isArray(v)) return Buffer.concat([head(0x04), encodeBson(Object.fromEntries(v.map((x, i) => [String(i), x])))])
  return Buffer.concat([head(0x03), encodeBson(v)])
}

export function encodeBson(doc: { [k: string]: Value }): Buffer {
  const body = Buffer.concat(Object.entries(doc).map(([k, v]) => element(k, v)))
  const len = Buffer.alloc(4)
  len.writeInt32LE(body.length + 5)
  return Buffer.concat([len, body, Buffer.from([0])])
}

export interface ApiDecl {
  name: string
  category: string
  /** Argument names after is_success and retval; [name, 'p'|'x'] for pointers. */
  args: (string | [string, string])[]
  flagsValue?: Record<string, [number, string][]>
  flagsBitmask?: Record<string, [number, string][]>
}

/** Builds one monitor log: declares each API on first use, as the monitor does. */
export class MonitorLogWriter {
  readonly parts: Buffer[] = []
  private readonly indexes = new Map<string, number>()
  constructor(private readonly apis: ApiDecl[]) {}

  private index(name: string): number {
    const known = this.indexes.get(name)
    if (known !== undefined) return known
    const i = this.apis.findIndex((a) => a.name === name)
    const decl = this.apis[i]
    if (decl === undefined) throw new Error(`undeclared API ${name}`)
    this.parts.push(encodeBson({
      I: i, name: decl.name, type: 'info', category: decl.category,
      args: ['is_success', 'retval', ...decl.args],
      flags_value: Object.fromEntries(Object.entries(decl.flagsValue ?? {}).map(([k, v]) => [k, v])),
      flags_bitmask: Object.fromEntries(Object.entries(decl.flagsBitmask ?? {}).map(([k, v]) => [k, v]))
    }))
    this.indexes.set(name, i)
    return i
  }

  call(name: string, tid: number, tick: number, ok: number, retval: number | bigint, args: Value[], error?: [number, number]): this {
    const I = this.index(name)
    const doc: { [k: string]: Value } = { I, T: tid, t: tick, h: BigInt(tick * 7919) }
    if (error !== undefined) {
      doc.e = error[0]
      doc.E = error[1]
    }
    doc.args = [ok, typeof retval === 'bigint' ? retval : BigInt(retval), ...args]
    this.parts.push(encodeBson(doc))
    return this
  }

  buffer(bytes: Buffer): this {
    this.parts.push(encodeBson({ type: 'buffer', buffer: bytes, checksum: createHash('sha1').update(bytes).digest('hex') }))
    return this
  }

  debug(msg: string): this {
    this.parts.push(encodeBson({ type: 'debug', msg }))
    return this
  }

  raw(bytes: Buffer): this {
    this.parts.push(bytes)
    return this
  }

  bytes(): Buffer {
    return Buffer.concat(this.parts)
  }
}

/** FILETIME (100 ns since 1601) of an epoch-seconds time, split as the monitor logs it. */
export function filetime(epochSeconds: number): [number, number] {
  const ft = BigInt(Math.round((epochSeconds + 11644473600) * 1e7))
  const low = Number(ft & 0xffffffffn)
  const high = Number(ft >> 32n)
  // The monitor logs ULONGs through int32 fields: values over 2^31 arrive negative.
  return [low | 0, high | 0]
}

/** The APIs the tests use, with the argument names of cuckoosandbox/monitor's sigs/*.rst. */
export const TEST_APIS: ApiDecl[] = [
  { name: '__process__', category: '__notification__', args: ['time_low', 'time_high', 'pid', 'ppid', 'module_path', 'command_line', 'is_64bit', 'track', 'modules'] },
  { name: '__thread__', category: '__notification__', args: ['ProcessIdentifier'] },
  { name: '__anomaly__', category: '__notification__', args: ['tid', 'subcategory', 'function_name', 'message'] },
  {
    name: 'NtCreateFile', category: 'file',
    args: [['file_handle', 'p'], ['desired_access', 'x'], 'file_attributes', 'create_disposition', 'create_options', 'share_access', 'filepath', 'filepath_r', 'status_info'],
    flagsValue: { status_info: [[0, 'FILE_SUPERSEDED'], [1, 'FILE_OPENED'], [2, 'FILE_CREATED'], [3, 'FILE_OVERWRITTEN'], [4, 'FILE_EXISTS'], [5, 'FILE_DOES_NOT_EXIST']] },
    flagsBitmask: { desired_access: [[0x80000000, 'GENERIC_READ'], [0x40000000, 'GENERIC_WRITE'], [0x00100000, 'SYNCHRONIZE']] }
  },
  { name: 'NtWriteFile', category: 'file', args: [['file_handle', 'p'], 'filepath', 'buffer', 'offset'] },
  { name: 'NtClose', category: 'system', args: [['handle', 'p']] },
  { name: 'DeleteFileW', category: 'file', args: ['filepath', 'filepath_r'] },
  { name: 'LdrLoadDll', category: 'system', args: ['flags', ['module_address', 'p'], 'module_name', 'basename'] },
  { name: 'NtCreateMutant', category: 'synchronisation', args: [['mutant_handle', 'p'], 'desired_access', 'initial_owner', 'mutant_name'] },
  { name: 'RegSetValueExW', category: 'registry', args: [['key_handle', 'p'], 'reg_type', 'value', 'regkey', 'regkey_r'] },
  { name: 'CreateProcessInternalW', category: 'process', args: ['filepath', 'command_line', 'creation_flags', 'process_identifier', 'thread_identifier', ['process_handle', 'p'], ['thread_handle', 'p'], 'track', 'stack_pivoted'] },
  { name: 'connect', category: 'network', args: ['socket', 'ip_address', 'port'] },
  { name: 'InternetConnectW', category: 'network', args: [['internet_handle', 'p'], 'hostname', 'port', 'username', 'password', 'service', 'flags'] }
]
