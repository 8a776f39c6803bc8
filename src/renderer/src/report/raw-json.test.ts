import { describe, expect, it } from 'vitest'
import { escapeInvisible } from './RawJsonView'

describe('raw JSON text', () => {
  it('escapes the invisible set as \\u escapes, a pair for an astral character, and keeps the indentation', () => {
    const json = JSON.stringify({ name: 'in\u200Bvoice\u202Egpj.exe', tag: 'a\u{E0041}b', c1: '\u0085', nl: 'x\ny' }, null, 2)
    const shown = escapeInvisible(json)
    expect(shown).toContain('"in\\u200bvoice\\u202egpj.exe"')
    expect(shown).toContain('"a\\udb40\\udc41b"')
    expect(shown).toContain('"\\u0085"')
    expect(shown).toContain('"x\\ny"')
    expect(shown.split('\n')).toHaveLength(json.split('\n').length)
    // Still the same JSON.
    expect(JSON.parse(shown)).toEqual(JSON.parse(json))
  })
})
