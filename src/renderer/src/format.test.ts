import { describe, expect, it } from 'vitest'
import { counted, exactBytes, formatBytes, formatDuration, formatExact, formatRelative, hasInvisible, parseDate, splitInvisible } from './format'

describe('format', () => {
  it('says a count of one in the singular', () => {
    expect(counted(1, 'task')).toBe('1 task')
    expect(counted(0, 'task')).toBe('0 tasks')
    expect(counted(2, 'task')).toBe('2 tasks')
    expect(counted(1200, 'process', 'processes')).toBe('1,200 processes')
    expect(counted(1, 'process', 'processes')).toBe('1 process')
    expect(exactBytes(1)).toBe('1 byte')
    expect(exactBytes(2048)).toBe('2,048 bytes')
  })

  it('names invisible and bidi characters instead of passing them through', () => {
    expect(splitInvisible('invoice\u202Egpj.exe')).toEqual([{ text: 'invoice' }, { control: 'RLO', code: 0x202e }, { text: 'gpj.exe' }])
    expect(splitInvisible('a\u0000b\u2067')).toEqual([{ text: 'a' }, { control: 'NUL', code: 0 }, { text: 'b' }, { control: 'RLI', code: 0x2067 }])
    expect(splitInvisible('\u0085')).toEqual([{ control: 'U+0085', code: 0x85 }])
    expect(splitInvisible('отчёт ☃.pdf')).toEqual([{ text: 'отчёт ☃.pdf' }])
    expect(hasInvisible('plain')).toBe(false)
    expect(hasInvisible('x\u200by')).toBe(true)
    expect(hasInvisible('x\u200by')).toBe(true)
    // Asking first leaves splitInvisible whole (a shared global regex once skipped the start).
    expect(hasInvisible('abcdef\u200b')).toBe(true)
    expect(splitInvisible('vpn\u202Ede')).toEqual([{ text: 'vpn' }, { control: 'RLO', code: 0x202e }, { text: 'de' }])
  })

  it('uses the shared set: soft hyphens, line separators, Hangul fillers and tag characters are named too', () => {
    expect(splitInvisible('a\u00adb\u2028c\u3164d\u{E0041}')).toEqual([
      { text: 'a' }, { control: 'U+00AD', code: 0xad }, { text: 'b' }, { control: 'U+2028', code: 0x2028 },
      { text: 'c' }, { control: 'U+3164', code: 0x3164 }, { text: 'd' }, { control: 'U+E0041', code: 0xe0041 }
    ])
  })

  it('reads sizes, dates and durations the way people do', () => {
    expect(formatBytes(0)).toBe('0 B')
    expect(formatBytes(1536)).toBe('1.50 KiB')
    expect(formatBytes(50 * 1024 * 1024)).toBe('50.0 MiB')
    expect(formatBytes(undefined)).toBe('—')
    const d = parseDate('2026-11-23 10:04:05')!
    expect(formatExact(d)).toBe('2026-11-23 10:04:05')
    expect(parseDate(1763900000)!.getTime()).toBe(1763900000 * 1000)
    expect(parseDate('garbage')).toBeNull()
    expect(formatRelative(new Date(d.getTime() - 180_000), d)).toBe('3 minutes ago')
    expect(formatRelative(new Date(d.getTime() - 86400_000), d)).toBe('yesterday')
    expect(formatDuration(3725)).toBe('1 h 02 min')
    expect(formatDuration(45)).toBe('45 s')
  })
})
