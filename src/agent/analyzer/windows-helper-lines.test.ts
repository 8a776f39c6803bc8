// The helper's lines are read like anything else from the guest: malformed, over-long, wrongly
// typed or unknown lines are skipped, never thrown, and strings are cut.
import { describe, expect, it } from 'vitest'
import { LineSplitter, MAX_LINE, MAX_STRING, parseHelperLine } from './windows-helper-lines'

describe('aviary-winmon lines', () => {
  it('reads each kind of line the helper writes', () => {
    expect(parseHelperLine('{"t":"process","pid":264,"ppid":32,"created":1795673538430,"exe":"C:\\\\x\\\\t1.exe","cmd":"t1.exe \\"a b\\" \\u0001","time":1795673538656}'))
      .toEqual({ t: 'process', pid: 264, ppid: 32, created: 1795673538430, exe: 'C:\\x\\t1.exe', cmd: 't1.exe "a b" \u0001', time: 1795673538656 })
    expect(parseHelperLine('{"t":"exit","pid":264,"code":null,"time":5}')).toEqual({ t: 'exit', pid: 264, code: null, time: 5 })
    expect(parseHelperLine('{"t":"connection","proto":"tcp","src":"10.0.0.2","sport":50000,"dst":"10.0.0.254","dport":80,"pid":7,"time":5}'))
      .toEqual({ t: 'connection', proto: 'tcp', src: '10.0.0.2', sport: 50000, dst: '10.0.0.254', dport: 80, pid: 7, time: 5 })
    expect(parseHelperLine('{"t":"registry","op":"written","key":"HKEY_CURRENT_USER\\\\Run","name":"X","data":7,"type":4,"size":4,"time":5}'))
      .toEqual({ t: 'registry', op: 'written', key: 'HKEY_CURRENT_USER\\Run', name: 'X', data: 7, time: 5 })
    expect(parseHelperLine('{"t":"limit","what":"processes","max":4096}')).toEqual({ t: 'limit', what: 'processes', max: 4096 })
    expect(parseHelperLine('{"t":"process","pid":1,"ppid":0,"created":null,"exe":null,"cmd":"abc","cmd_truncated":true,"time":1}')?.t).toBe('process')
    expect((parseHelperLine('{"t":"process","pid":1,"ppid":0,"created":null,"exe":null,"cmd":"abc","cmd_truncated":true,"time":1}') as { cmd: string }).cmd).toBe('abc…')
  })

  it('skips what is not a line it knows, whatever it is', () => {
    for (const line of ['', 'not json', '[1,2]', 'null', '"x"', '{"t":"process","pid":-1,"ppid":0}', '{"t":"process","pid":1.5,"ppid":0}',
      '{"t":"process","pid":"1","ppid":0}', '{"t":"connection","proto":"tcp","src":"a","sport":70000,"dst":"b","dport":1,"pid":1}',
      '{"t":"registry","op":"renamed","key":"k","name":"n"}', '{"t":"registry","op":"written","key":5,"name":"n"}', '{"t":"surprise"}',
      `{"t":"process","pid":1,"ppid":0,"cmd":"${'x'.repeat(MAX_LINE)}"}`]) {
      expect(parseHelperLine(line), line.slice(0, 80)).toBeNull()
    }
  })

  it('cuts strings to MAX_STRING', () => {
    const e = parseHelperLine(`{"t":"process","pid":1,"ppid":0,"cmd":"${'y'.repeat(MAX_STRING + 500)}","time":1}`) as { cmd: string }
    expect(e.cmd.length).toBe(MAX_STRING)
  })

  it('splits a stream into lines in any chunking, dropping an over-long line whole and going on after it', () => {
    const lines: string[] = []
    const s = new LineSplitter((l) => lines.push(l))
    const text = `a\r\nbc\n${'z'.repeat(MAX_LINE + 10)}\nd\n`
    for (let i = 0; i < text.length; i += 997) s.push(text.slice(i, i + 997))
    s.push('tail-without-newline')
    expect(lines).toEqual(['a', 'bc', 'd'])
    expect(s.dropped).toBe(1)
  })
})
