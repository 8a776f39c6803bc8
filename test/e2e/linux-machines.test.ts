// `aviary machines create linux` with real parts (test/guests/avlx-lab.ts): the builder service
// makes two Debian machines under libvirt/QEMU (TCG) from Debian's packages (cached in
// out/linux-guest/, so reruns do not download or rebuild), as overlays of one image, each booted,
// snapshotted and registered; a second create of the same name is refused, and one that fails
// midway removes what it made. Then the real service runs a file task end to end on one machine
// through the API (every stage of the timeline, a process tree, a pcap without the agent's own
// traffic, a screenshot with its thumbnail, a memory dump, the dropped file, the machine off
// afterwards: test/e2e/kvm-analysis.test.ts checked the same on the small test guest, and was
// folded in here so the suite runs one such task under TCG instead of two), and the
// other machine, on route `none` with the rooter as its network's only firewall, reaches nothing:
// judged by what the upstream and the host's own listener received, after the same probe, run on
// the same machine before the rooter started, reached both. Last, prepare mode (`aviary machines
// prepare NAME`, then --keep or --discard) on the first machine, through the command a user types:
// a file written in the guest through its agent survives keep (the next prepare reverts to the
// kept snapshot and finds it); a second file is gone after discard, the first still there. (It had
// a file and a third machine of its own; on the machines made here it costs no build and no boot.)
// Timings are printed, never asserted.
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { networkInterfaces } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLayout } from '../../src/core/storage/layout'
import { MachineBuilds, type BuildJob } from '../../src/core/builder/machine-builds'
import { LINUX_STEPS } from '../../src/core/builder/build-progress'
import { createAvlxLab, LISTEN_PORT, NETWORK, UPSTREAM_IP, URI, type AvlxLab } from '../guests/avlx-lab'
import { head } from '../guests/kvm-guest'
import { startHarness, type Harness } from '../service-harness'
import { stages, submitFile, waitForTask } from './e2e-helpers'

const run = promisify(execFile)
const AGENT = path.resolve('out/agent/aviary-agent-linux-x64')
const CLI = path.resolve('bin/aviary.js')
const FINAL = ['reported', 'failed_analysis', 'failed_processing']
const times: Record<string, number> = {}

/** The host's IPv4 addresses outside the lab (its LAN, say): a guest must reach none of them. */
const otherHostIps = (): string[] => Object.values(networkInterfaces()).flat()
  .filter((a) => a?.family === 'IPv4' && !a.internal && !a.address.startsWith('10.216.') && !a.address.startsWith('10.217.')).map((a) => a!.address)

/**
 * A bash sample that tries every way out it knows, and writes what it saw to /tmp/probe-<tag>.txt.
 * The tries run side by side (each appends one short line), so a guest that reaches nothing
 * spends one time limit, not the sum of them; those with the extra address run after it is taken.
 * A try that ends on its own (wget gives up after 3 s, ping after 2) gets 25 s, a bash connect
 * that would hang 10 s: started all at once under strace on one TCG vCPU, wget and ping have
 * taken over 10 s to start, and were ended before they sent anything.
 */
function prober(tag: string): string {
  const hosts = [NETWORK.hostIp, ...otherHostIps()]
  return `#!/bin/bash
r=/tmp/probe-${tag}.txt
: > "$r"
try() { local t=$1; shift; if timeout "$t" "$@" >/dev/null 2>&1; then echo "REACHED $*" >> "$r"; else echo "blocked $*" >> "$r"; fi; }
for h in ${hosts.join(' ')}; do
  try 10 bash -c "exec 3<>/dev/tcp/$h/${LISTEN_PORT}" &
  try 10 bash -c "echo probe-${tag} > /dev/udp/$h/${LISTEN_PORT + 1}; sleep 0.3" &
  try 25 ping -c1 -W2 "$h" &
done
try 25 wget -q -T 3 -t 1 -O /dev/null http://${UPSTREAM_IP}/c-${tag} &
try 10 bash -c "echo probe-${tag} > /dev/udp/${UPSTREAM_IP}/7; sleep 0.3" &
try 25 ping -c1 -W2 ${UPSTREAM_IP} &
wait
# Another address of the guest's own network, as root in its VM may take one.
ip addr add 10.216.0.222/24 dev eth0
try 25 wget -q -T 3 -t 1 --bind-address=10.216.0.222 -O /dev/null http://${UPSTREAM_IP}/c-${tag}-spoofed &
try 10 bash -c "exec 3<>/dev/tcp/${NETWORK.hostIp}/${LISTEN_PORT}" &
wait
ip addr del 10.216.0.222/24 dev eth0
exit 0
`
}

