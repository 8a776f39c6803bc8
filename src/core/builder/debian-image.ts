// The Linux guest image: Debian 12 from Debian's packages only, made by Debian's own tools.
// `debvm-create` (debvm, over mmdebstrap) makes a bootable root file system (systemd, the cloud
// kernel, fstab, hostname); the hooks of linux-guest.ts add the agent and the quiet; qemu-img
// turns the raw ext4 into a compressed qcow2, the read-only base every machine's disk is an
// overlay of. The kernel and initrd are taken out for direct kernel boot.
//
// Cached twice, both under the data folder:
//  - the package cache, cache/apt/bookworm-amd64/{archives,lists}: every .deb and the package
//    lists of the last build, synced in before and out after (mmdebstrap's sync-in/sync-out). With
//    lists cached, builds use them (`--skip=update`) and download only what the cache lacks: a
//    rebuild (a new agent, say) works offline and installs the same versions. `refresh` fetches
//    new lists (security updates) and needs the archive;
//  - the image itself, images/<key>/, where the key hashes every input (this builder's format,
//    the package set, the hooks, the agent's bytes, the tools' versions): the same inputs never
//    build twice, a changed agent builds again. Built in a folder aside and renamed into place, so
//    an interrupted build never looks like a finished one.
//
// Root is not needed: as a user mmdebstrap runs in `unshare` mode (subordinate ids of
// /etc/subuid, uidmap's newuidmap). Its temporary root lives in /dev/shm when that has room
// (dpkg's many small writes and fsyncs cost nothing there: measured 100 s against 590 s on disk,
// on a loaded 2-core machine), else in the system's temporary folder; both are open to the
// unshared ids, which a folder in a private home is not.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, createReadStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { pipeline } from 'node:stream/promises'
import { runTool } from '../machinery/exec-tool'
import { customizeHook, initramfsHook, type GuestAgentSpec } from './linux-guest'
import { AGENT_PORT } from '../../guest-protocol/agent-api'

/** Bumped whenever what a build puts in an image changes in a way the hashed inputs do not show. */
export const IMAGE_FORMAT = 1

/** What the analyzer needs (strace, update-ca-certificates, wget for URLs) and what a Debian system has (ip, ping, ps). */
export const BASE_PACKAGES = ['strace', 'ca-certificates', 'wget', 'iproute2', 'iputils-ping', 'procps'] as const

export interface DebianImageSpec {
  suite: 'bookworm'
  /** Debian's archive; its security archive is `<mirror>/debian-security`. */
  mirror: string
  /** The agent executable on this host (out/agent/aviary-agent-linux-x64). */
  agentFile: string
  agent: GuestAgentSpec
  hostname: string
  dns: string
  diskGiB: number
  /** Added to BASE_PACKAGES. */
  packages: string[]
}

export const DEFAULT_IMAGE = {
  suite: 'bookworm',
  mirror: 'http://deb.debian.org',
  agent: { name: 'guestd', port: AGENT_PORT },
  hostname: 'debian',
  dns: '8.8.8.8',
  diskGiB: 4,
  packages: [] as string[]
} satisfies Omit<DebianImageSpec, 'agentFile'>

export interface ImageFiles {
  key: string
  dir: string
  /** The compressed qcow2 base (read-only once built). */
  disk: string
  kernel: string
  initrd: string
  manifest: ImageManifest
}

export interface ImageManifest {
  key: string
  format: number
  built: string
  buildSeconds: number
  suite: string
  packages: string[]
  /** `name version` of every installed package. */
  installed: string[]
  agent: GuestAgentSpec
  hostname: string
  dns: string
  diskGiB: number
  /** Bytes of the qcow2 base. */
  diskBytes: number
  tools: Record<string, string>
  /** Whether the package lists came from the cache (offline-capable) or were fetched. */
  lists: 'cached' | 'fetched'
}

export class ImageBuildError extends Error {
  constructor(message: string, readonly outputTail: string[] = []) {
    super(message)
  }
}

