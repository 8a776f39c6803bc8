import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type AddressInfo, type Server } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { ProcMonitor } from './proc-monitor.js'

const started: ChildProcess[] = []
const servers: Server[] = []
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

function start(script: string): ChildProcess {
  const child = spawn('sh', ['-c', script], { stdio: 'ignore', detached: true })
  started.push(child)
  return child
}

afterEach(() => {
  for (const s of servers.splice(0)) s.close()
  for (const c of started.splice(0)) {
    try {
      process.kill(-(c.pid ?? 0), 'SIGKILL')
    } catch {
      // gone
    }
  }
})

describe('ProcMonitor', () => {
  it('follows the tree as it grows, and only the tree', async () => {
    const other = start('exec sleep 30')
    // The root forks its children only after the first polls, so they are pids those polls did not list.
    const root = start('sleep 0.4; sleep 31 & sh -c "exec sleep 32" & wait')
    const m = new ProcMonitor(root.pid!, false, 50)
    m.start() // polls once at once
    const before = m.processes().map((p) => p.command_line)
    expect(before).not.toContain('sleep 31')
    let cmds: string[] = []
    for (let i = 0; i < 40 && !(cmds.includes('sleep 31') && cmds.includes('sleep 32')); i++) {
      await sleep(50)
      cmds = m.processes().map((p) => p.command_line)
    }
    m.stop()
    expect(cmds).toContain('sleep 31')
    expect(cmds).toContain('sleep 32') // its sh exec'ed it, maybe after the poll that took the sh
    expect(m.processes().map((p) => p.pid)).not.toContain(other.pid)
    for (const p of m.processes()) if (p.pid !== root.pid) expect(p.ppid).toBe(root.pid)
  })

  it('keeps a child whose parent exits, and marks what ended', async () => {
    const root = start('sleep 0.3; (sleep 0.6; exec sleep 33) & sleep 0.3')
    const m = new ProcMonitor(root.pid!, false, 50)
    m.start()
    let seen: string[] = []
    for (let i = 0; i < 60 && !seen.includes('sleep 33'); i++) {
      await sleep(50)
      seen = m.processes().map((p) => p.command_line)
    }
    m.stop()
    expect(seen, JSON.stringify(m.processes())).toContain('sleep 33') // exec'ed after its parent, the root, had exited
    const rec = m.processes()
    expect(rec.find((p) => p.pid === root.pid)?.exited).not.toBeNull()
    expect(rec.find((p) => p.command_line === 'sleep 33')?.exited).toBeNull()
    expect(m.alive()).not.toContain(root.pid)
  })

  it('records a tracked process\'s connections, one that connects late too, and reads the socket tables only when they can say something new', async () => {
    const server = createServer((c) => c.on('error', () => undefined)).listen(0, '127.0.0.1')
    servers.push(server)
    await new Promise((r) => server.once('listening', r))
    const port = (server.address() as AddressInfo).port
    // One socket connected at once and held; a second made at once but connected only after 0.6 s.
    const root = start(`exec python3 -c "
import socket, time
a = socket.create_connection(('127.0.0.1', ${port}))
b = socket.socket()
time.sleep(0.6)
b.connect(('127.0.0.1', ${port}))
time.sleep(3)
"`)
    const m = new ProcMonitor(root.pid!, false, 50)
    m.start()
    let conns: (number | null)[] = []
    for (let i = 0; i < 80 && conns.length < 2; i++) {
      await sleep(50)
      conns = m.connectionRecords().filter((c) => c.dport === port && c.pid === root.pid).map((c) => c.sport)
    }
    const reads = m.socketTableReads
    await sleep(1200) // both settled: the tables are not read again however long they stay open
    const later = m.socketTableReads
    m.stop()
    expect(new Set(conns).size, JSON.stringify(m.connectionRecords())).toBe(2)
    // Under the old rule (every poll): one read per 50 ms poll while the sockets were open.
    expect(reads).toBeLessThanOrEqual(4)
    expect(later).toBe(reads)
  })
})
