// `aviary doctor`: checks every machine before the first analysis, and says for each failure why
// and how to fix it — the hypervisor and the VM and its snapshot (the driver's own checks), the
// result server's address, packet capture on the machine's interface, and the agent. With
// `deep`, each machine is also reverted, started, waited for until its agent answers, and stopped:
// the whole path of an analysis but the sample. The routes are checked too (routes-check.ts).
import os from 'node:os'
import { existsSync } from 'node:fs'
import net, { isIP } from 'node:net'
import { loadFleetConfig, type EngineSettings, type MachineConfig } from '../machinery/machines-config'
import type { DriverMachine, Finding } from '../machinery/driver'
import { createDrivers, type DriverSet } from '../machinery/drivers'
import { checkCapture } from '../capture/tcpdump'
import { GuestSession, probeAgent } from '../guest/guest-session'
import { checkRoutes } from './routes-check'
import type { DriverKind } from '../../shared/api/drivers'
import { AGENT_PORT } from '../../guest-protocol/agent-api'

export interface MachineReport {
  name: string
  driver: DriverKind
  findings: Finding[]
}

export interface DoctorReport {
  ok: boolean
  /** machines.json itself: read, and what it holds. */
  config: Finding
  /** The routes of analyses: the rooter and each route machines.json offers. */
  routes: Finding[]
  machines: MachineReport[]
  /** The IDS (Suricata and its rule sets, processing/suricata/ids-check.ts): informative, never failing. */
  ids?: Finding[]
  /** Folders, domains, snapshots and images nothing in machines.json uses (builder/upkeep.ts); not part of `ok`. */
  leftovers?: Finding
}

export interface DoctorOptions {
  machinesFile: string
  deep: boolean
  /** Checks one machine at a time when several are named. */
  only?: string[]
  /**
   * What a crash left behind (builder/upkeep.ts's leftoversFinding), looked for when no machine
   * is named. Given by the caller: the builder runs the doctor on what it made, so the doctor does
   * not import the builder.
   */
  leftovers?: () => Promise<Finding>
}


export async function runDoctor(o: DoctorOptions): Promise<DoctorReport> {
  if (!existsSync(o.machinesFile)) {
    return {
      ok: false, machines: [], routes: [],
      config: {
        check: 'machines.json', ok: false, detail: `there is no ${o.machinesFile}`,
        fix: 'make a Debian analysis machine with `aviary machines create linux` (once before it, as root: `aviary setup --user $USER`), describe your own VMs in it (docs/machines.md), or import a Cuckoo setup with `aviary machines import <cuckoo>/conf`; `--data DIR` names another data directory'
      }
    }
  }
  let fleet
  try {
    fleet = loadFleetConfig(o.machinesFile)
  } catch (err) {
    const config = { check: 'machines.json', ok: false, detail: (err as Error).message, fix: 'correct the field named above (docs/machines.md)' }
    return { ok: false, config, routes: [], machines: [] }
  }
  const machines = fleet.machines.filter((m) => !o.only?.length || o.only.includes(m.name))
  const config: Finding = machines.length > 0
    ? { check: 'machines.json', ok: true, detail: `${fleet.machines.length} machines configured` }
    : {
        check: 'machines.json', ok: false, detail: o.only?.length ? `no machine is named ${o.only.join(', ')}` : 'no machines are configured',
        fix: 'make a Debian analysis machine with `aviary machines create linux` (once before it, as root: `aviary setup --user $USER`), describe your own VMs in machines.json, or import a Cuckoo setup with `aviary machines import <cuckoo>/conf`'
      }
  const drivers = createDrivers(fleet.settings)
  try {
    const reports: MachineReport[] = []
    for (const m of machines) reports.push({ name: m.name, driver: m.driver, findings: await checkMachine(m, fleet.settings, drivers, o.deep) })
    const routes = await checkRoutes(fleet.settings.routing)
    const leftovers = o.only?.length || !o.leftovers ? undefined : await o.leftovers()
    return { ok: config.ok && routes.every((f) => f.ok) && reports.every((r) => r.findings.every((f) => f.ok)), config, routes, machines: reports, ...(leftovers ? { leftovers } : {}) }
  } finally {
    await drivers.close()
  }
}

