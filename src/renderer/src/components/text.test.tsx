// @vitest-environment jsdom
import { describe, expect, it } from 'vitest'
import { render } from '@testing-library/react'
import { SafeText, Bytes } from './text'

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
