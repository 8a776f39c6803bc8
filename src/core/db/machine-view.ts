// A machines row as the API shows it (/machines/list, /machines/view, events), as task_json does for tasks.
import type { Machine } from '../../shared/api/schemas'
import type { MachineRow } from './machines.repository'

export function toApiMachine(m: MachineRow): Machine {
  return {
    driver: m.driver,
    id: m.id,
    interface: m.interface,
    ip: m.ip,
    label: m.label,
    locked: m.locked === 1,
    locked_changed_on: m.locked_changed_on,
    name: m.name,
    options: JSON.parse(m.options) as string[],
    platform: m.platform,
    rcparams: {},
    resultserver_ip: m.resultserver_ip,
    resultserver_port: String(m.resultserver_port),
    snapshot: m.snapshot,
    status: m.status,
    status_changed_on: m.status_changed_on,
    tags: JSON.parse(m.tags) as string[]
  }
}
