// The netns guest fixture itself: a process inside resolves a name through the fake DNS server and
// fetches a URL from the fake internet (both recorded), two guests at once keep their /tmp apart,
// an agent command is waited for, and close() leaves nothing behind.
import { execFile, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { alive, createNetnsGuest, type NetnsGuest } from './netns-guest'

const run = promisify(execFile)

/** Run a command in the guest to completion; stdout, or an error with stderr. */
function output(g: NetnsGuest, cmd: string[]): Promise<string> {
  const child = g.exec(cmd)
  return collect(child)
}

function collect(child: ChildProcess): Promise<string> {
  let out = ''
  let err = ''
  child.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  child.stderr?.on('data', (b: Buffer) => { err += b.toString() })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${err}`))))
  })
}

// A zombie (killed, not yet reaped by its parent shell) counts as gone.
const processAlive = alive

describe('netns guest', () => {
  let a: NetnsGuest
  let b: NetnsGuest

  beforeAll(async () => {
    a = await createNetnsGuest({ index: 11 })
    b = await createNetnsGuest({ index: 12 })
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
  })

  it('resolves names through the fake DNS server and fetches from the fake internet', async () => {
    const getent = await output(a, ['getent', 'hosts', 'example.com'])
    expect(getent).toContain(a.internetIp)
    expect(a.dns.queries).toContain('example.com')

    const script = `fetch('http://malware.example/x?y=1', { headers: { 'user-agent': 'aviary-test' } })
      .then((r) => r.text()).then((t) => process.stdout.write(t))`
    const body = await output(a, [process.execPath, '-e', script])
    expect(body).toBe('aviary fake internet\n')
    expect(a.dns.queries).toContain('malware.example')
    expect(a.http.requests).toContainEqual({ method: 'GET', url: '/x?y=1', host: 'malware.example', ua: 'aviary-test' })
    // The other guest's fake internet saw none of it.
    expect(b.dns.queries).not.toContain('malware.example')
    expect(b.http.requests).toEqual([])
  })

  it('gives each guest its own /tmp and its own resolv.conf', async () => {
    await output(a, ['sh', '-c', 'echo a > /tmp/mine'])
    await output(b, ['sh', '-c', 'echo b > /tmp/mine'])
    expect((await output(a, ['cat', '/tmp/mine'])).trim()).toBe('a')
    expect((await output(b, ['cat', '/tmp/mine'])).trim()).toBe('b')
    expect(readFileSync(`${a.tmpDir}/mine`, 'utf8').trim()).toBe('a')
    // The host's /tmp is untouched.
    expect(existsSync('/tmp/mine')).toBe(false)
    // /dev/shm and /var/tmp are the guest's own too, and empty: nothing of the host's shows there.
    writeFileSync('/var/tmp/aviary-host-only', 'x')
    try {
      await output(a, ['sh', '-c', 'echo a > /dev/shm/mine && echo a > /var/tmp/mine'])
      expect(await output(b, ['ls', '-A', '/dev/shm', '/var/tmp'])).not.toMatch(/mine|aviary-host-only/)
      expect(existsSync('/dev/shm/mine') || existsSync('/var/tmp/mine')).toBe(false)
    } finally {
      rmSync('/var/tmp/aviary-host-only', { force: true })
    }
    // So is the home folder, which the analyzer watches: what programs of the host write into
    // theirs meanwhile (Chromium's crash reporter, under ~/.config) is not the guest's, nor the other way.
    const hostOnly = path.join(homedir(), '.aviary-host-only')
    const guestOnly = path.join(homedir(), '.aviary-guest-only')
    rmSync(guestOnly, { force: true })
    writeFileSync(hostOnly, 'x')
    try {
      await output(a, ['sh', '-c', 'echo a > "$HOME/.aviary-guest-only"'])
      expect(await output(a, ['sh', '-c', 'ls -A "$HOME"'])).toBe('.aviary-guest-only\n')
      expect(await output(b, ['sh', '-c', 'ls -A "$HOME"'])).toBe('')
      expect(existsSync(guestOnly)).toBe(false)
    } finally {
      rmSync(hostOnly, { force: true })
      rmSync(guestOnly, { force: true })
    }
    expect(await output(b, ['cat', '/etc/resolv.conf'])).toContain(`nameserver ${b.internetIp}`)
    // And the network is the guest's own.
    expect(await output(b, ['ip', '-4', 'addr'])).toContain(b.guestIp)
  })

  it('starts an agent and waits until guestIp:8000 accepts; the host reaches it', async () => {
    const server = `require('http').createServer((q, s) => s.end('agent ' + q.socket.localAddress)).listen(8000, '0.0.0.0')`
    const agent = await a.startAgent([process.execPath, '-e', server])
    expect(agent.exitCode).toBeNull()
    const res = await fetch(`http://${a.guestIp}:8000/`)
    expect(await res.text()).toBe(`agent ${a.guestIp}`)
  })

  it('reports an agent that dies before listening, with its output', async () => {
    await expect(b.startAgent(['sh', '-c', 'echo broken agent >&2; exit 3'])).rejects.toThrow(/broken agent/)
  })

  it('removes a crashed run\'s leftovers first, and close() leaves nothing behind', async () => {
    // What a crashed run leaves: the namespace with a process in it, the veth, /etc/netns/<ns>.
    await run('ip', ['netns', 'add', 'avng13'])
    await run('ip', ['link', 'add', 'avng13h', 'type', 'veth', 'peer', 'name', 'avng13g'])
    await run('ip', ['link', 'set', 'avng13g', 'netns', 'avng13'])
    await run('mkdir', ['-p', '/etc/netns/avng13'])
    // ...and the copy of /etc an exec was making when it was killed.
    const copying = path.join(tmpdir(), 'aviary-netns', 'avng13-etc.4242')
    mkdirSync(path.join(copying, 'ssl'), { recursive: true })
    const { stdout: pid } = await run('sh', ['-c', 'ip netns exec avng13 sleep 600 >/dev/null 2>&1 & echo $!'])
    const d = await createNetnsGuest({ index: 13 })
    try {
      expect(d.ns).toBe('avng13')
      expect(processAlive(Number(pid))).toBe(false)
      d.exec(['sleep', '600'])
      expect(await output(d, ['getent', 'hosts', 'leftover.test'])).toContain(d.internetIp)
    } finally {
      await d.close()
    }
    const { stdout } = await run('ip', ['netns', 'list'])
    expect(stdout.split('\n').some((l) => l.split(' ')[0] === d.ns)).toBe(false)
    await expect(run('ip', ['link', 'show', d.hostIf])).rejects.toThrow()
    expect(existsSync(`/etc/netns/${d.ns}`)).toBe(false)
    expect(existsSync(d.tmpDir)).toBe(false)
    expect(d.tmpDir).toBe(path.join(tmpdir(), 'aviary-netns', 'avng13'))
    expect(readdirSync(path.dirname(d.tmpDir)).filter((f) => f.startsWith('avng13'))).toEqual([])
  })
})
