import { describe, expect, it } from 'vitest'
import { inputPayload, parseRecording, recordHeader, recordingHeader, RecordKind } from './console-recording'

const meta = { task: 7, machine: 'vm1', session: 1, role: 'interactive' as const, started: 1_700_000_000_000 }

function build(records: [number, number, Uint8Array][]): Uint8Array {
  const parts: Uint8Array[] = [recordingHeader(meta)]
  for (const [kind, time, payload] of records) parts.push(recordHeader(kind, time, payload.length), payload)
  return Buffer.concat(parts)
}

describe('the console recording format', () => {
  it('reads back what was written: screen bytes, input marks, the end', () => {
    const bytes = build([[RecordKind.server, 0, Buffer.from('RFB 003.008\n')], [RecordKind.input, 1500, inputPayload(43, 2)],
      [RecordKind.server, 2000, Buffer.alloc(100, 1)], [RecordKind.end, 2500, Buffer.from('the analysis ended')]])
    const r = parseRecording(bytes)
    expect(r.meta).toEqual(meta)
    expect(r.records.map((x) => x.kind)).toEqual([1, 2, 1, 3])
    expect(r.duration).toBe(2500)
    expect(r.input).toEqual([{ time: 1500, keys: 43, clicks: 2 }])
    expect(r.ended).toBe('the analysis ended')
    expect(r.truncated).toBe(false)
    expect(Buffer.from(bytes.subarray(r.records[0]!.offset, r.records[0]!.offset + 12)).toString()).toBe('RFB 003.008\n')
  })

  it('ends a file cut short at its last whole record, and refuses what is not a recording', () => {
    const bytes = build([[RecordKind.server, 0, Buffer.alloc(10)], [RecordKind.server, 10, Buffer.alloc(1000)]])
    const r = parseRecording(bytes.subarray(0, bytes.length - 1))
    expect(r.records.length).toBe(1)
    expect(r.truncated).toBe(true)
    expect(() => parseRecording(Buffer.from('PK\x03\x04'))).toThrow(/not an Aviary console recording/)
    expect(() => parseRecording(Buffer.from('AVIARY-CONSOLE 1\n{"task":"x"}\n'))).toThrow(/metadata/)
  })
})
