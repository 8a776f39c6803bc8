// @vitest-environment jsdom
// The Offline page: a real tar.gz made by tar is picked, read in the page, and shown with the
// report views. jsdom has no URL.createObjectURL: a stand-in numbers the blobs (the blob: URLs
// themselves are checked in offline/offline.test.ts, under Node).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { cleanup, render, screen } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { OfflinePage } from './Offline'

let dir: string
let n = 0
beforeAll(() => {
  URL.createObjectURL = () => `blob:test/${++n}`
  URL.revokeObjectURL = () => undefined
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-offline-page-'))
  mkdirSync(path.join(dir, '3/reports'), { recursive: true })
  mkdirSync(path.join(dir, '3/shots'), { recursive: true })
  writeFileSync(path.join(dir, '3/reports/report.json'), JSON.stringify({ info: { id: 3, score: 6 }, target: { category: 'file', file: { name: 'evil\u202Etxt.exe' } },
    signatures: [{ name: 'drops_exe', description: 'Drops an executable', severity: 3, marks: [] }] }))
  writeFileSync(path.join(dir, '3/shots/0001.jpg'), 'jpeg')
  execFileSync('tar', ['-czf', 'a.tar.gz', '3'], { cwd: dir })
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))
afterEach(cleanup)

describe('Offline page', () => {
  it('opens a tar.gz and shows its report with the same views', async () => {
    const user = userEvent.setup()
    render(<OfflinePage />)
    const file = new File([readFileSync(path.join(dir, 'a.tar.gz'))], 'a.tar.gz', { type: 'application/gzip' })
    await user.upload(screen.getByLabelText('Analysis archive'), file)
    expect((await screen.findAllByRole('heading', { level: 3 })).map((x) => x.textContent)).toContain('evilRLOtxt.exe')
    expect(screen.getByText('Drops an executable')).toBeTruthy()
    await user.click(screen.getByRole('tab', { name: 'Screenshots' }))
    expect(screen.getByRole('button', { name: /Screenshot 0001\.jpg/ }).querySelector('img')?.getAttribute('src')).toMatch(/^blob:test\//)
  })

  it('says why a file is not an analysis archive', async () => {
    // `accept` is only the picker's filter: a user can still choose any file.
    const user = userEvent.setup({ applyAccept: false })
    render(<OfflinePage />)
    await user.upload(screen.getByLabelText('Analysis archive'), new File(['just text'], 'notes.txt'))
    expect((await screen.findByRole('alert')).textContent).toMatch(/Not a tar, tar.gz, tar.bz2 or zip/)
  })
})
