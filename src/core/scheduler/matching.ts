// Which machines can serve a task (pure). A task names a machine (by name or label), else a
// platform and, with it, tags that the machine must all carry; a task with neither runs anywhere.
// Tags alone do nothing (the spec: they take effect only with a platform; the submission records
// that in the task's errors). When nothing configured can ever serve the task, the reason says why
// in words a user can act on.
export interface MatchableTask {
  machine: string | null
  platform: string | null
  tags: string[]
}

export interface MatchableMachine {
  id: number
  name: string
  label: string
  platform: string
  tags: string[]
}

export type Match<M> = { ok: true; machines: M[] } | { ok: false; reason: string }

/** Every message that explains why a task waits starts with this, so it can be dropped when it runs. */
export const UNSCHEDULABLE = 'unschedulable: '

export function matchMachines<M extends MatchableMachine>(task: MatchableTask, machines: M[]): Match<M> {
  if (machines.length === 0) {
    return { ok: false, reason: `${UNSCHEDULABLE}no analysis machines are configured (add them to machines.json)` }
  }
  if (task.machine !== null) {
    const byName = machines.filter((m) => m.name === task.machine)
    const found = byName.length > 0 ? byName : machines.filter((m) => m.label === task.machine)
    if (found.length > 0) return { ok: true, machines: found }
    return { ok: false, reason: `${UNSCHEDULABLE}no configured machine is named or labelled '${task.machine}'` }
  }
  if (task.platform !== null) {
    const platform = task.platform.toLowerCase()
    const onPlatform = machines.filter((m) => m.platform.toLowerCase() === platform)
    if (onPlatform.length === 0) {
      const known = [...new Set(machines.map((m) => m.platform))].sort().join(', ')
      return { ok: false, reason: `${UNSCHEDULABLE}no machine has platform '${task.platform}' (configured: ${known})` }
    }
    const tagged = onPlatform.filter((m) => task.tags.every((t) => m.tags.includes(t)))
    if (tagged.length === 0) {
      return { ok: false, reason: `${UNSCHEDULABLE}no ${task.platform} machine has all the tags ${task.tags.join(', ')}` }
    }
    return { ok: true, machines: tagged }
  }
  return { ok: true, machines }
}
