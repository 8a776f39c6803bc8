// @vitest-environment jsdom
// Static analysis: field names read as words (an ELF header's `start_of_section_headers` is
// "Start of section headers", the raw key on hover), and an empty section says why there is none.
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, fireEvent, render, screen } from '@testing-library/react'
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
      'No static analysis of this 354 B file: its type is POSIX shell script, ASCII text executable, and static analysis reads PE and ELF executables, PDF and Office documents, Windows shortcuts, and zip and tar archives.')
    cleanup()
    render(<StaticView report={{ target: { category: 'url', url: 'http://example.com/' } }} />)
    expect(screen.getByTestId('no-static').textContent).toBe('No static analysis: a URL task has no file to read.')
  })

  it('shows each macro module\'s source, and its strings folded on request', () => {
    const code = 'Sub AutoOpen()\r\n  Shell Chr(99) & "md", 0\r\nEnd Sub\r\n'
    render(<StaticView report={{ static: { office: { format: 'ole', vba: ['Macros'], external_targets: [], macros: [
      { stream: 'Macros/VBA/ThisDocument', filename: 'ThisDocument.cls', orig_code: code, deobf: code.replace('Chr(99) & "md"', '"cmd"') },
      { stream: 'Macros/VBA/Module1', filename: 'Module1.bas', orig_code: 'x\u202e = 1', deobf: 'x\u202e = 1' }
    ] } } }} />)
    expect(screen.getByRole('region', { name: 'Macros' }).querySelector('h3')?.textContent).toBe('Macros(2)')
    const source = screen.getByLabelText('source of ThisDocument.cls')
    expect(source.textContent).toBe('Sub AutoOpen()\n  Shell Chr(99) & "md", 0\nEnd Sub\n')
    fireEvent.click(screen.getByRole('checkbox', { name: /strings folded/ }))
    expect(source.textContent).toContain('Shell "cmd", 0')
    // Nothing to fold: no toggle; a bidi override is shown as a marker, not applied.
    expect(screen.getAllByRole('checkbox')).toHaveLength(1)
    expect(screen.getByLabelText('source of Module1.bas').textContent).not.toContain('\u202e')
    cleanup()
    render(<StaticView report={{ static: { office: { format: 'ooxml', vba: [], external_targets: [], macros: [] } } }} />)
    expect(screen.getByText('No VBA macros.')).toBeTruthy()
  })

  it('lets a keyboard scroll what scrolls: the strings and a macro\'s source take focus and have a name', () => {
    render(<StaticView report={{ strings: Array.from({ length: 300 }, (_, i) => `string ${i}`), static: { office: { format: 'ole', vba: [], external_targets: [],
      macros: [{ stream: 'VBA/M', filename: 'M.bas', orig_code: 'x\r\n'.repeat(500), deobf: '' }] } } }} />)
    for (const name of ['Strings (scrollable)', 'source of M.bas']) {
      const el = screen.getByLabelText(name)
      expect(el.tabIndex, name).toBe(0)
      expect(el.className, name).toContain('overflow-auto')
    }
  })

  it('lists the URLs written in the file, as text', () => {
    render(<StaticView report={{ static: {}, target: { category: 'file', file: { name: 'a.exe', urls: ['http://c2.example/gate.php', 'https://evil\u202eexe.example/'] } } }} />)
    const list = screen.getByLabelText('URLs in the file (scrollable)')
    expect([...list.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['http://c2.example/gate.php', expect.stringMatching(/^https:\/\/evil.+exe\.example\/$/)])
    expect(list.textContent).not.toContain('\u202e')
    expect(list.querySelector('a')).toBeNull() // never a link into the sample's world
  })

  it('shows each version of a PDF: metadata, counts, URLs, embedded files and its JavaScript, beautified or as written', () => {
    const row = (version: number, extra: Record<string, unknown>) => ({ version, creator: '', creation: '', title: '', subject: '', producer: '', author: '', modification: '',
      javascript: [], urls: [], attachments: [], openaction: null, pdf_version: '1.7', counts: { objects: 3, javascript: 1 }, ...extra })
    render(<StaticView report={{ static: { pdf: [
      row(0, { title: 'Invoice', javascript: [{ orig_code: 'app.alert(1);this.x()', beautified: 'app.alert(1);\nthis.x()', urls: [] }], attachments: [{ filename: 'a.exe' }] }),
      row(1, { producer: 'Updater', urls: ['https://update.example/u'] })
    ] } }} />)
    const v0 = screen.getByRole('region', { name: 'PDF, version 0 (original)' })
    expect(v0.textContent).toContain('Invoice')
    expect(v0.textContent).toContain('a.exe')
    const code = screen.getByLabelText('JavaScript 1')
    expect(code.textContent).toBe('app.alert(1);\nthis.x()')
    fireEvent.click(screen.getByRole('checkbox', { name: 'script 1 as written' }))
    expect(code.textContent).toBe('app.alert(1);this.x()')
    const v1 = screen.getByRole('region', { name: 'PDF, version 1 (update)' })
    expect(v1.textContent).toContain('https://update.example/u')
    expect(v1.textContent).toContain('No JavaScript.')
    cleanup()
    // A report from before: one object of counts, shown as it is.
    render(<StaticView report={{ static: { pdf: { version: '1.4', objects: 7, javascript: 2 } } }} />)
    expect(screen.getByRole('region', { name: 'PDF' }).textContent).toContain('7')
  })
})
