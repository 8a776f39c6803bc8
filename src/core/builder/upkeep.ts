// Keeping the fleet the builder made: each machine's and image's disk use, deleting a machine (its
// domain with its snapshots, its folder, its machines.json entry), and what a crash or an
// interrupted build left behind: folders, domains, snapshots and images nothing in machines.json
// uses, found and removed on request. `aviary machines list|delete|leftovers`, the Machines page
// and the doctor read these; docs/machines.md, "Keeping the fleet".
import { existsSync, lstatSync, readdirSync, rmSync } from 'node:fs'
import path from 'node:path'
import type { StorageLayout } from '../storage/layout'
import type { FleetConfig, MachineConfig } from '../machinery/machines-config'
import { runTool } from '../machinery/exec-tool'
import type { Finding } from '../machinery/driver'
import { Libvirt } from './libvirt-host'
import { readFleet, removeMachines } from './machines-file'

/** Bytes a folder's files take on the disk (allocated blocks: a qcow2 overlay is sparse). */
export function allocatedBytes(p: string): number {
  let st
  try {
    st = lstatSync(p)
  } catch {
    return 0
  }
  if (st.isDirectory()) return readdirSync(p).reduce((n, f) => n + allocatedBytes(path.join(p, f)), 0)
  return st.isFile() ? st.blocks * 512 : 0
}

const entries = (dir: string): string[] => {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

/** The image an overlay is made of (its backing file's folder under images/), or null. */
async function backingImage(layout: StorageLayout, disk: string): Promise<string | null> {
  if (!existsSync(disk)) return null
  try {
    const { stdout } = await runTool('qemu-img', ['info', '-U', '--output=json', disk], `reading ${path.basename(disk)}`, 30_000)
    const info = JSON.parse(stdout) as { 'backing-filename'?: string; 'full-backing-filename'?: string }
    const backing = info['full-backing-filename'] ?? info['backing-filename']
    if (!backing) return null
    const rel = path.relative(layout.imagesDir, path.resolve(path.dirname(disk), backing))
    return rel.startsWith('..') || path.isAbsolute(rel) ? null : rel.split(path.sep)[0]!
  } catch {
    return null
  }
}

export interface MachineDiskUse {
  name: string
  /** Made by Aviary's builder: it has a folder under machines/ (its disk, console log). */
  built: boolean
  /** What its folder takes (its overlay: what the machine wrote, its snapshots); 0 when it has none. */
  bytes: number
  /** The image its disk is an overlay of (images/<key>), or null. */
  image: string | null
}

export interface ImageDiskUse {
  key: string
  bytes: number
  /** Machines of machines.json whose disks are overlays of it. */
  usedBy: string[]
}

export interface FleetDiskUse {
  machines: MachineDiskUse[]
  images: ImageDiskUse[]
  /** Every machine and image, and the package cache (cache/apt). */
  totalBytes: number
  cacheBytes: number
}

export async function fleetDiskUse(layout: StorageLayout, fleet: FleetConfig = readFleet(layout.machinesConfig)): Promise<FleetDiskUse> {
  const machines: MachineDiskUse[] = []
  for (const m of fleet.machines) {
    const dir = path.join(layout.machinesDir, m.name)
    const built = existsSync(dir)
    machines.push({ name: m.name, built, bytes: built ? allocatedBytes(dir) : 0, image: built ? await backingImage(layout, path.join(dir, 'disk.qcow2')) : null })
  }
  const images = entries(layout.imagesDir).filter((k) => !k.startsWith('.')).map((key) => ({
    key, bytes: allocatedBytes(path.join(layout.imagesDir, key)), usedBy: machines.filter((m) => m.image === key).map((m) => m.name)
  }))
  const cacheBytes = allocatedBytes(path.join(layout.root, 'cache', 'apt'))
  const totalBytes = machines.reduce((n, m) => n + m.bytes, 0) + images.reduce((n, i) => n + i.bytes, 0) + cacheBytes
  return { machines, images, totalBytes, cacheBytes }
}

export class UpkeepError extends Error {
  constructor(readonly field: string, message: string, readonly status: 400 | 404 | 409 = 400) {
    super(message)
  }
}

export interface DeleteResult {
  name: string
  /** What was removed, in words. */
  removed: string[]
}

/**
 * Deletes a machine: its machines.json entry and, for a machine the builder made (it has a folder
 * under machines/), its domain with its snapshots and its folder. The VM of a machine written by
 * hand is left as it is (only its entry goes). The caller makes sure no task uses it.
 */
export async function deleteMachine(layout: StorageLayout, name: string, o: { uri?: string } = {}): Promise<DeleteResult> {
  const fleet = readFleet(layout.machinesConfig)
  const m = fleet.machines.find((x) => x.name === name)
  const dir = path.join(layout.machinesDir, name)
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) throw new UpkeepError('name', `${JSON.stringify(name)} is not a machine name`)
  if (!m && !existsSync(dir)) throw new UpkeepError('name', `there is no machine '${name}' in machines.json`, 404)
  const removed: string[] = []
  if (existsSync(dir)) {
    const driver = m?.driver ?? 'kvm'
    if (driver === 'kvm') {
      const lv = new Libvirt(o.uri ?? fleet.settings.kvm.uri)
      const label = m?.label ?? name
      if ((await lv.domState(label)) !== null) {
        await lv.remove(label)
        removed.push(`the domain ${label} and its snapshots`)
      }
    }
    rmSync(dir, { recursive: true, force: true })
    removed.push(`the folder ${layout.relative(dir)}`)
  }
  if (m) {
    removeMachines(layout.machinesConfig, [name])
    removed.push('its entry in machines.json')
  }
  return { name, removed }
}