export interface BuildHooks {
  /** A line of the tools' output (mmdebstrap, debvm, dpkg). */
  output?: (line: string) => void
  /** mmdebstrap's own "I: ..." progress lines, and the builder's. */
  note?: (message: string) => void
  signal?: AbortSignal
}

export interface ImageDirs {
  /** images/ */
  images: string
  /** cache/apt/<suite>-amd64 */
  cache: string
}

const sha256File = async (file: string): Promise<string> => {
  const h = createHash('sha256')
  await pipeline(createReadStream(file), h)
  return h.digest('hex')
}

async function dpkgVersion(pkg: string): Promise<string> {
  return (await runTool('dpkg-query', ['-W', '-f', '${Version}', pkg], `asking dpkg for ${pkg}`, 30_000).catch(() => ({ stdout: 'unknown' }))).stdout.trim()
}

/** The image's key: every input that changes what is built. */
export async function imageKey(spec: DebianImageSpec): Promise<{ key: string; tools: Record<string, string> }> {
  const tools = { debvm: await dpkgVersion('debvm'), mmdebstrap: await dpkgVersion('mmdebstrap') }
  const h = createHash('sha256')
  h.update(JSON.stringify({
    format: IMAGE_FORMAT, suite: spec.suite, mirror: spec.mirror, agent: spec.agent, hostname: spec.hostname, dns: spec.dns, diskGiB: spec.diskGiB,
    packages: [...BASE_PACKAGES, ...spec.packages], tools, initramfs: initramfsHook(), customize: customizeHook(spec.agent, spec.dns)
  }))
  h.update(await sha256File(spec.agentFile))
  return { key: `debian-${spec.suite}-${h.digest('hex').slice(0, 16)}`, tools }
}

/** The built image of `key`, or null when it is not (completely) built. */
export function builtImage(imagesDir: string, key: string): ImageFiles | null {
  const dir = path.join(imagesDir, key)
  const files = { disk: path.join(dir, 'disk.qcow2'), kernel: path.join(dir, 'vmlinuz'), initrd: path.join(dir, 'initrd.img') }
  const manifestFile = path.join(dir, 'manifest.json')
  if (!existsSync(manifestFile) || !Object.values(files).every((f) => existsSync(f))) return null
  return { key, dir, ...files, manifest: JSON.parse(readFileSync(manifestFile, 'utf8')) as ImageManifest }
}

