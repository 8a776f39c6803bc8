// util-linux's setpriv, used to tie a helper's life to its parent's: `setpriv --pdeathsig SIG --
// program ...` has the kernel send SIG to the program when the process that started it dies (by
// kill -9 too), which Node's spawn cannot ask for itself. mitmdump (the service's) and INetSim (the
// rooter's) are started through it.
import { existsSync } from 'node:fs'
import path from 'node:path'

/** setpriv from PATH; null where there is none. */
export function setprivPath(): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(path.delimiter)) {
    const f = path.join(dir || '.', 'setpriv')
    if (dir !== '' && existsSync(f)) return f
  }
  return null
}

/** The program and arguments that run `program args` so that it gets `signal` when its parent dies (unchanged without setpriv). */
export function diesWithParent(program: string, args: string[], signal: 'SIGTERM' | 'SIGKILL'): [string, string[]] {
  const setpriv = setprivPath()
  return setpriv !== null ? [setpriv, ['--pdeathsig', signal, '--', program, ...args]] : [program, args]
}
