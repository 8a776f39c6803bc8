// `aviary machines list|delete|rebuild|leftovers|prepare`: keeping the fleet from the command line.
// When a service runs on the data folder (its lock file names a live process), the command goes
// through that service's API (--remote), so that a machine a task is using is refused and prepare
// mode holds the lock the scheduler respects; otherwise it works on the data folder itself
// (prepare mode needs the service: without it, nothing would keep tasks off the machine later).
import { readFileSync } from 'node:fs'
import { Option, type Command } from 'commander'
import { defaultDataDir, DEFAULT_HOST, DEFAULT_PORT } from '../config'
import { createLayout, type StorageLayout } from '../storage/layout'
import type { BuildEvent } from './build-progress'

interface Common {
  data?: string
  remote: string
  apiToken?: string
  json?: boolean
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(b < 10 * 2 ** 20 ? 1 : 0)} MiB`

/** The pid of the service holding the data folder, or null. */
export function runningService(layout: StorageLayout): number | null {
  try {
    const pid = Number(readFileSync(layout.lockFile, 'utf8').trim())
    if (!pid || pid === process.pid) return null
    process.kill(pid, 0)
    return pid
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? Number(readFileSync(layout.lockFile, 'utf8').trim()) : null
  }
}

class ApiCallError extends Error {}

async function api<T>(o: Common, method: string, p: string, body?: unknown): Promise<T> {
  let res: Response
  try {
    res = await fetch(o.remote.replace(/\/+$/, '') + p, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(o.apiToken ? { authorization: `Bearer ${o.apiToken}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
  } catch (err) {
    throw new ApiCallError(`the service at ${o.remote} does not answer (${(err as Error).message}); give its address with --remote`)
  }
  const answer = (await res.json().catch(() => ({}))) as T & { message?: string }
  if (!res.ok) throw new ApiCallError(answer.message ?? `${method} ${p}: HTTP ${res.status}`)
  return answer
}

function printEvent(e: BuildEvent): void {
  if (e.kind === 'output') return
  const t = `${String(Math.floor(e.elapsedMs / 60_000)).padStart(2)}:${String(Math.floor(e.elapsedMs / 1000) % 60).padStart(2, '0')}`
  process.stderr.write(e.kind === 'step' ? `[${t}] ${e.step}${e.machine ? ` ${e.machine}` : ''}: ${e.message}\n` : `[${t}]   ${e.message}\n`)
}

/** Follows a build of the service to its end, printing its steps; 0 when it succeeded. */
async function followBuild(o: Common, id: number): Promise<number> {
  let since = 0
  for (;;) {
    const { build } = await api<{ build: { state: string; events: BuildEvent[]; last_seq: number; error: { message: string } | null } }>(o, 'GET', `/aviary/machines/builds/${id}?since=${since}`)
    for (const e of build.events) printEvent(e)
    since = build.last_seq
    if (build.state !== 'running') {
      if (build.error) process.stderr.write(`aviary: ${build.error.message}\n`)
      return build.state === 'succeeded' ? 0 : 1
    }
    await new Promise((r) => setTimeout(r, 1000))
  }
}

async function list(o: Common): Promise<number> {
  const layout = createLayout(o.data ?? defaultDataDir())
  const { fleetDiskUse } = await import('./upkeep')
  const { readFleet } = await import('./machines-file')
  const fleet = readFleet(layout.machinesConfig)
  const use = await fleetDiskUse(layout, fleet)
  if (o.json) {
    process.stdout.write(JSON.stringify({ machines: fleet.machines.map((m) => ({ ...m, ...use.machines.find((u) => u.name === m.name) })), images: use.images, cacheBytes: use.cacheBytes, totalBytes: use.totalBytes }, null, 2) + '\n')
    return 0
  }
  if (fleet.machines.length === 0) {
    process.stdout.write('no machine yet: make a Linux one with `aviary machines create linux` (after `sudo aviary setup --user $USER` once)\n')
    return 0
  }
  for (const m of fleet.machines) {
    const u = use.machines.find((x) => x.name === m.name)!
    const preparing = (() => {
      try {
        readFileSync(`${layout.machineDir(m.name)}/preparing.json`)
        return ' (in prepare mode)'
      } catch {
        return ''
      }
    })()
    process.stdout.write(`${m.name.padEnd(20)} ${m.driver.padEnd(10)} ${m.platform.padEnd(8)} ${m.ip.padEnd(16)} ${u.built ? `${mib(u.bytes).padStart(10)} on ${u.image ?? 'no image'}` : '(not made by Aviary)'}${preparing}\n`)
  }
  for (const i of use.images) process.stdout.write(`image ${i.key}: ${mib(i.bytes)}, used by ${i.usedBy.length > 0 ? i.usedBy.join(', ') : 'no machine'}\n`)
  process.stdout.write(`package cache: ${mib(use.cacheBytes)}; in all ${mib(use.totalBytes)}\n`)
  return 0
}

