// What the Linux image is told to hold, checked without building it (test/e2e/linux-machines.test.ts
// builds and boots it): nothing in the guest names Aviary, the package cache is used offline once
// it has lists, paths reach mmdebstrap quoted, and each machine's address is on its command line.
import { describe, expect, it } from 'vitest'
import { DEFAULT_IMAGE, debvmArgs, type DebianImageSpec } from './debian-image'
import { agentUnit, customizeHook, initramfsHook, kernelCmdline, netmask } from './linux-guest'

const spec: DebianImageSpec = { ...DEFAULT_IMAGE, agentFile: "/home/an o'ne/out/agent/aviary-agent-linux-x64" }

describe('the Linux image', () => {
  it('names nothing of Aviary in what it writes into the guest', () => {
    const guest = [agentUnit(spec.agent), customizeHook(spec.agent, spec.dns), initramfsHook(), kernelCmdline({ ip: '10.80.0.101', gateway: '10.80.0.1', prefix: 24 }), spec.hostname]
    for (const text of guest) expect(text).not.toMatch(/aviary|cuckoo|sandbox/i)
    // The agent's host path names Aviary; its guest path does not.
    const upload = debvmArgs(spec, { raw: '/w/r.ext4', work: '/w', cache: '/c', offline: true }).find((a) => a.startsWith('--customize-hook=upload'))
    expect(upload).toBe(`--customize-hook=upload '/home/an o'\\''ne/out/agent/aviary-agent-linux-x64' '/usr/local/sbin/guestd'`)
  })

  it('starts the agent as a root login would have it, without the variables that say "a service"', () => {
    const unit = agentUnit({ name: 'guestd', port: 8000 })
    expect(unit).toMatch(/^ExecStart=\/usr\/local\/sbin\/guestd -H 0\.0\.0\.0 -p 8000$/m)
    expect(unit).toMatch(/^Delegate=yes$/m)
    expect(unit).toMatch(/^UnsetEnvironment=INVOCATION_ID JOURNAL_STREAM SYSTEMD_EXEC_PID$/m)
  })

  it('uses the cached package lists offline (no apt update), and fetches and keeps them otherwise', () => {
    const off = debvmArgs(spec, { raw: '/w/r.ext4', work: '/w', cache: '/c', offline: true })
    expect(off).toContain('--skip=update')
    expect(off).toContain("--setup-hook=sync-in '/c/lists' /var/lib/apt/lists/")
    expect(off).not.toContain("--customize-hook=sync-out /var/lib/apt/lists '/c/lists'")
    const on = debvmArgs(spec, { raw: '/w/r.ext4', work: '/w', cache: '/c', offline: false })
    expect(on).not.toContain('--skip=update')
    expect(on).toContain("--customize-hook=sync-out /var/lib/apt/lists '/c/lists'")
    for (const a of [off, on]) {
      expect(a).toContain("--setup-hook=sync-in '/c/archives' /var/cache/apt/archives/")
      expect(a).toContain("--customize-hook=sync-out /var/cache/apt/archives '/c/archives'")
      expect(a.slice(-3)).toEqual(['deb http://deb.debian.org/debian bookworm main', 'deb http://deb.debian.org/debian bookworm-updates main',
        'deb http://deb.debian.org/debian-security bookworm-security main'])
    }
  })

  it("gives each machine its address on the kernel's command line", () => {
    expect(kernelCmdline({ ip: '10.216.0.101', gateway: '10.216.0.1', prefix: 24 })).toBe(
      'root=/dev/vda rw console=tty0 console=ttyS0 net.ifnames=0 ip=10.216.0.101::10.216.0.1:255.255.255.0::eth0:off')
    expect([netmask(16), netmask(28), netmask(30)]).toEqual(['255.255.0.0', '255.255.255.240', '255.255.255.252'])
  })
})
