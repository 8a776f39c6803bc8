// A run's live console: registered with the hub while the machine runs, recorded into the
// analysis folder's console/, and written on the task's timeline (sessions, and what the analyst
// typed and clicked as counts: at most one line per session every TIMELINE_INPUT_MS, so an hour
// of typing is a few hundred lines, not thousands).
import { readdirSync } from 'node:fs'
import { isRecordingName } from '../../shared/console-recording'
import type { VncEndpoint } from '../machinery/driver'
import { ARTIFACTS } from '../storage/layout'
import type { RunnerDeps } from './run-deps'
import type { TaskLog } from './task-log'

const TIMELINE_INPUT_MS = 10_000

/** The session number after the recordings already in the folder (a run tried again keeps the first one's). */
export function nextSessionNumber(dir: string): number {
  let n = 0
  try {
    for (const name of readdirSync(dir)) if (isRecordingName(name)) n = Math.max(n, Number.parseInt(name, 10))
  } catch {
    /* no folder yet */
  }
  return n + 1
}

export function openRunConsole(d: RunnerDeps, o: { task: number; machine: string; endpoint: () => Promise<VncEndpoint>; log: TaskLog }): { close(reason: string): void } {
  const dir = d.layout.artifact(o.task, ARTIFACTS.console)
  const pending = new Map<number, { keys: number; clicks: number; timer: NodeJS.Timeout }>()
  const add = (stage: 'console_opened' | 'console_input' | 'console_closed', msg: string): void => {
    d.timeline.add(o.task, stage, msg)
    o.log.info(`console ${msg}`)
  }
  const flush = (session: number): void => {
    const p = pending.get(session)
    if (!p) return
    clearTimeout(p.timer)
    pending.delete(session)
    add('console_input', `session ${session}: ${p.keys} keys, ${p.clicks} clicks`)
  }
  const handle = d.consoles.register({
    task: o.task,
    machine: o.machine,
    endpoint: o.endpoint,
    recordDir: dir,
    recordCap: d.consoleRecordCap,
    firstSession: nextSessionNumber(dir),
    events: {
      opened: (s) => add('console_opened', `session ${s.id} opened (${s.role === 'view' ? 'view only' : 'interactive'})`),
      input: (s, keys, clicks) => {
        const p = pending.get(s.id)
        if (p) {
          p.keys += keys
          p.clicks += clicks
        } else {
          pending.set(s.id, { keys, clicks, timer: setTimeout(() => flush(s.id), TIMELINE_INPUT_MS) })
        }
      },
      closed: (s, reason) => {
        flush(s.id)
        add('console_closed', `session ${s.id} closed: ${reason} (${s.keys} keys, ${s.clicks} clicks in all)`)
      },
      capped: (cap) => {
        d.timeline.add(o.task, 'error', `the console recordings reached their cap of ${cap} bytes: the rest of the sessions was not recorded`)
        o.log.warn(`console recordings reached their cap of ${cap} bytes`)
      }
    }
  })
  return {
    close: (reason) => {
      handle.close(reason)
      for (const s of [...pending.keys()]) flush(s)
    }
  }
}
