// The analysis tools this host has, for the status object's `tools` (older clients read it).
import { accessSync, constants } from 'node:fs'
import path from 'node:path'

const TOOLS = ['tcpdump', 'virsh', 'qemu-system-x86_64', 'VBoxManage', 'tshark', 'file', 'bzip2']

export function findTools(env: NodeJS.ProcessEnv = process.env): string[] {
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean)
  return TOOLS.filter((tool) =>
    dirs.some((dir) => {
      try {
        accessSync(path.join(dir, tool), constants.X_OK)
        return true
      } catch {
        return false
      }
    })
  )
}
