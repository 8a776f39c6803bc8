// Entry point of the in-guest analyzer (bundled by scripts/build-agent.mjs into analyzer.cjs).
// The host starts it through the agent with the analyzer folder as working directory, via
// Aviary's /execnode, or via `node analyzer.cjs` on /execute under a third-party agent, so it uses
// Node built-ins only and finds analysis.conf next to itself. Like Cuckoo's analyzer it reports
// the end to the agent with POST /status: complete; failed when the sample did not start (the
// OS's reason as the description); exception with the error when the analyzer itself failed.
// Descriptions carry this run's tag (src/guest-protocol/run-identity.ts).
import { request } from 'node:http'
import { join } from 'node:path'
import { AGENT_PORT, ROUTES, type FinalStatus } from '../../guest-protocol/agent-api.js'
import { tagDescription } from '../../guest-protocol/run-identity.js'
import { runAnalysis } from './analysis.js'
import { readConfig, type AnalysisConfig } from './config.js'
import { NetlogLog } from './netlog.js'

function postStatus(port: number, run: string | null, status: FinalStatus, text: string): Promise<void> {
  const description = run === null ? text : tagDescription(run, text)
  const body = new URLSearchParams({ status, description }).toString()
  return new Promise((done) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: ROUTES.status,
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body) }
      },
      (res) => {
        res.resume()
        res.on('end', () => done())
      }
    )
    req.setTimeout(10_000, () => req.destroy())
    req.on('error', () => done())
    req.end(body)
  })
}

/** Names the analyzer folder when the bundle runs from elsewhere (a test); never passed on. */
const DIR_ENV = 'AVIARY_ANALYZER_DIR'

/**
 * The sample's environment: the analyzer's own as it started, which is the agent's own (the agent
 * adds nothing), without the one variable the analyzer reads. Windows names ignore case.
 */
function sampleEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => k.toUpperCase() !== DIR_ENV))
}

async function main(): Promise<void> {
  const sampleEnv = sampleEnvironment()
  const dir = process.env[DIR_ENV] ?? __dirname
  const echo = (line: string): void => console.log(line)
  let conf: AnalysisConfig
  try {
    conf = readConfig(join(dir, 'analysis.conf'))
  } catch (err) {
    await postStatus(AGENT_PORT, null, 'exception', `cannot read analysis.conf: ${(err as Error).message}`)
    process.exitCode = 1
    return
  }
  const agentPort = Number.parseInt(conf.options.get('agent_port') ?? String(AGENT_PORT), 10) || AGENT_PORT
  const log = new NetlogLog(conf, echo)
  await log.start()
  log.info(`Aviary analyzer starting: task ${conf.id}, category ${conf.category}, timeout ${conf.timeout}s`)
  try {
    const record = await runAnalysis(conf, log, dir, sampleEnv)
    log.info(`analysis finished (${record.reason})`)
    await log.close()
    if (record.reason === 'start-failed') await postStatus(agentPort, conf.run, 'failed', `the sample did not start: ${record.error ?? 'no reason given'}`)
    else await postStatus(agentPort, conf.run, 'complete', 'True')
  } catch (err) {
    const text = err instanceof Error ? (err.stack ?? err.message) : String(err)
    log.error(`analysis failed: ${text}`)
    await log.close()
    await postStatus(agentPort, conf.run, 'exception', text)
    process.exitCode = 1
  }
}

void main()
