// Fires when a process asks to be traced by its parent (ptrace(PTRACE_TRACEME)), the classic Linux
// check for a debugger: a process can have one tracer only, so the request fails under a debugger
// (or strace) and the sample knows it is watched. Seen in the calls.
import type { SignatureRule } from '../signature'

export const antidebugPtrace: SignatureRule = {
  name: 'antidebug_ptrace',
  description: 'Checks for a debugger by trying to trace itself (ptrace PTRACE_TRACEME)',
  severity: 2,
  categories: ['anti-debug'],
  ttp: ['T1622'],
  run() {},
  calls: {
    apis: ['ptrace'],
    onCall(call, pid, index, mark) {
      if (String(call.arguments.request ?? '') === 'PTRACE_TRACEME') mark.call(pid, index, call)
    }
  }
}
