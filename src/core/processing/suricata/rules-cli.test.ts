// `aviary rules` and doctor's IDS lines as a user runs them: the built bin, a real process, a data
// folder of the test's own. An import is listed with its count, refused a second time with the
// field named (exit 2), replaced with --replace, removed; doctor names Suricata's version and each
// set with its count and age, and its IDS lines never make it fail on their own.
import { afterAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const exec = promisify(execFile)
const BIN = path.resolve('bin/aviary.js')
const data = mkdtempSync(path.join(tmpdir(), 'aviary-rules-cli-'))
afterAll(() => rmSync(data, { recursive: true, force: true }))

async function aviary(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await exec(process.execPath, [BIN, ...args, '--data', data])
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

describe('aviary rules', () => {
  it('imports, lists, refuses a duplicate, replaces and removes a set; doctor reports them', async () => {
    const file = path.join(data, 'lab.rules')
    writeFileSync(file, 'alert tcp any any -> any any (msg:"LAB one"; content:"a1"; sid:3300001; rev:1;)\n#alert tcp any any -> any any (msg:"LAB off"; content:"a2"; sid:3300002; rev:1;)\nalert udp any any -> any any (msg:"LAB two"; content:"a3"; sid:3300003; rev:1;)\n')
    expect(await aviary('rules', 'import', file)).toMatchObject({ code: 0, stdout: 'imported lab: 2 rules in 1 files\n' })
    const list = await aviary('rules', 'list', '--json')
    expect(JSON.parse(list.stdout).map((s: { name: string; rules: number; kind: string }) => [s.name, s.kind, s.name === 'lab' ? s.rules : 'n'])).toEqual([
      ['bundled', 'bundled', 'n'], ['aviary', 'aviary', 'n'], ['lab', 'imported', 2]
    ])
    expect((await aviary('rules', 'list')).stdout).toMatch(/^lab +2 rules {2}imported 0 minutes ago from lab\.rules$/m)
    expect(await aviary('rules', 'import', file)).toMatchObject({ code: 2, stderr: "aviary rules: name: a rule set named 'lab' exists (replace it, or give another name)\n" })
    expect(await aviary('rules', 'import', file, '--replace')).toMatchObject({ code: 0, stdout: 'replaced lab: 2 rules in 1 files\n' })
    const doctor = await aviary('doctor')
    expect(doctor.stdout).toMatch(/^ {2}ok {3}suricata: 7\.\d+\.\d+ \(/m)
    expect(doctor.stdout).toMatch(/^ {2}ok {3}rules: aviary: 6 rules, updated \d+ (minute|hour|day)s? ago/m)
    expect(doctor.stdout).toMatch(/^ {2}ok {3}rules: lab: 2 rules, imported 0 minutes ago \(\d{4}-\d\d-\d\d; imported from lab\.rules\)$/m)
    expect(await aviary('rules', 'remove', 'lab')).toMatchObject({ code: 0, stdout: 'removed lab\n' })
    expect(await aviary('rules', 'remove', 'lab')).toMatchObject({ code: 1, stderr: 'aviary rules: no imported rule set named lab\n' })
  }, 60_000)
})
