// Who holds a lease (and who wrote a submission note): `<hostname>:<pid>:<random>:<machine>`.
// <machine> names the process table the pid belongs to: on Linux this boot of this machine and
// this PID namespace (/proc/sys/kernel/random/boot_id, /proc/self/ns/pid), elsewhere the host
// name. A holder with our <machine> whose pid no longer runs is a worker of this machine that
// died (kill -9, power cut of a container, OOM): what it held can be taken back at once, instead
// of waiting for its lease to run out. Anything else (another machine, another container, an id
// of an older version, a pid reused by another process) is judged by the lease's time only.
import { randomBytes } from 'node:crypto'
import { readFileSync, readlinkSync } from 'node:fs'
import { hostname } from 'node:os'

let machine: string | undefined

/** This process table's name (see above); ':' never occurs in it. */
export function machineKey(): string {
  if (machine !== undefined) return machine
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    const ns = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? ''
    machine = `${boot}.${ns}`
  } catch {
    machine = hostname()
  }
  machine = machine.replace(/:/g, '_')
  return machine
}

export function newWorkerId(): string {
  return `${hostname().replace(/:/g, '_')}:${process.pid}:${randomBytes(3).toString('hex')}:${machineKey()}`
}

/** True only when `holder` is a worker id of this machine whose process is gone. */
export function isDeadLocalWorker(holder: string): boolean {
  const parts = holder.split(':')
  if (parts.length !== 4 || parts[3] !== machineKey()) return false
  const pid = Number(parts[1])
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return false
  } catch (err) {
    // EPERM: the pid runs, as another user. Only "no such process" is death.
    return (err as NodeJS.ErrnoException).code === 'ESRCH'
  }
}
