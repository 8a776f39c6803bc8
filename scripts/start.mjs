// `npm start`: the desktop app where Electron can run (its binary is installed and, on Linux, a
// display is available), otherwise the headless service with the UI served at its address.
// `npm start -- --headless [serve options]` forces the latter; other arguments go to `aviary serve`.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const require = createRequire(import.meta.url)

/** The Electron executable when it is installed (electron's own install script may have been
 *  skipped: allowScripts has electron: false), else null. */
export function electronBinary() {
  const dir = path.join(root, 'node_modules', 'electron')
  const pathFile = path.join(dir, 'path.txt')
  if (!existsSync(pathFile)) return null
  const bin = path.join(dir, 'dist', readFileSync(pathFile, 'utf8').trim())
  return existsSync(bin) ? bin : null
}

/** Why the desktop app cannot open here, or null when it can. */
export function desktopUnavailable(env = process.env) {
  if (!electronBinary()) return 'the Electron binary is not installed (node_modules/electron/dist)'
  if (process.platform === 'linux' && !env.DISPLAY && !env.WAYLAND_DISPLAY) return 'no display (DISPLAY and WAYLAND_DISPLAY are unset)'
  return null
}

/** Runs a command with inherited stdio; resolves with its exit code. */
function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, stdio: 'inherit', ...opts })
    // Ctrl-C reaches the child too (same process group): it stops itself, cleanly, and we follow.
    // A SIGTERM sent to this process alone is passed on.
    const ignore = () => undefined
    const forward = () => child.kill('SIGTERM')
    process.on('SIGINT', ignore)
    process.on('SIGTERM', forward)
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      process.off('SIGINT', ignore)
      process.off('SIGTERM', forward)
      resolve(code ?? (signal ? 1 : 0))
    })
  })
}

async function main(argv) {
  const headless = argv.includes('--headless')
  const serveArgs = argv.filter((a) => a !== '--headless')
  const electronVite = path.join(path.dirname(require.resolve('electron-vite/package.json')), 'bin', 'electron-vite.js')
  const why = headless ? 'asked for with --headless' : desktopUnavailable()

  if (!why) {
    // electron-vite preview builds main, preload and renderer, then opens the app.
    const built = await run(process.execPath, ['scripts/build-cli.mjs'])
    if (built !== 0) return built
    return run(process.execPath, [electronVite, 'preview'])
  }

  process.stderr.write(`aviary: no desktop window: ${why}. Starting the headless service, which serves the UI\n`)
  for (const step of [['scripts/build-cli.mjs'], [electronVite, 'build']]) {
    const code = await run(process.execPath, step)
    if (code !== 0) return code
  }
  // The service prints `UI: http://HOST:PORT/` once it listens.
  return run(process.execPath, ['--max-semi-space-size=2', 'bin/aviary.js', 'serve', ...serveArgs])
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2))
}
