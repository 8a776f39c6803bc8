// behavior.processtree: the processes nested under their parents, as Cuckoo 2's ProcessTree
// handler builds it: processes in first_seen order; one becomes its parent's child only when the
// parent was seen before it, otherwise it is a root (so a pid reused later cannot adopt older
// processes, and cycles cannot form).
import type { ProcessSeen, ProcessTreeNode } from '../types.js'

export function buildProcessTree(processes: readonly ProcessSeen[]): ProcessTreeNode[] {
  const byFirstSeen = [...processes].sort((a, b) => a.first_seen - b.first_seen)
  const nodes = new Map<number, ProcessTreeNode>()
  const roots: ProcessTreeNode[] = []
  for (const p of byFirstSeen) {
    if (nodes.has(p.pid)) continue
    const node: ProcessTreeNode = {
      pid: p.pid,
      ppid: p.ppid,
      process_name: p.process_name,
      command_line: p.command_line,
      first_seen: p.first_seen,
      track: p.track,
      children: []
    }
    const parent = nodes.get(p.ppid)
    if (parent !== undefined && p.ppid !== p.pid) parent.children.push(node)
    else roots.push(node)
    nodes.set(p.pid, node)
  }
  return roots
}
