// A Windows guest without a VM: a netns guest (netns-guest.ts: a namespace, a veth, a fake DNS and
// HTTP internet) whose agent is Aviary's Windows agent (the Node single executable
// aviary-agent-win-x64.exe) running under Debian's Wine. Wine programs are Linux processes, so the
// namespace gives them the guest's address, and tcpdump on the host side sees their traffic.
//
// - The Wine prefix: one template per Wine version, made once per machine (wineboot, Windows 10 as
//   the version Node requires, WINEDEBUG=-all) under /var/cache/aviary-wine (survives test runs and
//   fresh clones on the same machine), then given to each guest as an overlay (overlayfs: the
//   template below, the guest's changes in a folder of its own), which costs nothing where a
//   `cp -a` of its ~700 MB took ~2.5 s and as much to remove, per guest. Wine
//   links a new prefix into the host: Desktop, Documents, ... point at $HOME and drive Z: is `/`.
//   The template cuts both (real folders, no Z:), so a guest's files stay in its prefix and the
//   analyzer does not list the host's home folder (6 s for 5,800 files under Wine).
// - The agent: built by scripts/build-agent.mjs into a cache folder keyed by the hash of the
//   agent's sources, so a run that changed nothing of the agent does not build it again.
// - Wine needs no display for console programs; none is started.
// - Everything a guest starts dies with close(): `wineserver -k` for its prefix (which ends every
//   Windows process of it), then the namespace's own cleanup kills whatever is left in it.
import { execFile, execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { createNetnsGuest, type NetnsGuest } from './netns-guest'
import { compileC } from '../fixtures/compiled'

const run = promisify(execFile)
const ROOT = path.resolve(__dirname, '../..')
const CACHE = process.env.AVIARY_WINE_CACHE ?? '/var/cache/aviary-wine'
const QUIET = { WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=' }

export interface WineGuest extends NetnsGuest {
  /** The guest's Wine prefix (host path; the same path inside the guest). */
  prefix: string
  /** Host path of the guest's C: drive. */
  driveC: string
  /** Where the agent's stdout and stderr go (node.exe cannot write to a pipe under Wine). */
  agentLog: string
}

/** True when this machine can run the test bed (Wine 64-bit and mingw-w64 installed). */
export function wineAvailable(): boolean {
  for (const tool of ['wine', 'wineserver', 'x86_64-w64-mingw32-gcc']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' })
    } catch {
      return false
    }
  }
  return true
}

export function wineVersion(): string {
  return execFileSync('wine', ['--version'], { encoding: 'utf8', env: { ...process.env, ...QUIET } }).trim()
}

/** The template prefix for this Wine version, made if missing (atomically: parallel runs may race). */
export async function wineTemplate(): Promise<string> {
  const version = wineVersion().replace(/[^A-Za-z0-9.~-]+/g, '_')
  // The recipe's version is in the name: a changed recipe makes a new template.
  const template = path.join(CACHE, `prefix-${version}-win10-sealed1`)
  if (existsSync(path.join(template, 'system.reg'))) return template
  mkdirSync(CACHE, { recursive: true })
  const work = `${template}.build-${process.pid}`
  rmSync(work, { recursive: true, force: true })
  const env = { ...process.env, ...QUIET, WINEPREFIX: work, DISPLAY: '' }
  try {
    await run('wineboot', ['-i'], { env, timeout: 120_000 })
    await run('winecfg', ['-v', 'win10'], { env, timeout: 60_000 })
    // Waits until the registry is written out and every Wine process of the prefix is gone.
    await run('wineserver', ['-w'], { env, timeout: 60_000 })
    if (!existsSync(path.join(work, 'system.reg'))) throw new Error(`wineboot made no registry in ${work}`)
    const users = path.join(work, 'drive_c', 'users')
    for (const user of readdirSync(users)) {
      for (const name of readdirSync(path.join(users, user))) {
        const p = path.join(users, user, name)
        if (!lstatSync(p).isSymbolicLink()) continue
        unlinkSync(p)
        mkdirSync(p)
      }
    }
    rmSync(path.join(work, 'dosdevices', 'z:'), { force: true })
    try {
      renameSync(work, template)
    } catch (err) {
      if (!existsSync(path.join(template, 'system.reg'))) throw err // else another run was first
    }
  } finally {
    await run('wineserver', ['-k'], { env }).catch(() => undefined)
    rmSync(work, { recursive: true, force: true })
  }
  return template
}

function agentSourcesHash(): string {
  const h = createHash('sha256')
  // The analyzer and the helper are sent with each task, not built into the agent.
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name)
      if (statSync(p).isDirectory()) {
        if (name !== 'analyzer' && name !== 'windows-helper') walk(p)
      }
      else if (/\.(ts|mjs)$/.test(name) && !name.endsWith('.test.ts')) h.update(p).update(readFileSync(p))
    }
  }
  walk(path.join(ROOT, 'src/agent'))
  walk(path.join(ROOT, 'src/guest-protocol'))
  h.update(readFileSync(path.join(ROOT, 'scripts/build-agent.mjs')))
  return h.digest('hex').slice(0, 16)
}