/** A URL the sample holds (a shell variable) and never uses: it reaches memory, not the wire. */
const PLANTED = `http://planted-${Math.random().toString(36).slice(2, 10)}.net/cfg`
const SAMPLE = `#!/bin/sh
echo written-in-the-vm > /tmp/vm-dropped.txt
CFG='${PLANTED}'
sh -c 'sleep 1; echo child' &
ping -c 1 -W 1 ${UPSTREAM_IP} || true
wait
`

/** Runs `command` in a machine through its agent (Cuckoo's /execute), as the builder's settle step does. */
async function inGuest(ip: string, command: string): Promise<string> {
  // Long enough for a TCG guest that shares two cores with three other test files.
  const res = await fetch(`http://${ip}:8000/execute`, { method: 'POST', body: new URLSearchParams({ command, shell: '1' }), signal: AbortSignal.timeout(280_000) })
  return ((await res.json()) as { stdout?: string }).stdout ?? ''
}

/**
 * What the guest and the host say of a machine's link, for a failure's message: a probe that
 * reached nothing once in CI (a fresh clone, run one file at a time) and never here, so the next
 * time says whether the guest sent, the host saw, and what either had for the other's address.
 */
async function linkState(m: { ip: string; tap: string }): Promise<string> {
  const guest = await inGuest(m.ip, 'cat /proc/uptime; date -u; ip -s link show eth0; ip -br addr; ip route; ip neigh').catch((e: Error) => `(the agent: ${e.message})`)
  const host = await Promise.all([
    ['ip', '-s', 'link', 'show', m.tap], ['ip', '-br', 'link', 'show', 'master', NETWORK.bridge], ['ip', 'neigh', 'show', 'dev', NETWORK.bridge],
    ['bridge', 'fdb', 'show', 'br', NETWORK.bridge], ['sysctl', `net.ipv4.conf.${NETWORK.bridge}.forwarding`, 'net.ipv4.conf.all.rp_filter', 'net.ipv4.ip_forward'], ['nft', 'list', 'tables']
  ].map(([cmd, ...args]) => run(cmd!, args).then((r) => `$ ${[cmd, ...args].join(' ')}\n${r.stdout}`, (e: Error) => `$ ${cmd}: ${e.message}`)))
  return `in the guest:\n${guest}\non the host:\n${host.join('')}`
}

const MARK1 = '/root/kept-marker.txt'
const MARK2 = '/root/discarded-marker.txt'

/** The agent's answer to `command` (POST /execute), once it answers at all (after a revert the guest's link may take a moment). */
async function inGuestAfterRevert(ip: string, command: string): Promise<string> {
  const until = Date.now() + 180_000
  for (;;) {
    try {
      const res = await fetch(`http://${ip}:8000/execute`, { method: 'POST', body: new URLSearchParams({ command, shell: '1' }), signal: AbortSignal.timeout(60_000) })
      if (res.status !== 200) throw new Error(`/execute answered ${res.status}: ${await res.text()}`)
      return ((await res.json()) as { stdout?: string }).stdout ?? ''
    } catch (err) {
      if (Date.now() > until) throw err
      await new Promise((r) => setTimeout(r, 2000))
    }
  }
}

/** Stores `text` at `filepath` in the guest as the host stores an analysis' files (POST /store). */
async function store(ip: string, filepath: string, text: string): Promise<void> {
  const form = new FormData()
  form.set('filepath', filepath)
  form.set('file', new Blob([text]), path.basename(filepath))
  const res = await fetch(`http://${ip}:8000/store`, { method: 'POST', body: form, signal: AbortSignal.timeout(60_000) })
  expect(res.status, await res.clone().text()).toBe(200)
}