async function checkMachine(m: MachineConfig, settings: EngineSettings, drivers: DriverSet, deep: boolean): Promise<Finding[]> {
  const driver = drivers.get(m.driver)
  const dm: DriverMachine = m
  const findings: Finding[] = await driver.check(dm).catch((err: Error) => [{ check: 'hypervisor', ok: false, detail: err.message }])
  findings.push(await resultServerAddress(m))
  // A machine's own tap (libvirt's <target dev=…>) exists only while the machine runs: then
  // capture is checked by --deep, once the machine runs.
  const tapLater = m.interface !== null && driver.capabilities.power && !existsSync(`/sys/class/net/${m.interface}`) &&
    await driver.state(dm).then((s) => s === 'poweroff', () => false)
  if (!tapLater || !deep) {
    findings.push(!m.interface
      ? { check: 'packet capture', ok: false, detail: 'no network interface is configured for this machine: its traffic would not be captured',
          fix: 'set "interface" (the bridge or tap the guest is on, e.g. virbr0) for the machine or at the top of machines.json' }
      : tapLater
        ? { check: 'packet capture', ok: true, detail: `not checked: ${m.interface} does not exist while the machine is off (a tap of its own appears when it runs); aviary doctor --deep checks it while it runs` }
        : await checkCapture(settings.tcpdump, m.interface).then((r) => ({ check: 'packet capture', ...r })))
  }
  if (deep) {
    findings.push(...await deepCheck(m, dm, drivers, settings, tapLater))
  } else {
    const state = await driver.state(dm).catch(() => 'error')
    findings.push(state === 'running'
      ? await agentFinding(m)
      : { check: 'agent protocol', ok: true, detail: driver.capabilities.power
          ? `not checked: the VM is ${state} (aviary doctor --deep ${driver.capabilities.revert ? 'reverts and starts' : 'starts'} it)`
          : 'not checked: the machine does not answer (see above)' })
  }
  return findings
}

/**
 * Whether `ip` is an address of this host: one os.networkInterfaces() lists, or one a socket can
 * bind (libuv lists no address of an interface without carrier, such as a bridge none of whose
 * guests runs yet).
 */
async function hostHas(ip: string): Promise<boolean> {
  if (Object.values(os.networkInterfaces()).flat().some((a) => a?.address === ip)) return true
  return new Promise((resolve) => {
    const s = net.createServer()
    s.once('error', () => resolve(false))
    s.listen(0, ip, () => s.close(() => resolve(true)))
  })
}

async function resultServerAddress(m: MachineConfig): Promise<Finding> {
  const ip = m.resultserver_ip
  const check = 'result server address'
  if (ip === '0.0.0.0' || ip === '::') return { check, ok: true, detail: `${ip}: listens on every address of this host` }
  if (await hostHas(ip)) return { check, ok: true, detail: `${ip}:${m.resultserver_port} belongs to this host` }
  return {
    check, ok: false,
    detail: `${ip} is not an address of this host, so the result server cannot listen there and the guest's uploads would be lost`,
    fix: isIP(ip) === 4
      ? `bring up the network the guests are on (e.g. \`virsh net-start default\` for 192.168.122.1, \`vboxmanage hostonlyif ipconfig vboxnet0 --ip 192.168.56.1\`), or set resultserver.ip in machines.json to the host's address on that network`
      : 'set resultserver.ip in machines.json to an address of this host on the guests\' network'
  }
}

