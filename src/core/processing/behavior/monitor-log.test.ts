// Cuckoo monitor BSON logs, generated in the monitor's own format (monitor-log.fixture.ts), read
// through analyzeBehavior from a real analysis folder on disk: processes with FILETIME first_seen,
// calls with converted arguments, resolved flags, buffers stored and linked, failed calls with
// last_error, summary/generic/apistats/processtree, and the cut-off and oversized cases.
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { decodeBson, readBsonStream } from './bson.js'
import { analyzeBehaviorDetailed, monitorCalls } from './index.js'
import { MonitorLogWriter, TEST_APIS, encodeBson, filetime } from './monitor-log.fixture.js'
import type { MonitorCall } from './windows-calls.js'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function analysisDir(logs: Record<string, Buffer | string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'aviary-behavior-bson-'))
  dirs.push(dir)
  mkdirSync(join(dir, 'logs'))
  for (const [name, body] of Object.entries(logs)) writeFileSync(join(dir, 'logs', name), body)
  return dir
}

const T0 = 1_700_000_000.25 // 2023-11-14T22:13:20.25Z
const PARENT = 2412
const CHILD = 3160
const payload = Buffer.from(Array.from({ length: 256 }, (_, i) => i))

function parentLog(): MonitorLogWriter {
  const [low, high] = filetime(T0)
  const w = new MonitorLogWriter(TEST_APIS)
  w.call('__process__', 1000, 0, 1, 0, [low, high, PARENT, 1234, 'C:\\Users\\me\\AppData\\Local\\Temp\\sample.exe', '"C:\\Users\\me\\AppData\\Local\\Temp\\sample.exe" -x', 0, 1,
    [{ basename: 'sample.exe', filepath: 'C:\\Users\\me\\AppData\\Local\\Temp\\sample.exe', baseaddr: '0x00400000', imgsize: 40960 }]])
  w.call('__thread__', 1004, 5, 1, 0, [PARENT])
  w.debug('monitor says hello')
  w.call('LdrLoadDll', 1000, 10, 1, 0, [0, 0x75000000, 'C:\\Windows\\system32\\ws2_32.dll', 'ws2_32'])
  // FILE_CREATED; desired_access GENERIC_WRITE|SYNCHRONIZE = 0x40100000
  w.call('NtCreateFile', 1000, 20, 1, 0, [0xabc, 0x40100000, 128, 5, 96, 1, 'C:\\Users\\me\\AppData\\Roaming\\evil.exe', '\\??\\C:\\Users\\me\\AppData\\Roaming\\evil.exe', 2])
  w.buffer(payload)
  w.call('NtWriteFile', 1000, 30, 1, 0, [0xabc, 'C:\\Users\\me\\AppData\\Roaming\\evil.exe', payload, 0])
  w.call('NtClose', 1000, 31, 1, 0, [0xabc])
  // A write on a closed handle names no file.
  w.call('NtWriteFile', 1000, 32, 0, 0xc0000008, [0xabc, '', Buffer.alloc(0), 0], [6, -1073741816])
  w.call('NtCreateMutant', 1004, 40, 1, 0, [0x44, 0x1f0001, 0, 'Global\\aviary-test-mutex'])
  w.call('RegSetValueExW', 1000, 50, 1, 0, [0x88, 1, 'C:\\evil.exe', 'HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\evil', 'Run\\evil'])
  w.call('CreateProcessInternalW', 1000, 60, 1, 1, ['C:\\Windows\\system32\\cmd.exe', 'cmd.exe /c del sample.exe', 4, CHILD, 3164, 0x120, 0x124, 1, 0])
  w.call('connect', 1000, 70, 0, -1, [0x200, '203.0.113.9', 4444], [10061, 0])
  w.call('InternetConnectW', 1000, 75, 1, 0xcc0004, [0xcc0000, 'evil.example', 80, '', '', 3, 0])
  w.call('__anomaly__', 1000, 80, 1, 0, [1000, 'exception', 'NtWriteFile', 'something odd'])
  return w
}

