// @vitest-environment jsdom
import { describe, expect, it } from 'vitest'
import { render } from '@testing-library/react'
import { SafeLines, SafeText, Bytes } from './text'

describe('SafeText', () => {
  it('shows a right-to-left override as a marker and never puts the character in the page', () => {
    const { container } = render(<SafeText value={'invoice\u202Egpj.exe'} />)
    expect(container.textContent).toBe('invoiceRLOgpj.exe')
    expect(container.innerHTML).not.toContain('\u202E')
    expect(container.querySelector('[data-control="RLO"]')?.getAttribute('title')).toMatch(/U\+202E/)
  })

  it('gives the exact size on hover', () => {
    const { container } = render(<Bytes value={123456789} />)
    expect(container.textContent).toBe('118 MiB')
    expect(container.firstElementChild?.getAttribute('title')).toBe('123,456,789 bytes')
  })
})

describe('SafeLines', () => {
  it('keeps line breaks and tabs as layout and shows every other invisible character', () => {
    const { container } = render(<pre><SafeLines value={'HTTP/1.1 200 OK\r\nX-Name:\tevil\u202Etxt.exe\nX-Zero: a\u200Bb'} /></pre>)
    expect(container.textContent).toBe('HTTP/1.1 200 OK\nX-Name:\tevilRLOtxt.exe\nX-Zero: aZWSPb')
    expect(container.innerHTML).not.toMatch(/[\u202E\u200B\r]/)
    expect(container.querySelectorAll('[data-control]')).toHaveLength(2)
  })

  it('cuts long text and says how much is left out', () => {
    const { container } = render(<SafeLines value={'x'.repeat(30)} max={10} />)
    expect(container.textContent).toBe(`${'x'.repeat(10)} … (20 more characters)`)
  })
})