/** aviary-agent-win-x64.exe for the current sources, built once into the cache. */
export async function windowsAgent(): Promise<string> {
  const dir = path.join(CACHE, `agent-${agentSourcesHash()}`)
  const exe = path.join(dir, 'aviary-agent-win-x64.exe')
  if (existsSync(exe)) return exe
  const work = `${dir}.build-${process.pid}`
  rmSync(work, { recursive: true, force: true })
  try {
    await run(process.execPath, ['scripts/build-agent.mjs'], {
      cwd: ROOT,
      env: { ...process.env, AVIARY_AGENT_OUTDIR: work, AVIARY_ANALYZER_OUTDIR: path.join(work, 'analyzer') },
      timeout: 600_000,
      maxBuffer: 16 << 20
    })
    rmSync(path.join(work, 'aviary-agent-linux-x64'), { force: true })
    rmSync(path.join(work, 'analyzer'), { recursive: true, force: true })
    try {
      renameSync(work, dir)
    } catch (err) {
      if (!existsSync(exe)) throw err
    }
    // Agents of earlier sources (70 MB each) are not kept.
    for (const old of readdirSync(CACHE)) {
      if (/^agent-[0-9a-f]{16}$/.test(old) && path.join(CACHE, old) !== dir) rmSync(path.join(CACHE, old), { recursive: true, force: true })
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  return exe
}

/** The environment of Wine programs of `prefix`: `base` (default this process's) and Wine's variables. */
export function wineEnv(prefix: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, ...QUIET, WINEPREFIX: prefix, DISPLAY: '', WINEARCH: 'win64' }
}

export interface WineGuestOptions {
  index: number
  prefix: string
  /**
   * The host folder for the guest's prefix and the agent's log (default under the cache). Wine
   * shows the prefix's path to Windows programs (WINECONFIGDIR and the like in their environment).
   */
  home?: string
  /** Where the agent goes in the guest, a path on C: (default `C:\aviary\agent.exe`). */
  agentPath?: string
  /** The Unix environment the agent starts with, before Wine's variables (default this process's). */
  env?: NodeJS.ProcessEnv
}

/** A netns guest with its own copy of the template prefix and the Windows agent listening on :8000. */
export async function createWineGuest(o: WineGuestOptions): Promise<WineGuest> {
  const [template, agent] = await Promise.all([wineTemplate(), windowsAgent()])
  const guest = await createNetnsGuest({ index: o.index, prefix: o.prefix })
  // Outside the guest's private /tmp, so the same path works on both sides.
  const home = o.home ?? path.join(CACHE, 'guests', guest.ns)
  const prefix = path.join(home, 'prefix')
  const agentLog = path.join(home, 'agent.log')
  const agentPath = o.agentPath ?? 'C:\\aviary\\agent.exe'
  if (!/^C:\\[^:*?"<>|]+$/i.test(agentPath)) throw new Error(`agentPath must be a path on C:, got ${agentPath}`)
  const stopWine = async (): Promise<void> => {
    // Inside the namespace: the guest's wineserver has its socket in the guest's private /tmp.
    const k = guest.exec(['wineserver', '-k'], { env: wineEnv(prefix, o.env), stdio: 'ignore' })
    await new Promise<void>((done) => {
      const t = setTimeout(done, 10_000)
      k.once('exit', () => { clearTimeout(t); done() })
      k.once('error', () => { clearTimeout(t); done() })
    })
  }
  const close = async (): Promise<void> => {
    await stopWine()
    await guest.close()
    await unmountPrefix(prefix)
    rmSync(home, { recursive: true, force: true })
  }
  try {
    await prefixFromTemplate(home, template)
    const exe = path.join(prefix, 'drive_c', ...agentPath.slice(3).split('\\'))
    mkdirSync(path.dirname(exe), { recursive: true })
    await run('cp', [agent, exe])
    // The agent's output goes to a file: node.exe's console writes fail with EBADF on a pipe.
    await guest.startAgent(['sh', '-c', 'exec wine "$0" -H 0.0.0.0 -p 8000 >>"$1" 2>&1', agentPath, agentLog], {
      env: wineEnv(prefix, o.env),
      cwd: ROOT,
      stdio: 'ignore',
      timeoutMs: 90_000
    })
  } catch (err) {
    const log = existsSync(agentLog) ? readFileSync(agentLog, 'utf8').slice(-2000) : ''
    await close()
    throw new Error(`${(err as Error).message}${log ? `\nagent log: ${log}` : ''}`, { cause: err })
  }
  return { ...guest, prefix, driveC: path.join(prefix, 'drive_c'), agentLog, close }
}

/**
 * A Wine prefix of its own at `<home>/prefix`, made of the template: an overlay with the template
 * below and what Wine writes in `<home>/upper`. It is ready at once, where a `cp -a` of the
 * template's ~700 MB took ~2.5 s of CPU and as much again to remove. Whatever `home` held is
 * removed first (a killed run may have left its overlay mounted). `remove()` unmounts the prefix
 * and deletes `home`.
 */
export async function prefixFromTemplate(home: string, template?: string): Promise<{ prefix: string; remove: () => Promise<void> }> {
  const lower = template ?? await wineTemplate()
  const prefix = path.join(home, 'prefix')
  await unmountPrefix(prefix)
  rmSync(home, { recursive: true, force: true })
  for (const d of [prefix, path.join(home, 'upper'), path.join(home, 'work')]) mkdirSync(d, { recursive: true })
  await run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${path.join(home, 'upper')},workdir=${path.join(home, 'work')}`, prefix])
  return {
    prefix,
    remove: async () => {
      await unmountPrefix(prefix)
      rmSync(home, { recursive: true, force: true })
    }
  }
}

/** Takes a guest's prefix overlay away, if it is mounted (lazily: a process may still hold a file). */
async function unmountPrefix(prefix: string): Promise<void> {
  const mounted = readFileSync('/proc/self/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === prefix)
  if (mounted) await run('umount', ['--lazy', prefix])
}

/**
 * Pids of Wine processes (wineserver and Windows programs) still running with a prefix under
 * `under` (default: this fixture's guests).
 */
export function leftoverWine(under = path.join(CACHE, 'guests')): number[] {
  const out: number[] = []
  const mark = Buffer.from(`WINEPREFIX=${under}/`)
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (readFileSync(`/proc/${name}/environ`).includes(mark)) out.push(Number(name))
    } catch {
      // gone
    }
  }
  return out
}

/** leftoverWine(under), after waiting up to `ms` for processes that were just told to end. */
export async function wineLeftAfter(ms: number, under?: string): Promise<number[]> {
  const deadline = Date.now() + ms
  let left = leftoverWine(under)
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    left = leftoverWine(under)
  }
  return left
}

/** Builds a test sample from test/fixtures/windows-samples with mingw-w64 into `outDir` (once: test/fixtures/compiled.ts). */
export function buildSample(source: string, outDir: string, o: { dll?: boolean; libs?: string[] } = {}): string {
  return compileC({
    compiler: 'x86_64-w64-mingw32-gcc',
    source: readFileSync(path.join(ROOT, 'test/fixtures/windows-samples', source), 'utf8'),
    flags: ['-O2', '-Wall', '-s', ...(o.dll === true ? ['-shared'] : [])],
    libs: o.libs,
    out: path.join(outDir, source.replace(/\.c$/, o.dll === true ? '.dll' : '.exe'))
  })
}
