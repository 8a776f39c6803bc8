// A task no machine can run: the scheduler puts its reason in the task's errors, prefixed
// "unschedulable: " (src/core/scheduler/matching.ts), while the task stays pending.

export const UNSCHEDULABLE = 'unschedulable: '

/** The scheduler's reason why no configured machine can ever run this task, or null. */
export function unschedulable(task: { status?: unknown; errors?: unknown }): string | null {
  if (task.status !== 'pending' || !Array.isArray(task.errors)) return null
  const e = task.errors.find((x): x is string => typeof x === 'string' && x.startsWith(UNSCHEDULABLE))
  return e === undefined ? null : e.slice(UNSCHEDULABLE.length)
}
