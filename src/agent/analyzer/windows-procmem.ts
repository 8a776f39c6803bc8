// Process memory dumps on Windows guests (option procmemdump, as on Linux: procmem.ts): at the
// end of the run, the sample's processes still running are dumped by the native helper
// (`helper.exe --dump PID --max BYTES`: VirtualQueryEx's regions read with ReadProcessMemory, in
// Cuckoo 2's format, on its standard output) and streamed to the result server as
// memory/<pid>-1.dmp; nothing is written to the guest's disk. Dumps at each process's exit are not
// done on Windows: that would need the helper to debug the sample's processes.
import { spawn } from 'node:child_process'
import { uploadFile, type NetlogLog, type NetlogServer } from './netlog.js'
import type { ProcMemLimits } from './procmem.js'

export async function dumpWindowsProcesses(helper: string, pids: number[], server: NetlogServer, limits: ProcMemLimits, log: NetlogLog): Promise<number> {
  let used = 0
  let dumps = 0
  for (const pid of pids) {
    const max = Math.min(limits.perProcess, limits.total - used)
    if (max <= 0) {
      log.warning(`process memory: procmem_total (${limits.total} bytes) reached; later processes are not dumped`)
      break
    }
    const child = spawn(helper, ['--dump', String(pid), '--max', String(max)], { stdio: ['ignore', 'pipe', 'ignore'], windowsHide: true })
    let bytes = 0
    child.stdout.on('data', (b: Buffer) => (bytes += b.length))
    const exited = new Promise<number | null>((ok) => child.once('close', (code) => ok(code)))
    try {
      await uploadFile(server, `memory/${pid}-1.dmp`, '', [pid], child.stdout)
    } catch (err) {
      log.warning(`process memory of ${pid} could not be sent: ${(err as Error).message}`)
      child.kill()
    }
    const code = await exited
    if (code !== 0 || bytes === 0) {
      log.warning(`process memory of ${pid}: nothing read (helper exit code ${code})`)
      continue
    }
    used += bytes
    dumps++
    log.info(`process memory of ${pid} (at the end): ${bytes} bytes`)
  }
  return dumps
}
