// After a crash (or kill -9) the database still says some tasks are running and some machines are
// locked, though nothing runs. Decision (docs/engine.md): a task left running is queued again
// once — a crash of the host is rarely the sample's doing, and the analyst gets a result without
// asking — and fails with the reason if it was already the second attempt, so a sample that kills
// the host (or a bug it triggers) cannot loop forever. Locks are released, open guest rows
// closed, machines that were in use are powered off in the background so the next run starts
// from a clean state, and processing claims (tasks.processing) of the dead process are cleared so
// the processor takes those tasks up again. Status moves go through QueueRepository.move, that is
// TaskMoves (db/task-moves.ts) and its transition table.
import type { QueueRepository } from '../db/queue.repository'
import type { MachineRow, MachinesRepository } from '../db/machines.repository'
import type { GuestsRepository } from '../db/guests.repository'
import type { TimelineRepository } from '../db/timeline.repository'

export interface RecoveryDeps {
  queue: QueueRepository
  machines: MachinesRepository
  guests: GuestsRepository
  timeline: TimelineRepository
}

export interface Recovered {
  requeued: number[]
  failed: number[]
  /** Machines that were locked when the previous process died: stop them before use. */
  wereLocked: MachineRow[]
  /** Tasks whose processing the previous process had claimed (they are processed again). */
  processingCleared: number
}

export const MAX_ATTEMPTS = 2

export function recoverAfterRestart(d: RecoveryDeps): Recovered {
  const out: Recovered = {
    requeued: [], failed: [], wereLocked: d.machines.unlockAll(), processingCleared: d.queue.clearStaleProcessing()
  }
  d.guests.stopAllOpen()
  for (const { id, attempts } of d.queue.running()) {
    if (attempts < MAX_ATTEMPTS) {
      if (d.queue.move(id, 'running', 'pending', { requeue: true })) {
        d.timeline.add(id, 'recovered', `Aviary stopped while this task ran (attempt ${attempts}); it is queued again`)
        out.requeued.push(id)
      }
    } else {
      const reason = `Aviary stopped while this task ran, ${attempts} times; it is not tried again`
      d.queue.addError(id, reason)
      if (d.queue.move(id, 'running', 'failed_analysis', { completed: true })) {
        d.timeline.add(id, 'failed', reason)
        out.failed.push(id)
      }
    }
  }
  return out
}