export interface Leftover {
  kind: 'folder' | 'domain' | 'snapshot' | 'image' | 'build'
  /** The folder, the domain, `domain/snapshot`, the image's key. */
  name: string
  why: string
  bytes: number
}

async function domainDisks(lv: Libvirt, name: string): Promise<string[]> {
  // The persistent definition (--inactive) is read without the domain's job lock: a domain another
  // program is starting or snapshotting is not waited for (a live query would wait for its job).
  const out = await lv.run(['domblklist', name, '--inactive', '--details'], `listing the disks of ${name}`, 15_000).catch(() => '')
  return out.split('\n').map((l) => l.trim().split(/\s+/)).filter((c) => c[1] === 'disk' && c[3] && c[3] !== '-').map((c) => c.slice(3).join(' '))
}

/**
 * What nothing in machines.json uses: machine folders, domains with a disk under machines/, snapshots of the fleet's built machines other than the
 * one they revert to (a prepare left half way), unfinished image builds, and images no machine's
 * disk is an overlay of (the newest of those is the cache the next build starts from: removing it
 * costs a rebuild from the package cache).
 */
export async function findLeftovers(layout: StorageLayout, o: { uri?: string } = {}): Promise<Leftover[]> {
  const fleet = readFleet(layout.machinesConfig)
  const names = new Set(fleet.machines.map((m) => m.name))
  const labels = new Set(fleet.machines.map((m) => m.label))
  const found: Leftover[] = []
  for (const f of entries(layout.machinesDir).filter((n) => !n.startsWith('.'))) {
    if (!names.has(f)) found.push({ kind: 'folder', name: f, why: `machines/${f} belongs to no machine of machines.json`, bytes: allocatedBytes(path.join(layout.machinesDir, f)) })
  }
  for (const f of entries(layout.imagesDir).filter((n) => n.startsWith('.build-'))) {
    found.push({ kind: 'build', name: f, why: 'an image build that did not finish', bytes: allocatedBytes(path.join(layout.imagesDir, f)) })
  }
  const lv = new Libvirt(o.uri ?? fleet.settings.kvm.uri)
  const domains = await lv.run(['list', '--all', '--name'], 'listing the domains', 15_000)
    .then((out) => out.split('\n').map((x) => x.trim()).filter(Boolean), () => null)
  if (domains !== null) {
    for (const d of domains.filter((x) => !labels.has(x))) {
      // Only domains whose disk is in this data folder: another install's (or user's) are not ours.
      if ((await domainDisks(lv, d)).some((p) => path.isAbsolute(p) && !path.relative(layout.machinesDir, p).startsWith('..'))) {
        found.push({ kind: 'domain', name: d, why: 'a domain whose disk is in machines/, which no machine of machines.json names', bytes: 0 })
      }
    }
    for (const m of fleet.machines.filter((x) => x.driver === 'kvm' && existsSync(path.join(layout.machinesDir, x.name)) && domains.includes(x.label))) {
      for (const s of await snapshots(lv, m)) {
        if (s !== (m.snapshot ?? 'clean')) found.push({ kind: 'snapshot', name: `${m.label}/${s}`, why: `${m.name} reverts to '${m.snapshot ?? 'clean'}', not to this one`, bytes: 0 })
      }
    }
  }
  const use = await fleetDiskUse(layout, fleet)
  for (const i of use.images.filter((x) => x.usedBy.length === 0)) {
    found.push({ kind: 'image', name: i.key, why: 'no machine of machines.json is made of it (the next build would reuse it if its inputs are the same)', bytes: i.bytes })
  }
  return found
}

