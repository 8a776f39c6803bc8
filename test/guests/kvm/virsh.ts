// virsh for the test-guest fixture and its test: one process per call (~20 ms), arguments as an
// array. virsh is also what covers snapshots, screenshots and dumps, which the @unraid/libvirt
// binding lacks (docs/machines.md, "Drivers").
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)

export class VirshError extends Error {}

/** Runs `virsh -c uri ...args` and returns its stdout; a failure carries virsh's stderr. */
export async function virsh(uri: string, args: string[], timeoutMs = 120_000): Promise<string> {
  try {
    const { stdout } = await run('virsh', ['-q', '-c', uri, ...args], { timeout: timeoutMs, maxBuffer: 16 * 2 ** 20 })
    return stdout
  } catch (err) {
    const e = err as { stderr?: string; message: string }
    throw new VirshError(`virsh ${args.join(' ')}: ${(e.stderr ?? '').trim() || e.message}`)
  }
}

/** `virsh domstate`: "running", "shut off", ... or undefined when the domain is not defined. */
export async function domState(uri: string, domain: string): Promise<string | undefined> {
  try {
    return (await virsh(uri, ['domstate', domain])).trim()
  } catch (err) {
    if (/failed to get domain|Domain not found/i.test(String(err))) return undefined
    throw err
  }
}

/** Powers the domain off if it runs (a hard stop, as Cuckoo's kvm machinery does). */
export async function destroyIfRunning(uri: string, domain: string): Promise<void> {
  const state = await domState(uri, domain)
  if (state !== undefined && state !== 'shut off') await virsh(uri, ['destroy', domain])
}

export async function waitForState(uri: string, domain: string, want: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let state: string | undefined
  while (Date.now() < deadline) {
    state = await domState(uri, domain)
    if (state === want) return
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new VirshError(`${domain} is "${state}", not "${want}", after ${timeoutMs} ms`)
}
