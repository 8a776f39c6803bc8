// Builds the bundled CLI and worker once per test run, so tests that spawn `aviary` or start
// the hashing worker use the same artifacts as a user would.
import { execFileSync } from 'node:child_process'

export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-cli.mjs'], { stdio: 'inherit' })
}
