// The libvirt operations of the machine builder, through `virsh` (defining domains and networks,
// snapshots: what the @unraid/libvirt binding does not cover), one process per call with an
// argument array. The machinery drivers revert and run machines; the builder makes them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { runTool, ToolError } from '../machinery/exec-tool'

export class Libvirt {
  constructor(readonly uri: string, private readonly virshPath = 'virsh') {}

  run(args: string[], what: string, timeoutMs = 120_000, signal?: AbortSignal): Promise<string> {
    return runTool(this.virshPath, ['-q', '-c', this.uri, ...args], what, timeoutMs, signal).then((r) => r.stdout)
  }

  /** `virsh define` / `net-define` of an XML text (through a private temporary file). */
  async define(kind: 'define' | 'net-define', xml: string, what: string): Promise<void> {
    const dir = mkdtempSync(path.join(tmpdir(), 'aviary-xml-'))
    try {
      const file = path.join(dir, 'def.xml')
      writeFileSync(file, xml, { mode: 0o600 })
      await this.run([kind, file], what)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }

  async domainNames(): Promise<string[]> {
    return (await this.run(['list', '--all', '--name'], 'listing the domains')).split('\n').map((s) => s.trim()).filter(Boolean)
  }

  /** "running", "shut off", … or null when there is no such domain. */
  async domState(name: string): Promise<string | null> {
    try {
      return (await this.run(['domstate', name], `reading the state of ${name}`)).trim()
    } catch (err) {
      if (err instanceof ToolError && /failed to get domain|not found/i.test(err.stderr)) return null
      throw err
    }
  }

  async destroyIfRunning(name: string): Promise<void> {
    const s = await this.domState(name)
    if (s !== null && s !== 'shut off') await this.run(['destroy', name], `powering off ${name}`).catch(async (err: unknown) => {
      if ((await this.domState(name)) !== 'shut off') throw err
    })
  }

  /** Powers the domain off and removes it with its snapshots' metadata (its disks are files the caller removes). */
  async remove(name: string): Promise<void> {
    if ((await this.domState(name)) === null) return
    await this.destroyIfRunning(name)
    await this.run(['undefine', name, '--snapshots-metadata'], `removing the domain ${name}`)
  }

  async netXml(name: string): Promise<string | null> {
    try {
      return await this.run(['net-dumpxml', name], `reading the network ${name}`)
    } catch (err) {
      if (err instanceof ToolError && /not found|no network/i.test(err.stderr)) return null
      throw err
    }
  }

  async netActive(name: string): Promise<boolean> {
    return /^Active:\s+yes/m.test(await this.run(['net-info', name], `reading the network ${name}`))
  }
}

export interface NetworkInfo {
  name: string
  bridge: string
  hostIp: string
  prefix: number
  forward: string | null
}

const toInt = (ip: string): number => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0) >>> 0
export const toIp = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.')
export { toInt as ipToInt }

function prefixOf(netmask: string): number {
  const n = toInt(netmask)
  let p = 0
  while (p < 32 && (n & (0x80000000 >>> p)) !== 0) p++
  return p
}

/** What the builder reads of a libvirt network's XML: its bridge, the host's address and prefix, its forward mode. */
export function parseNetworkXml(xml: string): NetworkInfo | null {
  const name = /<name>([^<]+)<\/name>/.exec(xml)?.[1]
  const bridge = /<bridge\s[^>]*name=['"]([^'"]+)['"]/.exec(xml)?.[1]
  const ipTag = /<ip\s[^>]*>/.exec(xml)?.[0] ?? /<ip\s[^>]*\/>/.exec(xml)?.[0]
  const address = ipTag ? /address=['"]([\d.]+)['"]/.exec(ipTag)?.[1] : undefined
  const prefix = ipTag ? /prefix=['"](\d+)['"]/.exec(ipTag)?.[1] : undefined
  const netmask = ipTag ? /netmask=['"]([\d.]+)['"]/.exec(ipTag)?.[1] : undefined
  if (!name || !bridge || !address || (!prefix && !netmask)) return null
  return { name, bridge, hostIp: address, prefix: prefix ? Number(prefix) : prefixOf(netmask!), forward: /<forward\s[^>]*mode=['"]([a-z]+)['"]/.exec(xml)?.[1] ?? null }
}
