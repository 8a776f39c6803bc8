// Entry point of the single-executable agent (scripts/build-agent.mjs bundles this file). Two
// roles: normally it parses `-H/--host` (default 0.0.0.0) and `-p/--port` (default 8000) and runs
// the agent; when started by /execnode with AVIARY_AGENT_RUN_SCRIPT set, it is a plain Node
// runtime instead and loads that script. A SEA always runs its embedded main, and its own
// `require` only knows built-ins, so the script is loaded through module.createRequire.
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { runAgent } from './agent.js'
import { RUN_ARGS_ENV, RUN_SCRIPT_ENV } from './exec.js'

function runScript(file: string): void {
  const script = resolve(file)
  let args: string[] = []
  try {
    const parsed: unknown = JSON.parse(process.env[RUN_ARGS_ENV] ?? '[]')
    if (Array.isArray(parsed)) args = parsed.map(String)
  } catch {
    // no arguments
  }
  delete process.env[RUN_SCRIPT_ENV]
  delete process.env[RUN_ARGS_ENV]
  process.argv = [process.execPath, script, ...args]
  createRequire(script)(script)
}

async function main(): Promise<void> {
  const script = process.env[RUN_SCRIPT_ENV]
  if (script !== undefined && script !== '') {
    runScript(script)
    return
  }
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== process.execPath),
    options: {
      host: { type: 'string', short: 'H', default: '0.0.0.0' },
      port: { type: 'string', short: 'p', default: '8000' }
    },
    allowPositionals: true
  })
  const port = Number.parseInt(values.port ?? '8000', 10)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port: ${values.port}`)
  const agent = await runAgent({ host: values.host ?? '0.0.0.0', port, log: (m) => console.log(m) })
  const stop = (): void => void agent.close().then(() => process.exit(0))
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err))
  process.exit(1)
})
