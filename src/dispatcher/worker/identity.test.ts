// Worker ids and who counts as a dead worker of this machine, with real processes: one that runs
// and one that has exited.
import { spawn } from 'node:child_process'
import { hostname } from 'node:os'
import { describe, expect, it } from 'vitest'
import { isDeadLocalWorker, machineKey, newWorkerId } from './identity'

const exitedPid = async (): Promise<number> => {
  const child = spawn(process.execPath, ['-e', ''])
  await new Promise((resolve) => child.once('exit', resolve))
  return child.pid!
}

describe('worker identity', () => {
  it('names the host, the pid and the process table', () => {
    const id = newWorkerId()
    expect(id).toMatch(new RegExp(`^[^:]+:${process.pid}:[0-9a-f]{6}:[^:]+$`))
    expect(id.startsWith(`${hostname().replace(/:/g, '_')}:`)).toBe(true)
    expect(id.endsWith(`:${machineKey()}`)).toBe(true)
    expect(newWorkerId()).not.toBe(id)
  })

  it('a worker of this machine whose process is gone is dead; a running one, ours, another machine\'s or a foreign id is not', async () => {
    const gone = await exitedPid()
    const running = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'])
    try {
      expect(isDeadLocalWorker(`h:${gone}:abcdef:${machineKey()}`)).toBe(true)
      expect(isDeadLocalWorker(`h:${running.pid}:abcdef:${machineKey()}`)).toBe(false)
      expect(isDeadLocalWorker(newWorkerId())).toBe(false)
      expect(isDeadLocalWorker(`h:${gone}:abcdef:another-machine`)).toBe(false)
      for (const foreign of ['w1', `h:${gone}:abcdef`, `h:x:abcdef:${machineKey()}`, `h:0:abcdef:${machineKey()}`]) expect(isDeadLocalWorker(foreign), foreign).toBe(false)
    } finally {
      running.kill()
    }
  })
})
