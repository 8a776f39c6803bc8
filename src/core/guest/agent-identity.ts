// Telling agents apart, and reaching one: GET / identifies Cuckoo's, CAPE's and Aviary's agents
// (Cuckoo 2.0.7's cuckoo/core/guest.py, start_analysis) and refuses the old XML-RPC agent and anything that is not an agent;
// a plain TCP connect says whether something listens yet (Cuckoo's wait_available).
import net from 'node:net'
import { ROUTES } from '../../guest-protocol/agent-api'
import { agentRequest, describeSocketError, jsonObject, type AgentResponse } from './agent-http'

export interface AgentInfo { kind: string; version: string | null; features: string[] }

export function abortError(what: string): Error {
  const e = new Error(`${what}: interrupted`)
  e.name = 'AbortError'
  return e
}

/** GET / answered, but not as a Cuckoo-compatible agent does. */
export class NotAnAgent extends Error {}

/** Tells the agents apart from GET / (as Cuckoo's guest.py does). Throws NotAnAgent for the XML-RPC agent and for non-agents. */
export function identify(ip: string, port: number, res: AgentResponse): AgentInfo {
  if (res.status === 501) {
    throw new NotAnAgent(`the agent on ${ip}:${port} is Cuckoo's old XML-RPC agent (Cuckoo 1.x / 2.0-rc), which Aviary does not ` +
      'support: install the agent.py of Cuckoo 2.0.x (or Aviary\'s agent) in the guest and take the snapshot again')
  }
  const j = jsonObject(res.body)
  if (res.status !== 200 || !j) {
    throw new NotAnAgent(`what answers on ${ip}:${port} is not a Cuckoo-compatible agent (GET / gave HTTP ${res.status}` +
      `${j ? '' : ', not JSON'})`)
  }
  const words = `${typeof j.message === 'string' ? j.message : ''} ${String(res.headers.server ?? '')}`
  const kind = /aviary/i.test(words) ? 'aviary' : /cape/i.test(words) ? 'cape' : /cuckoo/i.test(words) ? 'cuckoo' : 'unknown'
  const features = Array.isArray(j.features) ? j.features.filter((f): f is string => typeof f === 'string') : []
  return { kind, version: typeof j.version === 'string' ? j.version : null, features }
}

/** GET / once: which agent answers on ip:port. Throws with a clear message when none (or the old one) does. */
export async function probeAgent(ip: string, port: number, timeoutMs: number): Promise<AgentInfo> {
  const res = await agentRequest({ ip, port, method: 'GET', path: ROUTES.root, timeoutMs, deadlineMs: timeoutMs, step: 'asking the agent what it is' })
  return identify(ip, port, res)
}

export function tcpConnect(ip: string, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: ip, port })
    const t = setTimeout(() => {
      s.destroy()
      reject(new Error('connect timed out'))
    }, timeoutMs)
    s.once('connect', () => {
      clearTimeout(t)
      s.destroy()
      resolve()
    })
    s.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(t)
      reject(new Error(describeSocketError(err)))
    })
  })
}
