// `aviary machines create linux` as users type it: a bad flag is named before anything is made,
// a missing network says which command makes it, and neither leaves anything behind.
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { ensureLibvirtd } from '../../../test/fixtures/libvirtd'

const run = promisify(execFile)
const CLI = path.resolve('bin/aviary.js')
const data = mkdtempSync(path.join(tmpdir(), 'aviary-create-cli-'))
afterAll(() => rmSync(data, { recursive: true, force: true }))

const fails = (args: string[]): Promise<{ code: number; stderr: string; stdout: string }> =>
  run(process.execPath, [CLI, 'machines', 'create', 'linux', '--data', data, ...args]).then(
    () => { throw new Error('should fail') },
    (e: { code: number; stderr: string; stdout: string }) => e)

describe('aviary machines create linux', () => {
  it.each([
    [['--count', '0'], /^aviary: --count: 0 is not a whole number from 1 to 32\n$/],
    [['--name', '../x'], /^aviary: --name: "\.\.\/x" is not a machine name/],
    [['--memory', '64'], /^aviary: --memory: 64 MiB is not a whole number from 256 to 65536/],
    [['--network', 'Not-Ok'], /^aviary: --network: "Not-Ok" is not a network the builder can use/],
    [['--count', 'two'], /count must be a whole number/]
  ])('%j: refused with the flag named', async (args, said) => {
    const r = await fails(args)
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(said)
  })

  it('says which command makes a missing network, and leaves nothing behind', async () => {
    await ensureLibvirtd('qemu:///system')
    const r = await fails(['--network', 'avlxnone', '--uri', 'qemu:///system'])
    expect(r.stderr).toMatch(/libvirt has no network 'avlxnone' with an address: make it with `sudo aviary setup --user \$USER`/)
    expect(existsSync(path.join(data, 'machines.json'))).toBe(false)
    expect(readdirSync(path.join(data, 'machines'))).toEqual([])
  }, 120_000)

  it('--json: the events and the error as JSON lines', async () => {
    const r = await fails(['--network', 'avlxnone', '--uri', 'qemu:///system', '--json'])
    const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: { seq: number; step: string; kind: string } })
    expect(events[0]!.event).toMatchObject({ seq: 1, step: 'check', kind: 'step' })
    expect(events.some((e) => e.event.step === 'cleanup')).toBe(true)
  }, 120_000)
})
