// What the Linux image holds beyond Debian's packages, as the scripts mmdebstrap runs while it
// builds (hooks, run as root of the image being built, `$1` its root), and the kernel command line
// each machine boots with. Nothing here names Aviary: samples read file names, unit names, the
// hostname and the command line (docs/engine.md, "What the sample can see").
//
//  - the agent: Aviary's single-executable agent at /usr/local/sbin/<name>, started at boot by
//    <name>.service as root, `Delegate=yes` (it keeps each analysis in a cgroup below its own),
//    restarted if it dies, with the environment of a root login rather than a service's (no
//    INVOCATION_ID, JOURNAL_STREAM or SYSTEMD_EXEC_PID, which would say "a service" to every sample);
//  - the network: systemd-networkd, configured by systemd-network-generator from the `ip=` of the
//    kernel command line (`ip=<guest>::<host>:<netmask>::eth0:off`, with net.ifnames=0), so that
//    one image serves every machine and each machine's address is in its domain, not its disk;
//    DNS at a public resolver (the `internet` and VPN routes reach it; `inetsim` answers every
//    query whatever its address; `none` reaches nothing);
//  - quiet: every systemd timer masked (apt-daily, apt-daily-upgrade, dpkg-db-backup, fstrim,
//    systemd-tmpfiles-clean, and whatever a package adds), so nothing of the image's own runs
//    during an analysis; the journal in memory only; no firewall (none is installed);
//  - a small initramfs (virtio_pci and virtio_blk only: MODULES=list), which takes ~5 s to make
//    instead of ~110 s for MODULES=most, twice, and boots faster under TCG.

/** How the agent is installed in the guest. */
export interface GuestAgentSpec {
  /** Its file name in /usr/local/sbin and its unit's name: neutral (default `guestd`). */
  name: string
  port: number
}

export const AGENT_DIR = '/usr/local/sbin'

export function agentGuestPath(a: GuestAgentSpec): string {
  return `${AGENT_DIR}/${a.name}`
}

/** The systemd unit that starts the agent at boot. */
export function agentUnit(a: GuestAgentSpec): string {
  return `[Unit]
Description=Guest services daemon
After=local-fs.target

[Service]
ExecStart=${agentGuestPath(a)} -H 0.0.0.0 -p ${a.port}
Delegate=yes
Restart=always
RestartSec=1
Environment=HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8
UnsetEnvironment=INVOCATION_ID JOURNAL_STREAM SYSTEMD_EXEC_PID
WorkingDirectory=/root

[Install]
WantedBy=multi-user.target
`
}

/** Runs before the kernel is installed (an essential hook): a small initramfs for our domain's virtio disk. */
export function initramfsHook(): string {
  return `set -eu
mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"
echo 'MODULES=list' > "$1/etc/initramfs-tools/conf.d/modules.conf"
printf 'virtio_pci\\nvirtio_blk\\n' > "$1/usr/share/initramfs-tools/modules.d/virtio"
`
}

const shQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`

/**
 * Runs after every package is installed (a customize hook; the agent was uploaded just before):
 * the unit, the network, DNS, the quiet, and what the host takes out of the image (the kernel,
 * the initrd and the package list, copied to /tmp where `download` hooks fetch them).
 */
export function customizeHook(a: GuestAgentSpec, dns: string): string {
  const unit = `${a.name}.service`
  return `set -eu
r="$1"
chmod 0755 "$r${agentGuestPath(a)}"
cat > "$r/etc/systemd/system/${unit}" <<'UNIT'
${agentUnit(a)}UNIT
chroot "$r" systemctl enable ${shQuote(unit)} systemd-networkd.service systemd-network-generator.service
printf 'nameserver %s\\n' ${shQuote(dns)} > "$r/etc/resolv.conf"
mkdir -p "$r/etc/systemd/journald.conf.d"
printf '[Journal]\\nStorage=volatile\\n' > "$r/etc/systemd/journald.conf.d/volatile.conf"
for t in "$r"/usr/lib/systemd/system/*.timer "$r"/etc/systemd/system/*.timer "$r"/etc/systemd/system/*/*.timer; do
  [ -e "$t" ] || [ -L "$t" ] || continue
  n=$(basename "$t")
  rm -f "$r/etc/systemd/system/timers.target.wants/$n"
  ln -sf /dev/null "$r/etc/systemd/system/$n"
done
cp -L "$r/vmlinuz" "$r/tmp/vmlinuz"
cp -L "$r/initrd.img" "$r/tmp/initrd.img"
chroot "$r" dpkg-query -W -f '\${Package} \${Version}\\n' > "$r/tmp/packages.txt"
`
}

export interface GuestAddress {
  ip: string
  gateway: string
  prefix: number
}

export function netmask(prefix: number): string {
  const n = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.')
}

/**
 * The kernel command line of one machine: its root disk, the consoles (the serial one last, so
 * that it is /dev/console and systemd's messages land in the serial log; tty0 is what VNC shows),
 * the interface name and its address (systemd-network-generator reads `ip=`).
 */
export function kernelCmdline(addr: GuestAddress): string {
  return `root=/dev/vda rw console=tty0 console=ttyS0 net.ifnames=0 ip=${addr.ip}::${addr.gateway}:${netmask(addr.prefix)}::eth0:off`
}
