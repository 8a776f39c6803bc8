// The physical driver through the machinery contract, against a real "machine": a network
// namespace `avmd` (veth 10.203.0.1/24 on the host, 10.203.0.2/24 inside) running a minimal
// Cuckoo-agent stand-in on port 8000, reached over the veth like a computer on the analysis LAN.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { driverContract } from './contract.suite'
import type { DriverMachine } from './driver'
import { MachineError } from './driver'
import { PhysicalDriver } from './physical'

const run = promisify(execFile)
const NS = 'avmd'
const HOST_IF = 'avmd-h'
const HOST_IP = '10.203.0.1'
const GUEST_IP = '10.203.0.2'

// Answers GET / like Cuckoo's agent 0.10 does; enough for "the agent port answers". /mark stands
// for what an analysis leaves in a machine: POST sets it, GET says whether it is there.
const AGENT = `let mark = false; require('node:http').createServer((q, s) => { s.setHeader('content-type', 'application/json');
  if (q.url === '/mark') { if (q.method === 'POST') mark = true; s.end(JSON.stringify({ mark })); return }
  s.end(JSON.stringify({ message: 'Cuckoo Agent!', version: '0.10', features: [] })) })
  .listen(8000, '0.0.0.0', () => console.log('listening'))`

async function removeNetns(): Promise<void> {
  await run('ip', ['netns', 'del', NS]).catch(() => undefined)
  await run('ip', ['link', 'del', HOST_IF]).catch(() => undefined)
}

async function createNetns(): Promise<void> {
  await removeNetns()
  await run('ip', ['netns', 'add', NS])
  await run('ip', ['link', 'add', HOST_IF, 'type', 'veth', 'peer', 'name', 'avmd-g', 'netns', NS])
  await run('ip', ['addr', 'add', `${HOST_IP}/24`, 'dev', HOST_IF])
  await run('ip', ['link', 'set', HOST_IF, 'up'])
  await run('ip', ['netns', 'exec', NS, 'ip', 'addr', 'add', `${GUEST_IP}/24`, 'dev', 'avmd-g'])
  await run('ip', ['netns', 'exec', NS, 'ip', 'link', 'set', 'avmd-g', 'up'])
  await run('ip', ['netns', 'exec', NS, 'ip', 'link', 'set', 'lo', 'up'])
}

/** Starts the stand-in agent inside the namespace; resolves once it listens. */
function startAgent(): Promise<ChildProcess> {
  const p = spawn('ip', ['netns', 'exec', NS, process.execPath, '-e', AGENT], { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    p.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('listening')) resolve(p)
    })
    p.once('exit', (code) => reject(new Error(`the stand-in agent exited ${code}`)))
  })
}

async function stopAgent(p: ChildProcess | null): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return
  const gone = new Promise((r) => p.once('exit', r))
  p.kill('SIGTERM')
  await gone
}

const MACHINE: DriverMachine = { name: 'physical1', label: 'physical1', ip: GUEST_IP, snapshot: null, platform: 'linux', interface: HOST_IF, options: [] }
let agent: ChildProcess | null = null

driverContract('physical (agent stand-in in netns avmd)', async () => {
  await createNetns()
  agent = await startAgent()
  return {
    driver: new PhysicalDriver({ vmStateSeconds: 3, connectTimeoutMs: 1000 }),
    machine: MACHINE,
    cleanup: async () => {
      await stopAgent(agent)
      await removeNetns()
    }
  }
}, {
  unknownMachine: { ...MACHINE, name: 'aviary-no-such-vm', label: 'aviary-no-such-vm', ip: '10.203.0.3' },
  afterStart: async (s) => {
    const res = await fetch(`http://${s.machine.ip}:8000/`)
    expect(((await res.json()) as { message: string }).message).toBe('Cuckoo Agent!')
  },
  mark: {
    leave: async (s) => { await fetch(`http://${s.machine.ip}:8000/mark`, { method: 'POST' }) },
    present: async (s) => ((await (await fetch(`http://${s.machine.ip}:8000/mark`)).json()) as { mark: boolean }).mark
  }
})

describe('physical driver specifics', () => {
  let agentProc: ChildProcess | null = null
  beforeAll(createNetns)
  afterAll(async () => {
    await stopAgent(agentProc)
    await removeNetns()
  })

  it('is poweroff while nothing listens, and start() waits for the agent to come up', async () => {
    const d = new PhysicalDriver({ vmStateSeconds: 20, connectTimeoutMs: 1000 })
    expect(await d.state(MACHINE)).toBe('poweroff')
    const started = d.start(MACHINE)
    let resolved = false
    void started.then(() => (resolved = true), () => undefined)
    await new Promise((r) => setTimeout(r, 1500))
    expect(resolved).toBe(false)
    agentProc = await startAgent()
    await started
    expect(await d.state(MACHINE)).toBe('running')
  })

  it('start() gives up after timeouts.vm_state with a MachineError naming the machine and address', async () => {
    await stopAgent(agentProc)
    const d = new PhysicalDriver({ vmStateSeconds: 1, connectTimeoutMs: 500 })
    await expect(d.start(MACHINE)).rejects.toThrow(MachineError)
    await expect(d.start(MACHINE)).rejects.toThrow(`the physical machine 'physical1' did not answer on ${GUEST_IP}:8000 within 1 s`)
  })

  it('honours an abort signal while waiting', async () => {
    const d = new PhysicalDriver({ vmStateSeconds: 30 })
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 300)
    await expect(d.start(MACHINE, ac.signal)).rejects.toThrow(/aborted/)
  })
})
