// The baseline of memory-dump triage (processing/memory-triage.ts): the indicators (URLs, domain
// names, IPv4 addresses) of a machine's clean snapshot, taken once per machine and snapshot: the
// first memory=1 task on it dumps the machine right after the revert, before the agent is given
// anything, scans the dump and keeps the indicators in baselines/<machine>/<snapshot>.json (the
// dump itself, as large as the machine's memory, is deleted once read). Every memory=1 run copies
// them into its folder (memory.baseline.json) so that processing, and a re-report later, read the
// baseline the run was compared with. A snapshot made again under the same name needs its file
// deleted to be taken again (docs/engine.md).
import { copyFile, mkdir, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import type { DriverMachine, MachineDriver } from '../machinery/driver'
import { scanIndicators, writeIndicators } from '../processing/memory-triage'

export const CURRENT_SNAPSHOT = 'current'

/** Takes the baseline if there is none yet; copies it to `into`. Returns whether it was taken now. */
export async function ensureMemoryBaseline(o: {
  driver: MachineDriver
  machine: DriverMachine
  /** baselines/<machine>/<snapshot>.json (layout.memoryBaseline). */
  file: string
  into: string
  log: (m: string) => void
}): Promise<boolean> {
  let taken = false
  if (!(await stat(o.file).then((s) => s.isFile(), () => false))) {
    await mkdir(path.dirname(o.file), { recursive: true })
    const dump = `${o.file}.dmp.tmp`
    const t0 = Date.now()
    try {
      await o.driver.dumpMemory(o.machine, dump)
      const found = await scanIndicators(dump)
      await writeIndicators(`${o.file}.tmp`, found, `${o.machine.name}/${o.machine.snapshot ?? CURRENT_SNAPSHOT}`)
      await copyFile(`${o.file}.tmp`, o.file)
      await rm(`${o.file}.tmp`, { force: true })
      o.log(`memory baseline of ${o.machine.name} (${o.machine.snapshot ?? CURRENT_SNAPSHOT}) taken in ${Date.now() - t0} ms: ` +
        `${found.urls.length} URLs, ${found.domains.length} domains, ${found.ips.length} IPs in ${found.bytes} bytes`)
      taken = true
    } finally {
      await rm(dump, { force: true })
    }
  }
  await copyFile(o.file, o.into)
  return taken
}
