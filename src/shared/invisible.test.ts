import { describe, expect, it } from 'vitest'
import { codePointLabel, hasInvisible, invisibleGlobal, invisibleName, isInvisible, replaceInvisible } from './invisible'

// One row per class of the set (src/shared/invisible.ts), each with every kind of character it holds
// that a sample has been seen to use, or could.
const CLASSES: Array<[string, number[]]> = [
  ['C0 controls', [0x00, 0x07, 0x08, 0x09, 0x0a, 0x0d, 0x1b, 0x1f]],
  ['DEL', [0x7f]],
  ['C1 controls (NEL, CSI)', [0x80, 0x85, 0x9b, 0x9f]],
  ['bidi embeddings and pop (LRE, RLE, PDF)', [0x202a, 0x202b, 0x202c]],
  ['bidi overrides (LRO, RLO)', [0x202d, 0x202e]],
  ['bidi isolates (LRI, RLI, FSI, PDI)', [0x2066, 0x2067, 0x2068, 0x2069]],
  ['bidi marks (LRM, RLM, ALM)', [0x200e, 0x200f, 0x061c]],
  ['zero-width characters (ZWSP, ZWNJ, ZWJ, WJ, BOM)', [0x200b, 0x200c, 0x200d, 0x2060, 0xfeff]],
  ['invisible operators and deprecated format controls', [0x2061, 0x2062, 0x2063, 0x2064, 0x206a, 0x206f]],
  ['soft hyphen, combining grapheme joiner, Mongolian vowel separator and selectors', [0x00ad, 0x034f, 0x180b, 0x180e, 0x180f]],
  ['line and paragraph separators', [0x2028, 0x2029]],
  ['Hangul fillers', [0x115f, 0x1160, 0x3164, 0xffa0]],
  ['variation selectors', [0xfe00, 0xfe0f, 0xe0100, 0xe01ef]],
  ['tag characters', [0xe0001, 0xe0020, 0xe0041, 0xe007f]],
  ['interlinear annotation marks', [0xfff9, 0xfffa, 0xfffb]],
  ['prepended concatenation marks and other Cf (Arabic number sign, Syriac abbreviation mark)', [0x0600, 0x06dd, 0x070f]],
  ['musical and shorthand format controls', [0x1d173, 0x1d17a, 0x1bca0]]
]

describe('the invisible character set', () => {
  it.each(CLASSES)('holds the %s', (_, codePoints) => {
    for (const cp of codePoints) {
      const c = String.fromCodePoint(cp)
      expect(isInvisible(cp), codePointLabel(cp)).toBe(true)
      expect(hasInvisible(`a${c}b`), codePointLabel(cp)).toBe(true)
      // Found in the middle of ordinary text, and matched whole (an astral character is one match).
      expect(replaceInvisible(`ab${c}cd`, (p) => `<${codePointLabel(p)}>`)).toBe(`ab<${codePointLabel(cp)}>cd`)
    }
  })

  it('holds a surrogate that is not half of a pair, whichever half, and not a pair', () => {
    expect(replaceInvisible('a\ud800b', (p) => `<${codePointLabel(p)}>`)).toBe('a<U+D800>b')
    expect(replaceInvisible('a\udc00b', (p) => `<${codePointLabel(p)}>`)).toBe('a<U+DC00>b')
    expect(replaceInvisible('\udc00\ud800', (p) => `<${codePointLabel(p)}>`)).toBe('<U+DC00><U+D800>')
    expect(hasInvisible('\ud83d\ude00')).toBe(false) // 😀, a pair
  })

  it('leaves what is drawn: letters of any script, digits, punctuation, spaces of any width, marks, private use, emoji', () => {
    const shown = [
      'invoice.exe', 'C:\\Windows\\System32\\cmd.exe /c "x"', 'Ünïcødé', 'файл.exe', 'ملف', 'קובץ', '文件', '🙂👍',
      ' \u00a0\u2002\u3000', 'e\u0301', '\ue000', '0123456789'
    ]
    for (const s of shown) expect(hasInvisible(s), JSON.stringify(s)).toBe(false)
  })

  it('each global expression keeps its own position: a test never makes the next search skip text', () => {
    const a = invisibleGlobal()
    const b = invisibleGlobal()
    expect(a.test('x\u202ey')).toBe(true)
    expect([...'\u202e.\u202e'.matchAll(b)].map((m) => m.index)).toEqual([0, 2])
    // The shared forms have no position at all.
    expect(hasInvisible('\u202e')).toBe(true)
    expect(hasInvisible('\u202e')).toBe(true)
    expect(replaceInvisible('\u202e\u202e', () => '_')).toBe('__')
    expect(replaceInvisible('\u202e\u202e', () => '_')).toBe('__')
  })

  it('names the characters an analyst knows, and the others by code point', () => {
    expect(invisibleName(0x202e)).toBe('RLO')
    expect(invisibleName(0x200b)).toBe('ZWSP')
    expect(invisibleName(0x2069)).toBe('PDI')
    expect(invisibleName(0x85)).toBe('U+0085')
    expect(invisibleName(0xe0041)).toBe('U+E0041')
  })
})