function childLog(): Buffer {
  const [low, high] = filetime(T0 + 1.5)
  const w = new MonitorLogWriter(TEST_APIS)
  w.call('__process__', 2000, 0, 1, 0, [low, high, CHILD, PARENT, 'C:\\Windows\\System32\\cmd.exe', 'cmd.exe /c del sample.exe', 1, 1, []])
  w.call('LdrLoadDll', 2000, 3, 1, 0, [0, 0x7ff812340000n, 'C:\\Windows\\system32\\kernel32.dll', 'kernel32'])
  w.call('DeleteFileW', 2000, 5, 1, 1, ['C:\\Users\\me\\AppData\\Local\\Temp\\sample.exe', 'sample.exe'])
  // A cut-off tail: the length says 300 bytes, the file ends after 12.
  const tail = Buffer.alloc(12)
  tail.writeInt32LE(300)
  w.raw(tail)
  return w.bytes()
}

describe('BSON stream reader', () => {
  it('round-trips every element type the monitor writes', () => {
    const doc = { i: -5, l: 2n ** 40n, big: -(2n ** 62n), d: 1.5, s: 'héllo', b: Buffer.from([0, 255, 1]), t: true, n: null, a: [1, 'x', [2]], o: { k: 'v' } }
    const back = decodeBson(encodeBson(doc))
    expect(back).toEqual({ ...doc, l: 2 ** 40 })
  })

  it('stops at an oversized length, and says where', async () => {
    const bad = Buffer.alloc(8)
    bad.writeInt32LE(64 * 1024 * 1024)
    const dir = analysisDir({ 'x.bson': Buffer.concat([encodeBson({ type: 'debug', msg: 'one' }), bad]) })
    const ends: unknown[] = []
    const docs = []
    for await (const d of readBsonStream(join(dir, 'logs', 'x.bson'), (e) => ends.push(e))) docs.push(d)
    expect(docs).toEqual([{ type: 'debug', msg: 'one' }])
    expect(ends).toEqual([{ complete: false, offset: encodeBson({ type: 'debug', msg: 'one' }).length, reason: `bad message length ${64 * 1024 * 1024}` }])
  })

  it('ends the stream at a hostile message (nested 100,000 deep, a lying inner length, bad UTF-8 kept as text)', async () => {
    // 100,000 nested documents, each {a: <next>}: valid BSON, 1.1 MB.
    const depth = 100_000
    const parts: Buffer[] = []
    for (let i = 0; i < depth; i++) parts.push(Buffer.from([0, 0, 0, 0, 0x03, 0x61, 0x00]))
    const tail: Buffer[] = []
    for (let i = 0; i < depth; i++) tail.push(Buffer.from([0x00]))
    const deep = Buffer.concat([...parts, Buffer.from([5, 0, 0, 0, 0]), ...tail])
    // Lengths from the outside in: document i spans from i*7 to the end minus i terminators.
    for (let i = 0; i < depth; i++) deep.writeInt32LE(deep.length - i * 7 - i, i * 7)
    expect(() => decodeBson(deep)).toThrow(/nested too deep|Maximum call stack|depth/)
    const lying = encodeBson({ s: 'abc' })
    lying.writeInt32LE(1_000_000, 7) // the string's length (after the document's length, type and key), past the document
    expect(() => decodeBson(lying)).toThrow()
    const utf8 = encodeBson({ s: 'x' })
    utf8[11] = 0xff // the string's only byte: not UTF-8
    expect(decodeBson(utf8)).toEqual({ s: '\ufffd' })
    const dir = analysisDir({ 'h.bson': Buffer.concat([encodeBson({ type: 'debug', msg: 'before' }), deep, encodeBson({ type: 'debug', msg: 'after' })]) })
    const ends: { complete: boolean; reason: string | null }[] = []
    const docs = []
    for await (const d of readBsonStream(join(dir, 'logs', 'h.bson'), (e) => ends.push(e))) docs.push(d)
    expect(docs).toEqual([{ type: 'debug', msg: 'before' }])
    expect(ends[0]?.complete).toBe(false)
    expect(ends[0]?.reason).toMatch(/^undecodable message: /)
  })
})

