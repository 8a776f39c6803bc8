// Node tasks still to delete on their node, kept as files so every worker sharing the reports
// directory sees them and none is forgotten across restarts: `<reports>/.node-cleanup/<node>-<task>`.
// Two cases put an entry here:
// - a node stopped answering and its tasks were requeued elsewhere: the copies it still holds are
//   deleted when it answers again, not fetched (the requeued copy's reports are the ones kept, so a
//   task is never fetched twice, and none is lost since the copy runs elsewhere);
// - reports were fetched but /tasks/delete failed: the task is finished, the node cleaned later.
// One file per entry (not one list per node): two workers add and remove without a lost update.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'

export class CleanupLedger {
  private readonly dir: string

  constructor(reportsDir: string) {
    this.dir = path.join(reportsDir, '.node-cleanup')
  }

  async add(nodeId: number, nodeTaskId: number, distTaskId: number): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    await writeFile(path.join(this.dir, `${nodeId}-${nodeTaskId}`), `${distTaskId}\n`)
  }

  /** Node task ids waiting for deletion on this node. */
  async list(nodeId: number): Promise<number[]> {
    let names: string[]
    try {
      names = await readdir(this.dir)
    } catch {
      return []
    }
    const prefix = `${nodeId}-`
    return names.filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length))).map((n) => Number(n.slice(prefix.length)))
  }

  async remove(nodeId: number, nodeTaskId: number): Promise<void> {
    await rm(path.join(this.dir, `${nodeId}-${nodeTaskId}`), { force: true })
  }
}
