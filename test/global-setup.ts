// Builds the bundled CLI (with Aviary's analyzer), the renderer and the Linux agent executable once per test
// run, so tests that spawn `aviary`, start the hashing worker, upload the analyzer or boot a guest
// with the agent use the same artifacts as a user would.
import { execFileSync } from 'node:child_process'

export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-cli.mjs'], { stdio: 'inherit' })
  // The UI the service serves at / (the UI and Electron launch tests load it).
  execFileSync(process.execPath, ['node_modules/electron-vite/bin/electron-vite.js', 'build', '--logLevel', 'warn'], { stdio: 'inherit' })
  try {
    // postject warns about every ELF note it does not know; only a failure is worth showing.
    execFileSync(process.execPath, ['scripts/build-agent.mjs', '--linux-only'], { stdio: 'pipe' })
  } catch (err) {
    throw new Error(`building the agent failed: ${String((err as { stderr?: Buffer }).stderr ?? err)}`, { cause: err })
  }
}
