// libvirt's test driver keeps the state of test:///default only while some connection to it is
// open: once the last one closes, the next `virsh` finds a fresh world again (measured: a domain
// defined by one `virsh define` was gone for the next `virsh dumpxml`). A test that drives it with
// one virsh process per step holds an idle virsh shell open for its duration.
import { spawn, type ChildProcess } from 'node:child_process'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { ensureLibvirtd } from '../fixtures/libvirtd'

const run = promisify(execFile)

export interface HeldTestDriver {
  uri: string
  release(): Promise<void>
}

export async function holdTestDriver(uri = 'test+unix:///default'): Promise<HeldTestDriver> {
  await ensureLibvirtd(uri)
  const shell: ChildProcess = spawn('virsh', ['-c', uri], { stdio: ['pipe', 'ignore', 'ignore'] })
  // Held once a domain defined by one virsh process is still there for the next one.
  const dir = mkdtempSync(path.join(tmpdir(), 'avwv-hold-'))
  const probe = `avwv-hold-${process.pid}`
  writeFileSync(path.join(dir, 'probe.xml'), `<domain type='test'><name>${probe}</name><memory>65536</memory><os><type>hvm</type></os></domain>`)
  const deadline = Date.now() + 30_000
  try {
    for (;;) {
      if (shell.exitCode !== null) throw new Error(`the holding virsh shell exited (${shell.exitCode})`)
      await run('virsh', ['-q', '-c', uri, 'define', path.join(dir, 'probe.xml')])
      const held = await run('virsh', ['-q', '-c', uri, 'undefine', probe]).then(() => true, () => false)
      if (held) break
      if (Date.now() > deadline) throw new Error(`libvirt's test driver at ${uri} forgets between connections`)
      await new Promise((r) => setTimeout(r, 200))
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return {
    uri,
    release: async () => {
      shell.stdin?.end('quit\n')
      await new Promise<void>((resolve) => {
        if (shell.exitCode !== null) return resolve()
        const t = setTimeout(() => { shell.kill('SIGKILL'); resolve() }, 5000)
        shell.once('exit', () => { clearTimeout(t); resolve() })
      })
    }
  }
}