const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`

/** Where mmdebstrap keeps the root it builds: /dev/shm when it has 3 GiB free, else the temporary folder. */
function buildTmp(): string {
  try {
    const st = statfsSync('/dev/shm')
    if (st.bavail * st.bsize >= 3 * 2 ** 30) return '/dev/shm'
  } catch {
    /* no /dev/shm */
  }
  return tmpdir()
}

/** debvm-create's arguments, then mmdebstrap's (after `--`), then the mirrors. */
export function debvmArgs(spec: DebianImageSpec, o: { raw: string; work: string; cache: string; offline: boolean }): string[] {
  const archives = path.join(o.cache, 'archives')
  const lists = path.join(o.cache, 'lists')
  const m = spec.mirror.replace(/\/+$/, '')
  return [
    '-r', spec.suite, '-h', spec.hostname, '-o', o.raw, '-z', `${spec.diskGiB}G`,
    // Ours instead: a static address (not DHCP), no serial autologin, no package lists in the
    // image, merged /usr by the hook that needs no package lists (the maybe- one runs apt update).
    '-s', 'autologin,systemdnetwork,packagelists,usrmerge',
    '--',
    '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr',
    `--include=${[...BASE_PACKAGES, ...spec.packages].join(',')}`,
    '--dpkgopt=force-unsafe-io',
    // No manuals, documentation or translations (they stay excluded for packages installed later).
    '--dpkgopt=path-exclude=/usr/share/man/*', '--dpkgopt=path-exclude=/usr/share/info/*',
    '--dpkgopt=path-exclude=/usr/share/doc/*', '--dpkgopt=path-include=/usr/share/doc/*/copyright',
    '--dpkgopt=path-exclude=/usr/share/locale/*', '--dpkgopt=path-include=/usr/share/locale/locale.alias',
    '--skip=essential/unlink',
    ...(o.offline ? ['--skip=update'] : []),
    '--setup-hook=mkdir -p "$1/var/cache/apt/archives" "$1/var/lib/apt/lists"',
    `--setup-hook=sync-in ${q(archives)} /var/cache/apt/archives/`,
    ...(o.offline ? [`--setup-hook=sync-in ${q(lists)} /var/lib/apt/lists/`] : []),
    `--essential-hook=${initramfsHook()}`,
    `--customize-hook=upload ${q(spec.agentFile)} ${q(`/usr/local/sbin/${spec.agent.name}`)}`,
    `--customize-hook=${customizeHook(spec.agent, spec.dns)}`,
    `--customize-hook=sync-out /var/cache/apt/archives ${q(archives)}`,
    ...(o.offline ? [] : [`--customize-hook=sync-out /var/lib/apt/lists ${q(lists)}`]),
    ...['vmlinuz', 'initrd.img', 'packages.txt'].map((f) => `--customize-hook=download /tmp/${f} ${q(path.join(o.work, f))}`),
    `deb ${m}/debian ${spec.suite} main`,
    `deb ${m}/debian ${spec.suite}-updates main`,
    `deb ${m}/debian-security ${spec.suite}-security main`
  ]
}

/** Runs a tool, its output line by line to `hooks`; rejects with the last lines when it fails. */
function runStreaming(cmd: string, args: string[], env: NodeJS.ProcessEnv, hooks: BuildHooks): Promise<void> {
  return new Promise((resolve, reject) => {
    if (hooks.signal?.aborted) throw new ImageBuildError('the image build was interrupted')
    // A process group of its own: debvm-create runs mmdebstrap, which runs apt and dpkg; an
    // interruption ends them all (mmdebstrap removes its temporary root on SIGTERM).
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    const stop = (): void => {
      try {
        process.kill(-child.pid!, 'SIGTERM')
      } catch {
        /* gone */
      }
    }
    hooks.signal?.addEventListener('abort', stop, { once: true })
    const tail: string[] = []
    const line = (l: string): void => {
      tail.push(l)
      if (tail.length > 40) tail.shift()
      const note = /^I: (.*)$/.exec(l)
      if (note) hooks.note?.(note[1]!)
      hooks.output?.(l)
    }
    createInterface({ input: child.stdout }).on('line', line)
    createInterface({ input: child.stderr }).on('line', line)
    child.once('error', (err: NodeJS.ErrnoException) => reject(new ImageBuildError(err.code === 'ENOENT'
      ? `${cmd} was not found: install debvm and mmdebstrap (apt install debvm mmdebstrap uidmap qemu-utils)`
      : `${cmd}: ${err.message}`)))
    child.once('close', (code, sig) => {
      hooks.signal?.removeEventListener('abort', stop)
      if (hooks.signal?.aborted) reject(new ImageBuildError('the image build was interrupted', tail))
      else if (code === 0) resolve()
      else reject(new ImageBuildError(`${cmd} failed (${sig ?? `exit ${code}`}): ${tail.filter((l) => /^E:|error|failed/i.test(l)).slice(-3).join(' | ') || tail.slice(-3).join(' | ')}`, tail))
    })
  })
}

/**
 * The image of `spec`: the built one when its key is built already (`rebuild` builds it again),
 * else built now. `refresh` fetches new package lists instead of using the cached ones.
 */
export async function ensureImage(spec: DebianImageSpec, dirs: ImageDirs, o: { rebuild?: boolean; refresh?: boolean } & BuildHooks = {}): Promise<ImageFiles & { cached: boolean }> {
  const { key, tools } = await imageKey(spec)
  const found = builtImage(dirs.images, key)
  if (found && !o.rebuild && !o.refresh) return { ...found, cached: true }
  for (const d of [dirs.images, path.join(dirs.cache, 'archives'), path.join(dirs.cache, 'lists')]) mkdirSync(d, { recursive: true })
  return withImagesLock(dirs.images, o, async () => {
    // Another process may have built it while this one waited.
    const now = builtImage(dirs.images, key)
    if (now && !o.rebuild && !o.refresh) return { ...now, cached: true }
    return buildImage(spec, dirs, key, tools, o)
  })
}

/**
 * One image build per images folder at a time, across processes (a service and a CLI on the same
 * data folder, two test files sharing a cache): the second would replace the first's folder under
 * machines whose disks are built on it, and both would write the package cache at once. The lock
 * is a file holding the builder's pid; a lock whose process is gone is taken over.
 */
export async function withImagesLock<T>(images: string, o: BuildHooks, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(images, '.lock')
  let told = false
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' })
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const holder = Number.parseInt(readFileSafe(lock), 10)
    if (!Number.isSafeInteger(holder) || holder <= 0 || !processAlive(holder)) {
      rmSync(lock, { force: true })
      continue
    }
    if (!told) o.note?.(`waiting for another build in ${images} (process ${holder}) to end`)
    told = true
    if (o.signal?.aborted) throw new Error('the build was stopped while it waited for another build')
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
  try {
    return await fn()
  } finally {
    rmSync(lock, { force: true })
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function buildImage(spec: DebianImageSpec, dirs: ImageDirs, key: string, tools: ImageManifest['tools'], o: { refresh?: boolean } & BuildHooks): Promise<ImageFiles & { cached: boolean }> {
  const started = Date.now()
  const offline = !o.refresh && existsSync(path.join(dirs.cache, 'lists')) &&
    readdirNames(path.join(dirs.cache, 'lists')).some((n) => n.endsWith('_Packages'))
  o.note?.(offline ? 'using the cached package lists (offline-capable; --refresh fetches new ones)' : 'fetching the package lists')
  const work = mkdtempSync(path.join(dirs.images, `.build-${key}-`))
  try {
    const raw = path.join(work, 'rootfs.ext4')
    await runStreaming('debvm-create', debvmArgs(spec, { raw, work, cache: dirs.cache, offline }), { ...process.env, TMPDIR: buildTmp() }, o)
    o.note?.('compressing the disk image (qemu-img convert -c)')
    await runTool('qemu-img', ['convert', '-c', '-O', 'qcow2', raw, path.join(work, 'disk.qcow2')], 'converting the image to qcow2', 1_800_000, o.signal)
    rmSync(raw)
    const installed = readFileSync(path.join(work, 'packages.txt'), 'utf8').trim().split('\n').filter(Boolean)
    rmSync(path.join(work, 'packages.txt'))
    const manifest: ImageManifest = {
      key, format: IMAGE_FORMAT, built: new Date().toISOString(), buildSeconds: Math.round((Date.now() - started) / 1000),
      suite: spec.suite, packages: [...BASE_PACKAGES, ...spec.packages], installed, agent: spec.agent, hostname: spec.hostname, dns: spec.dns,
      diskGiB: spec.diskGiB, diskBytes: statSync(path.join(work, 'disk.qcow2')).size, tools, lists: offline ? 'cached' : 'fetched'
    }
    writeFileSync(path.join(work, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n')
    // mkdtemp made it private; libvirt's QEMU reads the base, the kernel and the initrd.
    chmodSync(work, 0o755)
    const dir = path.join(dirs.images, key)
    rmSync(dir, { recursive: true, force: true })
    renameSync(work, dir)
    return { ...builtImage(dirs.images, key)!, cached: false }
  } catch (err) {
    rmSync(work, { recursive: true, force: true })
    throw err
  }
}

function readdirNames(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}
