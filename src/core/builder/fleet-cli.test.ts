// `aviary machines list|delete|leftovers|prepare` as users type them: on a data folder no service
// holds (the command works on it itself), and on one a running service holds (the command goes
// through its API, which refuses what a task or prepare mode holds).
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { startHarness } from '../../../test/service-harness'

const run = promisify(execFile)
const CLI = path.resolve('bin/aviary.js')
const data = mkdtempSync(path.join(tmpdir(), 'aviary-fleet-cli-'))
afterAll(() => rmSync(data, { recursive: true, force: true }))

const aviary = (args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> =>
  run(process.execPath, [CLI, 'machines', ...args], { env: { ...process.env, ...env } }).then(
    (r) => ({ code: 0, ...r }), (e: { code: number; stdout: string; stderr: string }) => e)

const fleet = { kvm: { uri: 'test+unix:///default' }, machines: [{ name: 'h1', ip: '192.0.2.41', driver: 'physical', platform: 'linux' }, { name: 'h2', ip: '192.0.2.42', driver: 'physical', platform: 'linux' }] }

describe('aviary machines, on a data folder no service holds', () => {
  it('says there is no machine yet, and how to make one', async () => {
    const r = await aviary(['list', '--data', data])
    expect(r.stdout).toBe('no machine yet: make a Linux one with `aviary machines create linux` (after `sudo aviary setup --user $USER` once)\n')
  })

  it('lists, finds and removes leftovers, deletes', async () => {
    writeFileSync(path.join(data, 'machines.json'), JSON.stringify(fleet))
    mkdirSync(path.join(data, 'machines', 'ghost'), { recursive: true })
    writeFileSync(path.join(data, 'machines', 'ghost', 'disk.qcow2'), Buffer.alloc(2 ** 20, 7))
    const listed = await aviary(['list', '--data', data])
    expect(listed.stdout).toMatch(/^h1 +physical +linux +192\.0\.2\.41 +\(not made by Aviary\)$/m)
    const found = await aviary(['leftovers', '--data', data])
    expect(found.stdout).toBe('folder    ghost (1.0 MiB): machines/ghost belongs to no machine of machines.json\nremove them with: aviary machines leftovers --remove\n')
    expect((await aviary(['leftovers', '--data', data, '--remove'])).stdout).toMatch(/removed 1\n$/)
    expect(existsSync(path.join(data, 'machines', 'ghost'))).toBe(false)
    expect((await aviary(['leftovers', '--data', data])).stdout).toMatch(/^no leftovers/)
    const gone = await aviary(['delete', 'nosuch', '--data', data])
    expect(gone).toMatchObject({ code: 1, stderr: "aviary: there is no machine 'nosuch' in machines.json\n" })
    expect((await aviary(['delete', 'h2', '--data', data])).stdout).toBe('deleted h2: its entry in machines.json\n')
    expect((JSON.parse(readFileSync(path.join(data, 'machines.json'), 'utf8')) as typeof fleet).machines.map((m) => m.name)).toEqual(['h1'])
    const prep = await aviary(['prepare', 'h1', '--data', data])
    expect(prep.code).toBe(1)
    expect(prep.stderr).toMatch(/prepare mode goes through the running service/)
  })
})

describe('aviary machines, while a service holds the data folder', () => {
  it('goes through its API', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'aviary-fleet-cli-svc-'))
    const h = await startHarness({ dataDir: dir, machines: fleet })
    try {
      const remote = ['--data', dir, '--remote', h.url]
      // A machine a task holds is refused by the service, not deleted behind its back.
      h.sql("UPDATE machines SET locked = 1 WHERE name = 'h2'")
      const held = await aviary(['delete', 'h2', ...remote])
      expect(held.code).toBe(1)
      expect(held.stderr).toMatch(/^aviary: h2 is in use/)
      expect((await aviary(['delete', 'h1', ...remote])).stdout).toBe('deleted h1: its entry in machines.json\n')
      // Without an engine the service cannot prepare: it says so.
      const prep = await aviary(['prepare', 'h2', ...remote])
      expect(prep.stderr).toMatch(/the analysis engine is not running/)
      const down = await aviary(['delete', 'h2', '--data', dir, '--remote', 'http://127.0.0.1:9'])
      expect(down.stderr).toMatch(/the service at http:\/\/127\.0\.0\.1:9 does not answer/)
    } finally {
      await h.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