async function agentFinding(m: MachineConfig): Promise<Finding> {
  try {
    const info = await probeAgent(m.ip, AGENT_PORT, 5000)
    return { check: 'agent protocol', ok: true, detail: `${info.kind} agent${info.version ? ` ${info.version}` : ''} answers on ${m.ip}:${AGENT_PORT}` }
  } catch (err) {
    return {
      check: 'agent protocol', ok: false, detail: `no agent answers on ${m.ip}:${AGENT_PORT}: ${(err as Error).message}`,
      fix: 'start the agent in the guest (`aviary agent`, or Cuckoo\'s agent.py) at logon, check the guest\'s IP and firewall, then take the snapshot again with the agent running'
    }
  }
}

/**
 * The path of an analysis but the sample, named after what the driver declares: a machine without
 * snapshots is started (waited for), never said to be reverted; one its owner powers is not stopped.
 */
async function deepCheck(m: MachineConfig, dm: DriverMachine, drivers: DriverSet, settings: EngineSettings, captureWhileRunning: boolean): Promise<Finding[]> {
  const driver = drivers.get(m.driver)
  const caps = driver.capabilities
  const startCheck = caps.revert ? 'revert and start' : 'start'
  const agentCheck = caps.revert ? 'agent after revert' : 'agent after start'
  const out: Finding[] = []
  const started = Date.now()
  try {
    await driver.start(dm)
    out.push({ check: startCheck, ok: true, detail: `running after ${((Date.now() - started) / 1000).toFixed(1)} s${caps.power ? '' : ' (its owner powers it: Aviary waited for it to answer)'}` })
  } catch (err) {
    out.push({ check: startCheck, ok: false, detail: (err as Error).message })
    return out
  }
  if (captureWhileRunning && m.interface) {
    out.push(await checkCapture(settings.tcpdump, m.interface).then((r) => ({ check: 'packet capture', ...r, detail: `${r.detail} (checked while the machine runs)` })))
  }
  try {
    const t = Date.now()
    await new GuestSession({ ip: m.ip, port: AGENT_PORT, log: () => undefined })
      .waitAvailable({ timeoutMs: settings.timeouts.critical * 1000 })
    out.push({ check: agentCheck, ok: true, detail: `port ${AGENT_PORT} open after ${((Date.now() - t) / 1000).toFixed(1)} s` })
    out.push(await agentFinding(m))
  } catch (err) {
    out.push({
      check: agentCheck, ok: false, detail: (err as Error).message,
      fix: caps.revert
        ? 'the snapshot must be taken while the VM runs with the agent started (a live snapshot); start the VM, start the agent, take the snapshot again'
        : `start the agent on '${m.name}' (\`aviary agent\`, or Cuckoo's agent.py) at logon, and check the machine's IP and firewall`
    })
  } finally {
    try {
      await driver.stop(dm)
      out.push({ check: 'stop', ok: true, detail: caps.power ? 'stopped' : 'left running: its owner powers it' })
    } catch (err) {
      out.push({ check: 'stop', ok: false, detail: (err as Error).message })
    }
  }
  return out
}

/** The report as people read it: one line per check, a reason and a fix under each failure. */
export function formatDoctorReport(r: DoctorReport): string {
  const lines: string[] = []
  const mark = (f: Finding) => (f.ok ? 'ok  ' : 'FAIL')
  const put = (f: Finding, indent: string) => {
    lines.push(`${indent}${mark(f)} ${f.check}: ${f.detail}`)
    if (!f.ok && f.fix) lines.push(`${indent}     fix: ${f.fix}`)
  }
  put(r.config, '')
  if (r.routes.length > 0) lines.push('', 'routes')
  for (const f of r.routes) put(f, '  ')
  for (const m of r.machines) {
    lines.push('', `${m.name} (${m.driver})`)
    for (const f of m.findings) put(f, '  ')
  }
  if (r.ids !== undefined && r.ids.length > 0) {
    lines.push('', 'IDS (optional: a report says when it was skipped)')
    for (const f of r.ids) put(f, '  ')
  }
  if (r.leftovers) {
    lines.push('')
    put(r.leftovers, '')
  }
  lines.push('', r.ok ? 'All checks passed.' : 'Some checks failed: see the fixes above.')
  return lines.join('\n') + '\n'
}
