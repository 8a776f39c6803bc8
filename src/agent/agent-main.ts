// Entry point of the single-executable agent (scripts/build-agent.mjs bundles this file). Two
// roles, told apart by the first argument, as node does: a script (any first argument that is not
// an option) is run with the embedded runtime and the remaining arguments, which is how /execnode
// starts the analyzer (exec.ts nodeInvocation); otherwise it parses `-H/--host` (default 0.0.0.0)
// and `-p/--port` (default AGENT_PORT, 8000) and runs the agent. The role is in the arguments, not in an
// environment variable, because the analyzer passes its environment on to the sample, and the
// sample must find nothing there that the agent added. A SEA always runs its embedded main, and
// its own `require` only knows built-ins, so the script is loaded through module.createRequire.
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { runAgent } from './agent.js'
import { AGENT_PORT } from '../guest-protocol/agent-api.js'

function runScript(file: string, args: string[]): void {
  const script = resolve(file)
  process.argv = [process.execPath, script, ...args]
  createRequire(script)(script)
}

async function main(): Promise<void> {
  // A single executable's argv[1] is the executable again (so that argv.slice(2) holds the
  // arguments, as under node).
  const argv = process.argv.slice(2)
  const first = argv[0]
  if (first !== undefined && first !== '' && !first.startsWith('-')) {
    runScript(first, argv.slice(1))
    return
  }
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string', short: 'H', default: '0.0.0.0' },
      port: { type: 'string', short: 'p', default: String(AGENT_PORT) }
    },
    allowPositionals: true
  })
  const port = Number.parseInt(values.port ?? String(AGENT_PORT), 10)
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