async function del(name: string, o: Common & { uri?: string }): Promise<number> {
  const layout = createLayout(o.data ?? defaultDataDir())
  const pid = runningService(layout)
  const { removed } = pid !== null
    ? await api<{ removed: string[] }>(o, 'DELETE', `/aviary/machines/${encodeURIComponent(name)}`)
    : await (await import('./upkeep')).deleteMachine(layout, name, { uri: o.uri })
  process.stdout.write(`deleted ${name}: ${removed.join(', ')}\n`)
  return 0
}

async function rebuild(name: string, o: Common & { uri?: string }): Promise<number> {
  const layout = createLayout(o.data ?? defaultDataDir())
  if (runningService(layout) !== null) {
    const { build } = await api<{ build: { id: number } }>(o, 'POST', `/aviary/machines/${encodeURIComponent(name)}/rebuild`)
    return followBuild(o, build.id)
  }
  const { deleteMachine, fleetDiskUse } = await import('./upkeep')
  const { createLinuxMachines } = await import('./linux-machines')
  const { defaultLinuxAgent } = await import('./machine-builds')
  const disk = (await fleetDiskUse(layout)).machines.find((m) => m.name === name)
  if (!disk) throw new ApiCallError(`there is no machine '${name}' in machines.json`)
  if (!disk.built) throw new ApiCallError(`${name} was not made by Aviary (it has no folder under machines/): rebuild it by hand`)
  const { removed } = await deleteMachine(layout, name, { uri: o.uri })
  process.stderr.write(`deleted ${name}: ${removed.join(', ')}\n`)
  const r = await createLinuxMachines({ name }, { layout, agentFile: defaultLinuxAgent(), uri: o.uri }, printEvent)
  for (const m of r.machines) process.stdout.write(`rebuilt ${m.name}: ${m.ip}, domain ${m.label}, snapshot 'clean'\n`)
  return 0
}

async function leftovers(o: Common & { remove?: boolean; uri?: string }): Promise<number> {
  const layout = createLayout(o.data ?? defaultDataDir())
  const viaApi = runningService(layout) !== null
  const up = await import('./upkeep')
  const found = viaApi ? (await api<{ leftovers: import('./upkeep').Leftover[] }>(o, 'GET', '/aviary/machines/leftovers')).leftovers : await up.findLeftovers(layout, { uri: o.uri })
  if (o.json && !o.remove) {
    process.stdout.write(JSON.stringify({ leftovers: found }, null, 2) + '\n')
    return 0
  }
  if (found.length === 0) {
    process.stdout.write('no leftovers: every machine folder, domain, snapshot and image is in use\n')
    return 0
  }
  for (const l of found) process.stdout.write(`${l.kind.padEnd(9)} ${l.name}${l.bytes ? ` (${mib(l.bytes)})` : ''}: ${l.why}\n`)
  if (!o.remove) {
    process.stdout.write('remove them with: aviary machines leftovers --remove\n')
    return 0
  }
  const r = viaApi ? await api<Awaited<ReturnType<typeof up.removeLeftovers>>>(o, 'POST', '/aviary/machines/leftovers/remove', { names: found.map((l) => l.name) })
    : await up.removeLeftovers(layout, found, { uri: o.uri })
  process.stdout.write(`removed ${r.removed.length}${r.failed.length > 0 ? `; could not remove: ${r.failed.map((f) => `${f.item.name} (${f.error})`).join('; ')}` : ''}\n`)
  return r.failed.length > 0 ? 1 : 0
}

