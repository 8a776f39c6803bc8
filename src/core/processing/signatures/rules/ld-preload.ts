// Fires when the sample hijacks the dynamic linker: it writes /etc/ld.so.preload (every dynamically
// linked program then loads the library it names), or starts a program with LD_PRELOAD set (seen in
// the environment of execve calls, which the Linux analyzer's strace prints whole, or in a command
// line that sets it).
import type { SignatureRule } from '../signature'
import { commandLines, writtenPaths } from '../../../reporting/report-view'

const PRELOAD_ENV = /^LD_PRELOAD=(.+)$/
const PRELOAD_IN_COMMAND = /(^|[\s;&|'"(])LD_PRELOAD=\S/

export const ldPreload: SignatureRule = {
  name: 'ld_preload',
  description: 'Makes programs load a library of its own through the dynamic linker (LD_PRELOAD, /etc/ld.so.preload)',
  severity: 3,
  categories: ['persistence', 'stealth'],
  ttp: ['T1574.006'],
  run(report, mark) {
    for (const p of writtenPaths(report)) if (p === '/etc/ld.so.preload') mark.ioc('file', p)
    for (const { cmd } of commandLines(report)) if (PRELOAD_IN_COMMAND.test(cmd)) mark.ioc('cmdline', cmd)
  },
  calls: {
    apis: ['execve', 'execveat'],
    onCall(call, pid, index, mark) {
      const env = call.arguments.environment
      if (!Array.isArray(env)) return
      for (const e of env) {
        const m = typeof e === 'string' ? PRELOAD_ENV.exec(e) : null
        if (m !== null && m[1] !== '') { mark.call(pid, index, call); return }
      }
    }
  }
}
