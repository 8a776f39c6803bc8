import { describe, expect, it } from 'vitest'
import { printable, validationMessage } from './request-errors'

describe('printable', () => {
  it('replaces every character of the invisible set with ?, an astral one by one ?, and cuts long values', () => {
    expect(printable('a\u0000b\u001b[31m\u0085c')).toBe('a?b?[31m?c')
    expect(printable('invoice\u202Egpj\u200B\u2066.exe')).toBe('invoice?gpj??.exe')
    expect(printable('x\u{E0041}y')).toBe('x?y')
    expect(printable('é漢字 🐦')).toBe('é漢字 🐦')
    expect(printable('a'.repeat(70))).toBe(`${'a'.repeat(64)}…`)
    expect(printable('a'.repeat(300), 200)).toBe(`${'a'.repeat(200)}…`)
  })

  it('is what a 400 quotes of the refused value', () => {
    const message = validationMessage([{ instancePath: '/tags', keyword: 'maxLength', message: 'too long', params: {} }], 'body', { tags: 'x\u202Ey' })
    expect(message).toBe("tags: too long (got 'x?y')")
  })
})
