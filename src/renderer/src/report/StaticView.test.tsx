// @vitest-environment jsdom
// Static analysis: field names read as words (an ELF header's `start_of_section_headers` is
// "Start of section headers", the raw key on hover), and an empty section says why there is none.
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, render, screen } from '@testing-library/react'
import { StaticView } from './StaticView'

afterEach(cleanup)

describe('the Static tab', () => {
  it('names an ELF header\'s fields in words, the raw key on hover', () => {
    render(<StaticView report={{ static: { elf: { file_header: { class: 'ELF64', os_abi: 'UNIX - System V', start_of_section_headers: 13_800, number_of_section_headers: 29 } } } }} />)
    const field = screen.getByRole('rowheader', { name: 'Start of section headers' })
    expect(field.nextElementSibling?.textContent).toBe('13800')
    expect(field.querySelector('[title]')?.getAttribute('title')).toBe('start_of_section_headers')
    expect(screen.getByRole('rowheader', { name: 'OS ABI' })).toBeTruthy()
    expect(document.body.textContent).not.toContain('start_of_section_headers')
  })

  it('says why a file has no static analysis', () => {
    render(<StaticView report={{ static: {}, target: { category: 'file', file: { name: 'dropper.sh', size: 354, type: 'POSIX shell script, ASCII text executable' } } }} />)
    expect(screen.getByTestId('no-static').textContent).toBe(
      'No static analysis of this 354 B file: its type is POSIX shell script, ASCII text executable, and static analysis reads PE and ELF executables, PDF and Office documents, and zip and tar archives.')
    cleanup()
    render(<StaticView report={{ target: { category: 'url', url: 'http://example.com/' } }} />)
    expect(screen.getByTestId('no-static').textContent).toBe('No static analysis: a URL task has no file to read.')
  })
})
