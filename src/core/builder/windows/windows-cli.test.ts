// `aviary machines create windows` as a user types it (bin/aviary.js, the built bundle): bad input
// ends with exit status 1 and one line naming the flag, and nothing is made in the data directory
// but the empty machines.json every command writes. The whole command on a stand-in ISO is in
// create.test.ts.
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const ROOT = path.resolve(__dirname, '../../../..')

describe('aviary machines create windows (the command line)', () => {
  let dir: string
  let notAnIso: string
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'avwv-cli-'))
    notAnIso = path.join(dir, 'Win10.iso')
    writeFileSync(notAnIso, 'not an ISO\n')
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const create = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
    const data = path.join(dir, 'data')
    return run(process.execPath, [path.join(ROOT, 'bin/aviary.js'), 'machines', 'create', 'windows', '--data', data, '--uri', 'test+unix:///default', ...args], { timeout: 60_000 })
      .then((r) => ({ code: 0, ...r }), (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }))
  }

  it.each([
    [['--iso', '/nonexistent/Win10.iso', '--ip', '192.168.122.50'], /^aviary: --iso: \/nonexistent\/Win10\.iso is not a file$/m],
    [['--ip', '192.168.122.50', '--iso', 'NOTISO', '--user', 'a"b'], /^aviary: --user: 'a"b' must be/m],
    [['--ip', '192.168.122.50', '--iso', 'NOTISO', '--password', 'x\u0007y'], /^aviary: --password: must not hold control/m],
    [['--ip', '192.168.122.50/24', '--iso', 'NOTISO'], /^aviary: --ip: '192\.168\.122\.50\/24' is not an IPv4 address$/m],
    [['--ip', '192.168.122.50', '--iso', 'NOTISO', '--windows-version', '11', '--firmware', 'bios'], /^aviary: --firmware: Windows 11 installs only on UEFI firmware$/m],
    [['--ip', '192.168.122.50', '--iso', 'NOTISO', '--name', '../x'], /^aviary: --name: '\.\.\/x' must be/m],
    [['--ip', '192.168.122.50', '--iso', 'NOTISO', '--agent', '/etc/hostname'], /^aviary: --iso: .*has no sources\/install\.wim or sources\/install\.esd/m]
  ])('%j', async (args, message) => {
    const r = await create(...args.map((a) => (a === 'NOTISO' ? notAnIso : a)))
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(message)
    expect(existsSync(path.join(dir, 'data', 'machines'))).toBe(false)
    const file = path.join(dir, 'data', 'machines.json')
    if (existsSync(file)) expect(JSON.parse(readFileSync(file, 'utf8')).machines).toEqual([])
  })

  it('needs --iso and --ip', async () => {
    const r = await create('--iso', notAnIso)
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/required option '--ip <address>' not specified/)
  })
})