async function snapshots(lv: Libvirt, m: MachineConfig): Promise<string[]> {
  const out = await lv.run(['snapshot-list', m.label, '--name'], `listing the snapshots of ${m.label}`, 15_000).catch(() => '')
  return out.split('\n').map((s) => s.trim()).filter(Boolean)
}

/** Removes the leftovers given (as findLeftovers found them); answers what it could not, with why. */
export async function removeLeftovers(layout: StorageLayout, items: Leftover[], o: { uri?: string } = {}): Promise<{ removed: Leftover[]; failed: { item: Leftover; error: string }[] }> {
  const lv = new Libvirt(o.uri ?? readFleet(layout.machinesConfig).settings.kvm.uri)
  const removed: Leftover[] = []
  const failed: { item: Leftover; error: string }[] = []
  const inside = (base: string, n: string): string => {
    const p = path.join(base, n)
    if (path.dirname(p) !== base) throw new Error(`${n} is not a name`)
    return p
  }
  for (const item of items) {
    try {
      if (item.kind === 'folder') rmSync(inside(layout.machinesDir, item.name), { recursive: true, force: true })
      else if (item.kind === 'build' || item.kind === 'image') rmSync(inside(layout.imagesDir, item.name), { recursive: true, force: true })
      else if (item.kind === 'domain') await lv.remove(item.name)
      else {
        const [dom, snap] = item.name.split('/') as [string, string]
        await lv.run(['snapshot-delete', dom, snap], `deleting the snapshot ${snap} of ${dom}`, 600_000)
      }
      removed.push(item)
    } catch (err) {
      failed.push({ item, error: (err as Error).message })
    }
  }
  return { removed, failed }
}

/** What the API's routes may do to the fleet's files and domains (api/context.ts). */
export interface MachineUpkeep {
  diskUse(): Promise<FleetDiskUse>
  deleteMachine(name: string): Promise<DeleteResult>
  leftovers(): Promise<Leftover[]>
  /** Removes the leftovers found now (only those named, when `names` is given). */
  removeLeftovers(names?: string[]): Promise<{ removed: Leftover[]; failed: { item: Leftover; error: string }[] }>
}

export function upkeepFor(layout: StorageLayout): MachineUpkeep {
  return {
    diskUse: () => fleetDiskUse(layout),
    deleteMachine: (name) => deleteMachine(layout, name),
    leftovers: () => findLeftovers(layout),
    async removeLeftovers(names) {
      const found = await findLeftovers(layout)
      return removeLeftovers(layout, names === undefined ? found : found.filter((l) => names.includes(l.name)))
    }
  }
}

/** What a crash or an interrupted build left in the data folder of `machinesFile`, offered for removal. */
export async function leftoversFinding(layout: StorageLayout): Promise<Finding> {
  const found = await findLeftovers(layout).catch(() => null)
  if (found === null) return { check: 'leftovers', ok: true, detail: 'not looked for (machines.json could not be read as the builder reads it)' }
  if (found.length === 0) return { check: 'leftovers', ok: true, detail: 'none: every machine folder, domain, snapshot and image is in use' }
  return {
    check: 'leftovers', ok: false, detail: found.map((l) => `${l.kind} ${l.name}`).join(', '),
    fix: 'remove them with `aviary machines leftovers --remove` (or from the Machines page); an image no machine uses is only the next build\'s cache'
  }
}
