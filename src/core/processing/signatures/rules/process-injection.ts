// Fires when a monitored process (Cuckoo monitor logs, behavior.processes[].calls) writes into
// another process's memory and then makes code run there: WriteProcessMemory/NtWriteVirtualMemory
// or NtMapViewOfSection followed by a remote thread, an APC, or a changed thread context. Marks
// are the calls themselves (pid, call index, call), as Cuckoo's injection signatures give them.
// Writes into the process itself (handle 0xffffffff / -1, the "current process" pseudo-handle) do
// not count.
import type { SignatureRule } from '../signature'
import { isObj, num, obj, objs, str } from '../../../reporting/report-view'

const WRITE = new Set(['WriteProcessMemory', 'NtWriteVirtualMemory', 'NtMapViewOfSection'])
const RUN = new Set(['CreateRemoteThread', 'CreateRemoteThreadEx', 'NtCreateThreadEx', 'RtlCreateUserThread',
  'QueueUserAPC', 'NtQueueApcThread', 'NtQueueApcThreadEx', 'SetThreadContext', 'NtSetContextThread'])
const SELF = new Set(['0xffffffff', '0xffffffffffffffff', '-1'])

function targetsOther(call: Record<string, unknown>): boolean {
  const args = obj(call, 'arguments')
  const h = args.process_handle ?? args.ProcessHandle
  const handle = typeof h === 'number' ? String(h) : typeof h === 'string' ? h.toLowerCase() : ''
  return !SELF.has(handle)
}

export const processInjection: SignatureRule = {
  name: 'process_injection',
  description: 'Writes code into another process and makes it run (process injection)',
  severity: 3,
  categories: ['injection'],
  ttp: ['T1055'],
  run(report, mark) {
    for (const p of objs(report, 'behavior', 'processes')) {
      const calls = Array.isArray(p.calls) ? p.calls : []
      const pid = num(p, 'pid') ?? 0
      let write: { cid: number; call: Record<string, unknown> } | null = null
      for (let cid = 0; cid < calls.length; cid++) {
        const call: unknown = calls[cid]
        if (!isObj(call)) continue
        const api = str(call, 'api')
        if (write === null && WRITE.has(api) && targetsOther(call)) write = { cid, call }
        else if (write !== null && RUN.has(api)) {
          mark.call(pid, write.cid, write.call)
          mark.call(pid, cid, call)
          write = null
        }
      }
    }
  }
}
