// `aviary setup`, the one root command of the machine builder: what it would do (--print, as the
// README gives it), the exact commands, and the refusals (a bad flag named, not root).
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { Libvirt } from './libvirt-host'
import { ensureGuestNetwork, guestNetwork } from './setup'

const run = promisify(execFile)
const CLI = path.resolve('bin/aviary.js')

describe('aviary setup', () => {
  it("prints every step: the network, the rooter with it as a guest network, libvirt-qemu's way into the data folder, tcpdump", async () => {
    const { stdout } = await run(process.execPath, [CLI, 'setup', '--user', 'root', '--print', '--network', 'avlx', '--subnet', '10.216.0.0/24', '--data', '/srv/av lx/data'])
    expect(stdout).toContain("<forward mode='open'/>")
    expect(stdout).toContain("<bridge name='avlx-br0' stp='off' delay='0'/>")
    expect(stdout).toContain("<ip address='10.216.0.1' prefix='24'/>")
    expect(stdout).toMatch(/rooter install (--guest-network \S+ )*--guest-network 10\.216\.0\.0\/24 .*--user root/)
    // /srv is open to all (0755); what does not exist yet gets the entry
    expect(stdout).not.toMatch(/^ {3}setfacl --modify user:libvirt-qemu:x \/srv$/m)
    expect(stdout).toMatch(/^ {3}setfacl --modify user:libvirt-qemu:x \/srv\/av lx$/m)
    expect(stdout).toMatch(/^ {3}setfacl --modify user:libvirt-qemu:x \/srv\/av lx\/data\/machines$/m)
    expect(stdout).toMatch(/^ {3}setcap cap_net_raw,cap_net_admin=eip \S*tcpdump$/m)
    // root needs no groups and no subordinate ids
    expect(stdout).not.toMatch(/usermod/)
  })

  it('as the README gives it (with --print), for the user of this test', async () => {
    const readme = readFileSync('README.md', 'utf8')
    const line = /^sudo node bin\/aviary\.js setup [^\n]*$/m.exec(readme)?.[0]
    expect(line).toBeDefined()
    // Its words, as a shell would split them, without its comment and with --print added: never
    // through a shell (a comment once swallowed the --print, and the setup ran for real).
    const words = line!.replace(/\s+#.*$/, '').split(/\s+/).slice(1).map((w) => (w === '"$USER"' ? 'nobody' : w))
    expect(words.slice(0, 3)).toEqual(['node', 'bin/aviary.js', 'setup'])
    expect(words.every((w) => /^[\w./-]+$/.test(w)), words.join(' ')).toBe(true)
    const { stdout } = await run(process.execPath, [...words.slice(1), '--print'])
    expect(stdout).toMatch(/nobody joins group libvirt\n {3}usermod --append --groups libvirt nobody/)
    expect(stdout).toContain('--guest-network 10.80.0.0/24')
  })

  it('names the bad flag, and refuses to change anything unless root', async () => {
    const fail = (args: string[], as: string[] = []): Promise<string> => run(as[0] ?? process.execPath, [...as.slice(1), ...(as.length ? [process.execPath] : []), CLI, 'setup', ...args])
      .then(() => { throw new Error('should fail') }, (e: { stderr: string }) => e.stderr)
    expect(await fail(['--user', 'root', '--print', '--subnet', '10.0.0.0/8'])).toMatch(/^aviary: --subnet: "10\.0\.0\.0\/8" is not an IPv4 network from \/16 to \/28/)
    expect(await fail(['--user', 'no-such-user-here', '--print'])).toMatch(/^aviary: --user: there is no user 'no-such-user-here'/)
    expect(await fail(['--user', 'root', '--print', '--network', 'Bad'])).toMatch(/^aviary: --network: /)
    expect(await fail(['--user', 'nobody'], ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'])).toMatch(/run it as root \(sudo\), or with --print/)
  })

  it('derives the bridge and the host address from the network', () => {
    expect(guestNetwork('aviary', '10.80.0.7/24')).toEqual({ name: 'aviary', bridge: 'aviary-br0', hostIp: '10.80.0.1', prefix: 24, cidr: '10.80.0.0/24' })
  })

  it("makes libvirt's MAC folder with the network: libvirt makes it only for networks with dnsmasq", async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'aviary-setup-test-'))
    // The system daemon, with a network of this file's own (name, bridge and subnet used nowhere else).
    const lv = new Libvirt('qemu:///system')
    const net = guestNetwork('avsu', '10.231.0.0/24')
    try {
      const macDir = path.join(tmp, 'dnsmasq')
      expect(await ensureGuestNetwork(lv, net, macDir)).toBe('made')
      expect(await lv.netActive(net.name)).toBe(true)
      expect(statSync(macDir).isDirectory()).toBe(true)
      expect(statSync(macDir).mode & 0o777).toBe(0o755)
      // Only where asked: without a folder to look after, it touches none.
      rmSync(macDir, { recursive: true })
      expect(await ensureGuestNetwork(lv, net, null)).toBe('there')
      expect(existsSync(macDir)).toBe(false)
    } finally {
      await lv.run(['net-destroy', net.name], 'stopping the test network').catch(() => undefined)
      await lv.run(['net-undefine', net.name], 'removing the test network').catch(() => undefined)
      rmSync(tmp, { recursive: true, force: true })
    }
  })
})