async function prepare(name: string, o: Common & { keep?: boolean; discard?: boolean }): Promise<number> {
  const layout = createLayout(o.data ?? defaultDataDir())
  if (runningService(layout) === null) {
    throw new ApiCallError('prepare mode goes through the running service, which keeps tasks off the machine meanwhile: start it (aviary serve, or the app) first')
  }
  if (o.keep && o.discard) throw new ApiCallError('--keep or --discard, not both')
  const n = encodeURIComponent(name)
  if (o.keep || o.discard) {
    await api(o, 'POST', `/aviary/machines/${n}/${o.keep ? 'keep' : 'discard'}`)
    process.stdout.write(o.keep ? `kept: ${name}'s snapshot is now the machine as you left it; it is powered off and takes tasks again\n`
      : `discarded: ${name} is back to its snapshot, powered off, and takes tasks again\n`)
    return 0
  }
  const state = await api<{ reach: string[] }>(o, 'POST', `/aviary/machines/${n}/prepare`)
  process.stdout.write(`${name} is running from its snapshot and takes no task until you end prepare mode. Reach it:\n`)
  for (const line of state.reach) process.stdout.write(`  ${line}\n`)
  process.stdout.write(`then: aviary machines prepare ${name} --keep   (its state becomes the snapshot)\n  or: aviary machines prepare ${name} --discard\n`)
  return 0
}

/** Adds list, delete, rebuild, leftovers and prepare under `aviary machines`. */
export function registerFleetCommands(machines: Command, setExit: (code: number) => void): void {
  const common = (c: Command): Command => c
    .option('--data <dir>', 'data directory (default: $AVIARY_DATA or the per-user data directory)')
    .addOption(new Option('--remote <base>', 'the running service\'s API, used when one holds the data directory').env('AVIARY_URL').default(`http://${DEFAULT_HOST}:${DEFAULT_PORT}`))
    .addOption(new Option('--api-token <token>', 'Bearer token of the API').env('AVIARY_API_TOKEN'))
  const guard = (fn: () => Promise<number>) => async (): Promise<void> => {
    try {
      setExit(await fn())
    } catch (err) {
      process.stderr.write(`aviary: ${(err as Error).message}\n`)
      setExit(1)
    }
  }
  common(machines.command('list').description("the machines, each one's disk use and image, the images and the package cache"))
    .option('--json', 'print as JSON')
    .action((o: Common) => guard(() => list(o))())
  common(machines.command('delete').description('delete a machine: its entry in machines.json and, for one Aviary made, its domain, snapshots and disk').argument('<name>'))
    .option('--uri <uri>', 'libvirt connection (default: kvm.uri of machines.json)')
    .action((name: string, o: Common & { uri?: string }) => guard(() => del(name, o))())
  common(machines.command('rebuild').description('delete a machine Aviary made and make it again under its name (the image is reused)').argument('<name>'))
    .option('--uri <uri>', 'libvirt connection (default: kvm.uri of machines.json)')
    .action((name: string, o: Common & { uri?: string }) => guard(() => rebuild(name, o))())
  common(machines.command('leftovers').description('what a crash or an interrupted build left: folders, domains, snapshots, images nothing in machines.json uses'))
    .option('--remove', 'remove them')
    .option('--json', 'print as JSON')
    .option('--uri <uri>', 'libvirt connection (default: kvm.uri of machines.json)')
    .action((o: Common & { remove?: boolean; uri?: string }) => guard(() => leftovers(o))())
  common(machines.command('prepare').description('start a machine from its snapshot for you to change (install software); then --keep makes that its snapshot, --discard drops it').argument('<name>'))
    .option('--keep', 'end prepare mode: the machine as it runs now becomes its snapshot')
    .option('--discard', 'end prepare mode: back to the snapshot')
    .action((name: string, o: Common & { keep?: boolean; discard?: boolean }) => guard(() => prepare(name, o))())
}
