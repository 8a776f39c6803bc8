// Builds the bundled CLI (with Aviary's analyzer), the renderer and the Linux agent executable once per test
// run, so tests that spawn `aviary`, start the hashing worker, upload the analyzer or boot a guest
// with the agent use the same artifacts as a user would. The UI's build runs beside the other two.
import { spawn } from 'node:child_process'

/** Runs `node args`; rejects with what it said when it fails. `quiet` keeps its output unless it fails. */
function node(what: string, args: string[], quiet = false): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'] })
    let said = ''
    child.stdout?.on('data', (b: Buffer) => { said = (said + b.toString()).slice(-8000) })
    child.stderr?.on('data', (b: Buffer) => { said = (said + b.toString()).slice(-8000) })
    child.once('error', reject)
    child.once('exit', (code, signal) => code === 0 ? resolve() : reject(new Error(`${what} failed (${signal ?? code}): ${said}`)))
  })
}

export default async function setup(): Promise<void> {
  await Promise.all([
    // The UI the service serves at / (the UI and Electron launch tests load it).
    node('building the UI', ['node_modules/electron-vite/bin/electron-vite.js', 'build', '--logLevel', 'warn']),
    // Both write the analyzer to out/cli/analyzer, so one after the other. postject warns about
    // every ELF note it does not know; only a failure is worth showing.
    node('building the CLI', ['scripts/build-cli.mjs']).then(() => node('building the agent', ['scripts/build-agent.mjs', '--linux-only'], true))
  ])
}
