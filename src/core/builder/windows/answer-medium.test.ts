// The answer medium built with the real xorriso and listed back with it: exactly Autounattend.xml,
// the agent and the first-logon script in its root, under the same names in the Rock Ridge tree
// (what Linux reads) and the Joliet tree (what Windows reads), with the bytes that went in.
// The agent here is a stand-in file: what is tested is the medium, not the agent (the Wine test
// puts the real one through the medium).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AnswerMediumError, buildAnswerMedium, listIsoRoot, MEDIUM_LABEL } from './answer-medium'
import { autounattendXml } from './autounattend'
import { firstLogonScript, MEDIUM_FILES } from './first-logon'
import { checkWindowsInput } from './options'

describe('the answer medium', () => {
  let dir: string
  let iso: string
  let agent: string
  let unattend: string
  let script: string

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'avwv-medium-'))
    agent = path.join(dir, 'agent-stand-in.exe')
    writeFileSync(agent, randomBytes(300_000))
    unattend = autounattendXml(checkWindowsInput({ name: 'w', password: 'p<&>"', ip: '192.168.122.101' }), 'Windows 10 Pro')
    script = firstLogonScript({ agentPort: 8000 })
    iso = path.join(dir, 'answer.iso')
    await buildAnswerMedium({ unattend, script, agentExe: agent, out: iso })
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const expected = (): { name: string; size: number }[] => [
    { name: MEDIUM_FILES.unattend, size: Buffer.byteLength(unattend) },
    { name: MEDIUM_FILES.agent, size: 300_000 },
    { name: MEDIUM_FILES.script, size: Buffer.byteLength(script) }
  ].sort((a, b) => a.name.localeCompare(b.name))

  it('holds exactly Autounattend.xml, guestd.exe and guestsetup.cmd, in both trees', async () => {
    const sorted = (l: { name: string; size: number }[]): { name: string; size: number }[] => [...l].sort((a, b) => a.name.localeCompare(b.name))
    expect(sorted(await listIsoRoot(iso, 'rockridge'))).toEqual(expected())
    expect(sorted(await listIsoRoot(iso, 'joliet'))).toEqual(expected())
    // The volume label and the file names say nothing of Aviary.
    const info = execFileSync('xorriso', ['-no_rc', '-indev', iso, '-pvd_info'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
    expect(info).toMatch(new RegExp(`Volume Id\\s*:\\s*${MEDIUM_LABEL}\\b`))
    expect(info).not.toMatch(/aviary/i)
  })

  it('gives back the bytes that went in', () => {
    const out = path.join(dir, 'extracted')
    execFileSync('xorriso', ['-no_rc', '-osirrox', 'on', '-indev', iso, '-extract', '/', out], { stdio: 'pipe' })
    expect(readdirSync(out).sort()).toEqual(expected().map((e) => e.name))
    expect(readFileSync(path.join(out, MEDIUM_FILES.unattend), 'utf8')).toBe(unattend)
    expect(readFileSync(path.join(out, MEDIUM_FILES.script), 'utf8')).toBe(script)
    expect(readFileSync(path.join(out, MEDIUM_FILES.agent)).equals(readFileSync(agent))).toBe(true)
  })

  it('replaces an earlier medium instead of adding to it', async () => {
    await buildAnswerMedium({ unattend: '<unattend/>\n', script, agentExe: agent, out: iso })
    const names = (await listIsoRoot(iso)).map((e) => e.name).sort()
    expect(names).toEqual(expected().map((e) => e.name))
    expect((await listIsoRoot(iso)).find((e) => e.name === MEDIUM_FILES.unattend)?.size).toBe(12)
    expect(readdirSync(dir).filter((n) => n.startsWith('.answer-'))).toEqual([])
  })

  it('says how to get the agent when it is missing', async () => {
    await expect(buildAnswerMedium({ unattend, script, agentExe: path.join(dir, 'none.exe'), out: path.join(dir, 'x.iso') }))
      .rejects.toThrow(AnswerMediumError)
    await expect(buildAnswerMedium({ unattend, script, agentExe: path.join(dir, 'none.exe'), out: path.join(dir, 'x.iso') }))
      .rejects.toThrow(/npm run build:agent/)
  })
})
