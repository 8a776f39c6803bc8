// Fires when a process of the run starts from a temporary or world-writable folder (%TEMP%,
// AppData, /tmp, /dev/shm, /var/tmp): second stages are unpacked there and run. Its technique is
// the one the sample starts it with, the system's process API (T1106, Native API): the user had no
// part in it, so it is not User Execution. process_path is the kernel's image without the
// " (deleted)" a self-deleting sample's carries (behavior/index.ts), so the sample is known by name.
import type { SignatureRule } from '../signature'
import { baseName, num, obj, objs, str } from '../../../reporting/report-view'

const TEMP_DIRS = [
  /\\appdata\\local\\temp\\/i, /\\windows\\temp\\/i, /\\appdata\\roaming\\/i, /\\programdata\\/i, /\\users\\public\\/i,
  /^\/tmp\//, /^\/var\/tmp\//, /^\/dev\/shm\//
]

export const runsFromTemp: SignatureRule = {
  name: 'runs_from_temp',
  description: 'Runs a program from a temporary or user-writable folder',
  severity: 1,
  categories: ['execution'],
  ttp: ['T1106'],
  run(report, mark) {
    // The sample itself is placed in a temp folder by the analyzer: it does not count.
    const sample = baseName(str(obj(report, 'target', 'file'), 'name'))
    for (const p of objs(report, 'behavior', 'processes')) {
      const path = str(p, 'process_path')
      if (sample !== '' && baseName(path) === sample) continue
      if (TEMP_DIRS.some((re) => re.test(path))) mark.generic({ pid: num(p, 'pid'), process_path: path })
    }
  }
}