const show = (f: string): string => `if [ -f ${f} ]; then echo "${f}: $(cat ${f})"; else echo "${f}: none"; fi`

describe('aviary machines create linux (libvirt/QEMU, TCG), and analyses on what it made', () => {
  let lab: AvlxLab
  let builds: MachineBuilds
  let job: BuildJob
  let h: Harness | undefined
  const layout = (): ReturnType<typeof createLayout> => createLayout(lab.dataDir)
  const machines = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    run(process.execPath, [CLI, 'machines', ...args, '--data', lab.dataDir, '--remote', h!.url], { timeout: 900_000 })
      .then((r) => ({ code: 0, ...r }), (e: { code: number; stdout: string; stderr: string }) => e)
  const snapshots = async (label: string): Promise<string[]> =>
    (await lab.lv.run(['snapshot-list', label, '--name'], 'snapshots')).split('\n').map((l) => l.trim()).filter(Boolean)

  beforeAll(async () => {
    lab = await createAvlxLab()
    await lab.startUpstream()
    await lab.startListener()
    builds = new MachineBuilds(() => ({ layout: layout(), agentFile: AGENT, uri: URI }))
    const t = Date.now()
    job = await builds.wait(builds.startLinux({ name: 'lx', count: 2, network: NETWORK.name }).id)
    times['create (2 machines)'] = Date.now() - t
    if (job.result) times[job.result.image.cached ? 'image (cached)' : 'image build'] = job.result.image.buildMs
    for (const m of job.result?.machines ?? []) times[`boot to agent ${m.name}`] = m.bootMs
  }, 3_600_000)

  afterAll(async () => {
    await h?.stop()
    await builds?.stop()
    await lab?.close()
    console.log(`linux machines timings (ms):\n${Object.entries(times).map(([k, v]) => `  ${k}: ${v}`).join('\n')}`)
  }, 300_000)

  it('makes two machines, step by step, as overlays of one image, each with its own MAC, address, tap and snapshot', async () => {
    expect(job.error, job.error?.message).toBeNull()
    expect(job.state).toBe('succeeded')
    const steps = job.events.filter((e) => e.kind === 'step').map((e) => `${e.step}${e.machine ? ` ${e.machine}` : ''}`)
    expect(steps).toEqual(['check', 'image', ...['lx-1', 'lx-2'].flatMap((m) => ['disk', 'define', 'boot', 'settle', 'snapshot'].map((s) => `${s} ${m}`)), 'register', 'doctor'])
    // Numbered in order; a first build's tool output may be trimmed to its newest lines (the job
    // keeps OUTPUT_KEPT of them), so numbers can skip, but only over output lines.
    const seqs = job.events.map((e) => e.seq)
    expect(seqs[0]).toBe(1)
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!)
    expect(job.events.filter((e) => e.kind !== 'output').length).toBeGreaterThanOrEqual(steps.length)
    for (const e of job.events) expect(LINUX_STEPS).toContain(e.step)
    const r = job.result!
    expect(r.accel.type).toBe('qemu') // no KVM here
    expect(r.image.diskBytes).toBeLessThan(200 * 2 ** 20)
    const [a, b] = r.machines
    expect([a!.ip, b!.ip]).toEqual(['10.216.0.101', '10.216.0.102'])
    expect(new Set([a!.mac, b!.mac, a!.tap, b!.tap]).size).toBe(4)
    const image = path.join(lab.dataDir, 'images', r.image.key, 'disk.qcow2')
    for (const m of r.machines) {
      const info = JSON.parse((await run('qemu-img', ['info', '-U', '--output=json', m.disk])).stdout) as { 'backing-filename': string; snapshots?: { name: string; 'vm-state-size': number }[] }
      expect(info['backing-filename']).toBe(image)
      expect(info.snapshots?.find((s) => s.name === 'clean')?.['vm-state-size']).toBeGreaterThan(0)
      expect((await lab.lv.run(['domstate', m.label], 'state')).trim()).toBe('shut off')
      const xml = await lab.lv.run(['dumpxml', m.label], 'xml')
      expect(xml).toContain(`ip=${m.ip}::${NETWORK.hostIp}:255.255.255.0::eth0:off`)
      expect(xml).toContain(`<mac address='${m.mac}'/>`)
      expect(xml).toMatch(/<graphics type='vnc' port='-1' autoport='yes' listen='127\.0\.0\.1'>/)
    }
    const fleet = JSON.parse(readFileSync(layout().machinesConfig, 'utf8')) as { routing: unknown; machines: Record<string, unknown>[] }
    expect(fleet.routing).toEqual({ default: 'none' })
    expect(fleet.machines).toEqual(r.machines.map((m) => ({
      name: m.name, label: m.label, platform: 'linux', ip: m.ip, snapshot: 'clean', interface: m.tap, resultserver_ip: NETWORK.hostIp, driver: 'kvm', tags: ['debian']
    })))
    // The deep doctor reverted and started each machine, and its agent answered.
    for (const m of r.doctor!.machines) {
      for (const check of ['revert and start', 'agent after revert', 'packet capture', 'accelerator', 'result server address']) {
        expect(m.findings.find((f) => f.check === check), `${m.name} ${check}`).toMatchObject({ ok: true })
      }
    }
  })

  it('refuses to make a machine of a name that exists, saying why, and changes nothing', async () => {
    const before = readFileSync(layout().machinesConfig, 'utf8')
    const again = await builds.wait(builds.startLinux({ name: 'lx', count: 2, network: NETWORK.name }).id)
    expect(again.state).toBe('failed')
    expect(again.error).toMatchObject({ field: 'name' })
    expect(again.error!.message).toMatch(/^name: 'lx-1' exists already: machines\.json has a machine of that name/)
    expect(readFileSync(layout().machinesConfig, 'utf8')).toBe(before)
    expect(await lab.lv.domState('avlx-lx-1')).toBe('shut off')
    expect(() => builds.startLinux({ name: 'lx', count: 99 })).toThrow(/^count: /)
  })

  it('a build that fails midway removes what it made and says what happened', async () => {
    const before = readFileSync(layout().machinesConfig, 'utf8')
    const failing = new MachineBuilds(() => ({ layout: layout(), agentFile: AGENT, uri: URI, bootTimeoutMs: 1 }))
    const j = await failing.wait(failing.startLinux({ name: 'lxfail', network: NETWORK.name }).id)
    expect(j.state).toBe('failed')
    expect(j.error!.step).toBe('machine lxfail')
    expect(j.error!.message).toMatch(/lxfail's agent did not answer on 10\.216\.0\.103:8000 within 0 s; its console:/)
    expect(j.error!.leftBehind).toEqual([])
    expect(j.events.filter((e) => e.step === 'cleanup').map((e) => e.message).join('\n')).toMatch(/removed the domain avlx-lxfail, the folder machines\/lxfail/)
    expect(await lab.lv.domState('avlx-lxfail')).toBeNull()
    expect(existsSync(layout().machineDir('lxfail'))).toBe(false)
    expect(readFileSync(layout().machinesConfig, 'utf8')).toBe(before)
  })

  it('holds what the image promises, and nothing in the guest names Aviary', async () => {
    const m = job.result!.machines[1]!
    const t = Date.now()
    await lab.lv.run(['snapshot-revert', m.label, 'clean', '--running'], 'revert')
    const out = await inGuest(m.ip, [
      'echo "ENV:$(tr "\\0" "\\n" < /proc/$(systemctl show -p MainPID --value guestd)/environ | cut -d= -f1 | sort | tr "\\n" " ")"',
      'echo "TIMERS:$(systemctl list-timers --no-legend --no-pager | wc -l)"',
      'echo "FIREWALL:$(command -v nft iptables ufw firewalld | wc -l)"',
      'echo "ADDR:$(ip -4 -br addr show eth0)"',
      'echo "STRACE:$(command -v strace)"',
      // a[v]iary: the pattern, unlike the name, is not in grep's own command line
      'echo "NAMES:$(grep -rIlis "a[v]iary" /etc /usr/local /usr/lib/systemd /root /var/lib /run /proc/cmdline 2>/dev/null | wc -l) $(cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -ci "a[v]iary")"',
      'echo "HOST:$(hostname)"'
    ].join('; '))
    times['revert to agent + command'] = Date.now() - t
    // A root login's variables, and none of a service's (INVOCATION_ID, JOURNAL_STREAM, SYSTEMD_EXEC_PID)
    expect(out).toMatch(/^ENV:HOME LANG LOGNAME PATH SHELL USER $/m)
    expect(out).toMatch(/^TIMERS:0$/m)
    expect(out).toMatch(/^FIREWALL:0$/m)
    expect(out).toMatch(new RegExp(`^ADDR:eth0\\s+UP\\s+${m.ip.replace(/\./g, '\\.')}/24`, 'm'))
    expect(out).toMatch(/^STRACE:\/usr\/bin\/strace$/m)
    expect(out).toMatch(/^NAMES:0 0$/m)
    expect(out).toMatch(/^HOST:debian$/m)
  }, 300_000)

  it('control: without the rooter, that machine reaches the upstream and the host (the probe works)', async () => {
    const m = job.result!.machines[1]!
    await inGuest(m.ip, `cat > /tmp/p.sh <<'EOF'\n${prober('control')}EOF\nbash /tmp/p.sh`)
    const got = await inGuest(m.ip, 'cat /tmp/probe-control.txt')
    if (!/^REACHED wget /m.test(got)) expect.fail(`the probe reached nothing without the rooter:\n${got}\n${await linkState(m)}`)
    expect(got).toMatch(new RegExp(`REACHED wget .*http://${UPSTREAM_IP}/c-control$`, 'm'))
    expect(lab.seen('upstream').map((e) => `${e.proto} ${e.client} ${e.path ?? ''}`)).toContain(`http ${m.ip} /c-control`)
    expect(lab.seen('host').some((e) => e.client === m.ip && e.proto === 'tcp')).toBe(true)
    await lab.lv.destroyIfRunning(m.label)
  }, 300_000)

  describe('with the rooter as the only firewall, through the service', () => {
    beforeAll(async () => {
      await lab.startRooter()
      const fleet = JSON.parse(readFileSync(layout().machinesConfig, 'utf8')) as Record<string, unknown> & { routing: Record<string, unknown> }
      h = await startHarness({
        engine: true, dataDir: lab.dataDir,
        machines: { ...fleet, resultserver: { ip: NETWORK.hostIp, port: 0 }, screenshots: { interval: 1 }, routing: { ...fleet.routing, rooter: lab.rooterSocket } }
      })
    }, 120_000)

    it('runs a file task end to end: a process tree, a pcap, a screenshot and a memory dump in the report', async () => {
      const t = Date.now()
      const id = await submitFile(h!, 'vm-sample.sh', SAMPLE, { machine: 'lx-1', timeout: '20', memory: '1' })
      expect(await waitForTask(h!, id, FINAL, 900_000)).toBe('reported')
      times['file task, submit to reported'] = Date.now() - t
      const { body: view } = await h!.json<{ task: { errors: string[]; route: string; guest: { name: string; manager: string } } }>(`/tasks/view/${id}`)
      expect(view.task.errors).toEqual([])
      expect(view.task.route).toBe('none')
      expect(view.task.guest).toMatchObject({ name: 'lx-1', manager: 'kvm' })
      const seen = await stages(h!, id)
      for (const st of ['machine_locked', 'reverting', 'started', 'agent_answered', 'analyzer_started', 'sample_running', 'finished', 'memory_dumped', 'machine_stopped', 'completed', 'reported']) {
        expect(seen).toContain(st)
      }
      expect(await lab.lv.domState('avlx-lx-1')).toBe('shut off')
      const { body: report } = await h!.json<{
        behavior: { processtree: { process_name: string; children: { process_name: string; children: unknown[] }[] }[] }
        screenshots: { path: string }[]
        memory?: { size?: number; triage?: { baseline: string | null; urls: string[]; domains: string[] } } | null
      }>(`/tasks/report/${id}`)
      const tree = JSON.stringify(report.behavior.processtree)
      expect(tree).toContain('vm-sample.sh')
      expect(tree).toContain('sleep')
      expect(report.screenshots.length).toBeGreaterThan(0)
      const dir = h!.analysisDir(id)
      expect(head(path.join(dir, 'shots/0001.jpg'), 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]))
      expect(readdirSync(path.join(dir, 'shots'))).toContain('0001_small.jpg')
      expect(head(path.join(dir, 'memory.dmp'), 4).toString('latin1')).toBe('\x7fELF')
      expect(statSync(path.join(dir, 'memory.dmp')).size).toBeGreaterThan(512 * 2 ** 20)
      // Triage on a real QEMU dump: the clean snapshot's baseline was taken once (before the
      // agent got the sample) and kept; what the report lists is what the run added, the URL
      // planted in the sample's memory among it, and nothing the baseline already held.
      const kept = path.join(lab.dataDir, 'baselines', 'lx-1', 'clean.json')
      const baseline = JSON.parse(readFileSync(kept, 'utf8')) as { urls: string[]; domains: string[] }
      expect(readFileSync(path.join(dir, 'memory.baseline.json'), 'utf8')).toBe(readFileSync(kept, 'utf8'))
      const triage = report.memory?.triage
      expect(triage?.baseline).toBe('lx-1/clean')
      expect(triage?.urls).toContain(PLANTED)
      expect(triage?.domains).toContain(new URL(PLANTED).hostname)
      expect(triage!.urls.filter((u) => baseline.urls.includes(u))).toEqual([])
      expect(baseline.urls).not.toContain(PLANTED)
      const pcap = await fetch(`${h!.url}/pcap/get/${id}`)
      expect(pcap.status).toBe(200)
      const bytes = Buffer.from(await pcap.arrayBuffer())
      expect(bytes.readUInt32LE(0)).toBe(0xa1b2c3d4)
      const { stdout } = await run('tcpdump', ['-n', '-r', path.join(dir, 'dump.pcap')], { encoding: 'utf8' })
      expect(stdout).toContain(`IP 10.216.0.101 > ${UPSTREAM_IP}: ICMP echo request`)
      // The capture leaves out the service's own talk with the agent.
      expect(stdout).not.toMatch(/\.8000[ :]/)
      const dropped = readdirSync(path.join(dir, 'files')).find((f) => f.endsWith('_vm-dropped.txt'))
      expect(dropped).toBeDefined()
      expect(readFileSync(path.join(dir, 'files', dropped!), 'utf8')).toBe('written-in-the-vm\n')
      const behavior = readFileSync(path.join(dir, 'logs/behavior.jsonl'), 'utf8')
      expect(behavior).toMatch(/vm-sample\.sh/)
      expect(behavior).toMatch(/sleep 1/)
    }, 1_200_000)

    it('on route none the machine reaches nothing, judged from outside: not the upstream, not the host, not with another address', async () => {
      const m = job.result!.machines[1]!
      const mark = { upstream: lab.seen('upstream').length, host: lab.seen('host').length }
      // The probe ends on its own; the timeout only has to outlast it on a loaded machine (TCG).
      const id = await submitFile(h!, 'probe.sh', prober('none'), { machine: m.name, timeout: '150', options: 'route=none' })
      expect(await waitForTask(h!, id, FINAL, 900_000)).toBe('reported')
      expect(lab.seen('upstream').slice(mark.upstream)).toEqual([])
      expect(lab.seen('host').slice(mark.host)).toEqual([])
      const dir = h!.analysisDir(id)
      // The probe did run and try: its packets are in the capture, its results were uploaded.
      const { stdout } = await run('tcpdump', ['-n', '-r', path.join(dir, 'dump.pcap')], { encoding: 'utf8' })
      if (stdout === '') {
        const uploaded = readdirSync(path.join(dir, 'files')).find((f) => f.endsWith('_probe-none.txt'))
        expect.fail(`the task's capture is empty; the probe wrote ${uploaded ? readFileSync(path.join(dir, 'files', uploaded), 'utf8') : 'nothing uploaded'}\n` +
          `analysis.log ends:\n${readFileSync(path.join(dir, 'analysis.log'), 'utf8').slice(-3000)}`)
      }
      expect(stdout).toMatch(new RegExp(`IP ${m.ip.replace(/\./g, '\\.')}\\.\\d+ > ${UPSTREAM_IP.replace(/\./g, '\\.')}\\.80: Flags \\[S\\]`))
      const result = readdirSync(path.join(dir, 'files')).find((f) => f.endsWith('_probe-none.txt'))
      const seenInGuest = readFileSync(path.join(dir, 'files', result!), 'utf8')
      expect(seenInGuest).toMatch(/blocked wget/)
      expect(seenInGuest).not.toMatch(/REACHED (wget|bash -c exec|ping)/)
      expect(readFileSync(path.join(dir, 'analysis.log'), 'utf8')).toMatch(/route none off; it dropped [1-9]\d* packets/)
    }, 1_200_000)

    it('prepare mode on lx-1: keeps a file made in the guest, and discards one made after', async () => {
      const m = job.result!.machines[0]!
      expect(m).toMatchObject({ name: 'lx-1', label: 'avlx-lx-1' })
      expect(await snapshots(m.label)).toEqual(['clean'])

      // prepare: reverted to the snapshot and running, locked, and the command says how to reach it.
      const p1 = await machines(['prepare', m.name])
      expect(p1.stderr).toBe('')
      expect(p1.stdout).toContain(`its agent: http://${m.ip}:8000`)
      expect(await lab.lv.domState(m.label)).toBe('running')
      const { body: preparing } = await h!.json<{ preparing: { machine: string }[] }>('/aviary/machines/preparing')
      expect(preparing.preparing.map((s) => s.machine)).toEqual([m.name])
      expect(await inGuestAfterRevert(m.ip, show(MARK1))).toContain(`${MARK1}: none`)
      await store(m.ip, MARK1, 'made in prepare mode, then kept')

      // keep: the running machine becomes 'clean' (no spare snapshot left behind), powered off.
      const k = await machines(['prepare', m.name, '--keep'])
      expect(k.stderr).toBe('')
      expect(k.stdout).toMatch(/^kept: lx-1's snapshot is now the machine as you left it/)
      expect(await snapshots(m.label)).toEqual(['clean'])
      expect(await lab.lv.domState(m.label)).toBe('shut off')

      // prepare again: back to the kept snapshot, where the file is.
      expect((await machines(['prepare', m.name])).code).toBe(0)
      expect(await inGuestAfterRevert(m.ip, show(MARK1))).toContain(`${MARK1}: made in prepare mode, then kept`)
      await store(m.ip, MARK2, 'made in prepare mode, then discarded')
      expect(await inGuestAfterRevert(m.ip, show(MARK2))).toContain(`${MARK2}: made in prepare mode, then discarded`)

      // discard: back to the snapshot, powered off, the snapshot unchanged.
      const d = await machines(['prepare', m.name, '--discard'])
      expect(d.stderr).toBe('')
      expect(d.stdout).toMatch(/^discarded: lx-1 is back to its snapshot/)
      expect(await lab.lv.domState(m.label)).toBe('shut off')
      expect(await snapshots(m.label)).toEqual(['clean'])

      // prepare once more: the kept file is there, the discarded one is not.
      expect((await machines(['prepare', m.name])).code).toBe(0)
      const seen = await inGuestAfterRevert(m.ip, `${show(MARK1)}; ${show(MARK2)}`)
      expect(seen).toContain(`${MARK1}: made in prepare mode, then kept`)
      expect(seen).toContain(`${MARK2}: none`)
      expect((await machines(['prepare', m.name, '--discard'])).code).toBe(0)
      expect(await lab.lv.domState(m.label)).toBe('shut off')
      // Released: the service holds no machine in prepare mode, nor a marker in the machine's folder.
      const { body: after } = await h!.json<{ preparing: unknown[] }>('/aviary/machines/preparing')
      expect(after.preparing).toEqual([])
      expect(existsSync(path.join(layout().machineDir(m.name), 'preparing.json'))).toBe(false)
    }, 1_800_000)
  })
})