describe('analyzeBehavior on Cuckoo monitor logs', () => {
  it('gives processes, calls, summary, generic, apistats and the tree', async () => {
    const dir = analysisDir({ [`${PARENT}.bson`]: parentLog().bytes(), [`${CHILD}.bson`]: childLog() })
    const { behavior, notes, debug } = await analyzeBehaviorDetailed(dir)
    const processes = behavior.processes as (Record<string, unknown> & { calls: MonitorCall[] })[]
    expect(processes.map((p) => p.pid)).toEqual([PARENT, CHILD])
    const [parent, child] = processes
    expect(parent).toMatchObject({
      pid: PARENT, ppid: 1234, process_name: 'sample.exe', process_path: 'C:\\Users\\me\\AppData\\Local\\Temp\\sample.exe',
      command_line: '"C:\\Users\\me\\AppData\\Local\\Temp\\sample.exe" -x', track: true, tid: 1000, type: 'process',
      modules: [{ basename: 'sample.exe', baseaddr: '0x00400000', imgsize: 40960 }]
    })
    expect(parent?.first_seen).toBeCloseTo(T0, 5)
    expect(child?.first_seen).toBeCloseTo(T0 + 1.5, 5)

    const calls = parent?.calls ?? []
    expect(calls.map((c) => c.api)).toEqual(['LdrLoadDll', 'NtCreateFile', 'NtWriteFile', 'NtClose', 'NtWriteFile', 'NtCreateMutant', 'RegSetValueExW', 'CreateProcessInternalW', 'connect', 'InternetConnectW', '__anomaly__'])
    const create = calls[1]
    expect(create).toMatchObject({
      category: 'file', status: 1, return_value: 0, tid: 1000,
      arguments: { file_handle: '0x00000abc', desired_access: '0x40100000', filepath: 'C:\\Users\\me\\AppData\\Roaming\\evil.exe', status_info: 2 },
      flags: { status_info: 'FILE_CREATED', desired_access: 'GENERIC_WRITE|SYNCHRONIZE' }
    })
    expect(create?.time).toBeCloseTo(T0 + 0.02, 5)
    const write = calls[2]
    expect(write?.arguments.buffer).toBe(payload.toString('latin1'))
    const sha1 = createHash('sha1').update(payload).digest('hex')
    expect(write?.buffer).toBe(sha1)
    expect(readFileSync(join(dir, 'buffer', sha1)).equals(payload)).toBe(true)
    expect(calls[3]?.buffer).toBeUndefined()
    const failed = calls[4]
    expect(failed).toMatchObject({ status: 0, return_value: 0xc0000008, last_error: 6, nt_status: -1073741816 })
    expect(calls[8]).toMatchObject({ api: 'connect', status: 0, return_value: 2 ** 32 - 1, last_error: 10061, arguments: { ip_address: '203.0.113.9', port: 4444 } })
    // 64-bit process: `p` pointers are 16 hex digits.
    expect(child?.calls[0]?.arguments.module_address).toBe('0x00007ff812340000')
    expect(child?.calls.map((c) => c.api)).toEqual(['LdrLoadDll', 'DeleteFileW'])

    expect(behavior.summary).toEqual({
      dll_loaded: ['C:\\Windows\\system32\\ws2_32.dll', 'C:\\Windows\\system32\\kernel32.dll'],
      file_created: ['C:\\Users\\me\\AppData\\Roaming\\evil.exe'],
      file_written: ['C:\\Users\\me\\AppData\\Roaming\\evil.exe'],
      mutex: ['Global\\aviary-test-mutex'],
      regkey_written: ['HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\evil'],
      command_line: ['cmd.exe /c del sample.exe'],
      connects_ip: ['203.0.113.9'],
      connects_host: ['evil.example'],
      file_deleted: ['C:\\Users\\me\\AppData\\Local\\Temp\\sample.exe']
    })
    const generic = behavior.generic as { pid: number; summary: Record<string, string[]> }[]
    expect(generic.find((g) => g.pid === CHILD)).toMatchObject({ ppid: PARENT, process_name: 'cmd.exe', summary: { file_deleted: ['C:\\Users\\me\\AppData\\Local\\Temp\\sample.exe'], dll_loaded: ['C:\\Windows\\system32\\kernel32.dll'] } })
    expect(Object.keys(generic.find((g) => g.pid === CHILD)?.summary ?? {}).sort()).toEqual(['dll_loaded', 'file_deleted'])
    expect(behavior.apistats).toEqual({
      [String(PARENT)]: { LdrLoadDll: 1, NtCreateFile: 1, NtWriteFile: 2, NtClose: 1, NtCreateMutant: 1, RegSetValueExW: 1, CreateProcessInternalW: 1, connect: 1, InternetConnectW: 1, __anomaly__: 1 },
      [String(CHILD)]: { LdrLoadDll: 1, DeleteFileW: 1 }
    })
    expect(behavior.anomaly).toEqual([{ category: 'exception', funcname: 'NtWriteFile', message: 'something odd' }])
    expect(behavior.processtree).toEqual([expect.objectContaining({
      pid: PARENT, process_name: 'sample.exe', children: [expect.objectContaining({ pid: CHILD, ppid: PARENT, command_line: 'cmd.exe /c del sample.exe', children: [] })]
    })])
    expect(debug).toEqual(['monitor says hello'])
    expect(notes).toEqual([expect.stringMatching(new RegExp(`^logs/${CHILD}\\.bson: log ends early at byte \\d+: truncated message: 12 of 300 bytes$`))])
  })

  it('keeps at most maxCalls calls per process but counts them all', async () => {
    const w = parentLog()
    for (let i = 0; i < 20_000; i++) w.call('NtCreateMutant', 1000, 100 + i, 1, 0, [0x44, 0x1f0001, 0, `m${i % 7}`])
    const dir = analysisDir({ '1.bson': w.bytes() })
    const { behavior, notes, calls } = await analyzeBehaviorDetailed(dir, { maxCalls: 500 })
    const [proc] = behavior.processes as { calls: MonitorCall[]; calls_seen: number; calls_kept: number }[]
    expect(proc?.calls).toHaveLength(500)
    expect(proc).toMatchObject({ calls_seen: 20_011, calls_kept: 500 })
    expect(calls?.processes).toEqual([expect.objectContaining({ pid: PARENT, calls: 500, dropped: 20_011 - 500 })])
    // Every call, streamed again from the log: the kept ones (read back from the store) first, then the rest in order.
    let n = 0
    let last = ''
    for await (const { pid, call } of monitorCalls(join(dir, 'logs', '1.bson'))) {
      expect(pid).toBe(PARENT)
      if (n < 500) expect(call).toEqual(proc?.calls[n])
      last = String(call.arguments.mutant_name)
      n++
    }
    expect(n).toBe(20_011)
    expect(last).toBe(`m${19_999 % 7}`)
    expect((behavior.apistats as Record<string, Record<string, number>>)[String(PARENT)]?.NtCreateMutant).toBe(20_001)
    expect((behavior.summary as Record<string, string[]>).mutex).toHaveLength(8)
    expect(notes).toContain(`pid ${PARENT}: ${20_011 - 500} call(s) beyond the 500 kept`)
  })

  it('skips a log over the size limit, and calls of undeclared APIs', async () => {
    const undeclared = encodeBson({ I: 99, T: 1, t: 1, h: 0n, args: [1, 0n] })
    const dir = analysisDir({ 'big.bson': parentLog().bytes(), 'odd.bson': Buffer.concat([undeclared, childLog()]) })
    const { behavior, notes } = await analyzeBehaviorDetailed(dir, { sizeLimit: 2000 })
    expect((behavior.processes as { pid: number }[]).map((p) => p.pid)).toEqual([CHILD])
    expect(notes).toEqual(expect.arrayContaining([
      expect.stringMatching(/^logs\/big\.bson: \d+ bytes is over the 2000-byte limit, not parsed$/),
      'logs/odd.bson: 1 message(s) with an API index never declared by an info message'
    ]))
  })

  it('gives empty results for a folder without logs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aviary-behavior-empty-'))
    dirs.push(dir)
    const { behavior, notes } = await analyzeBehaviorDetailed(dir)
    expect(behavior).toEqual({ processes: [], processtree: [], summary: {}, generic: [], apistats: {}, anomaly: [] })
    expect(notes).toEqual([])
  })
})
