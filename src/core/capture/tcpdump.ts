// Packet capture of one analysis: tcpdump on the VM's interface writing <analysis>/dump.pcap, with
// Cuckoo's sniffer command line and BPF filter (reference §5.7) so that the pcap holds what the
// sample did and not the host's own talk with the guest (agent on port 8000, result server uploads).
// tcpdump itself does the capturing; this module starts it, proves it is listening before the VM
// runs, and stops it once the pcap is complete, turning tcpdump's complaints into errors. The
// doctor uses checkCapture() to say why capture cannot work and how to fix it.
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs'
import { constants as osConstants, userInfo } from 'node:os'
import path from 'node:path'

export interface CaptureOptions {
  /** Path of tcpdump (Cuckoo's default: /usr/sbin/tcpdump), or a bare name looked up in PATH. */
  tcpdump: string
  iface: string
  guestIp: string
  /** The guest agent's port (8000): its traffic is left out. */
  agentPort: number
  /** The result server: the guest's uploads to it are left out. */
  resultserver: { ip: string; port: number }
  /** The pcap to write (its folder must exist). */
  file: string
  /** Bytes kept per packet; 0 (default) = whole packets. */
  snaplen?: number
  /**
   * Kernel capture ring in KiB (tcpdump -B). Default 16384 (16 MiB of pinned kernel memory per
   * capture). Measured with 20,000-datagram bursts from the guest over a veth, 4 CPU hogs running:
   * in libpcap's block mode (TPACKET_V3, what we use) even 4 MiB dropped nothing; with
   * --immediate-mode (TPACKET_V2, fixed ~64 KiB frames on interfaces with offloads) the 2 MiB
   * default dropped ~50%, 64 MiB still 1-2%, only 256 MiB none. See bench/capture.bench.mjs.
   */
  bufferKiB?: number
  /** Extra BPF ANDed to the filter, like Cuckoo's auxiliary.conf [sniffer] bpf. */
  bpf?: string
  /** Cuckoo's sniffer.debug=1: capture agent and result-server traffic too. */
  debug?: boolean
}

/** tcpdump's closing statistics (undefined where it did not print them, e.g. after SIGKILL). */
export interface CaptureStats {
  captured?: number
  receivedByFilter?: number
  droppedByKernel?: number
  /** How stop() knew the pcap was complete: tcpdump's counts, or (they could not be had) the blind wait. */
  waited?: 'counts' | 'blind'
  /** Packets counted before tcpdump's filter was set (libpcap judges them itself, and leaves out those the filter would). */
  beforeFilter?: number
  /** Milliseconds from stop() until tcpdump was asked to end. */
  waitedMs?: number
  /**
   * Packets the kernel's filter took before the stop that tcpdump had still not written when the
   * wait gave up (only with `waited: 'counts'`): they are not in the pcap.
   */
  unwritten?: number
}

export interface Capture {
  /** False once tcpdump has exited (on its own, or after stop()). */
  running(): boolean
  /** SIGTERM (SIGKILL after a grace period), wait for exit, so the pcap is complete. Rejects if tcpdump died during the run or complained. */
  stop(): Promise<void>
  /**
   * After stop() resolved: tcpdump's closing statistics. Packets the kernel dropped because the
   * ring was full are not an error (as in Cuckoo) but are worth a log line.
   */
  stats(): CaptureStats | undefined
}

export class CaptureError extends Error {}

/** How long tcpdump may take to say "listening on" before startCapture gives up. */
const START_TIMEOUT_MS = 10_000
/** Grace period between SIGTERM and SIGKILL on stop. */
const STOP_GRACE_MS = 5_000
/** More than libpcap's 1 s block timeout (tcpdump's default), so the last block is handed over. */
const FLUSH_DELAY_MS = 1_200
/** After the delay, the pcap must stop growing for this long (tcpdump may still be writing a block). */
const SETTLE_MS = 150
const SETTLE_LIMIT_MS = 3_000
/**
 * A packet the guest sent just before stop() may still be on its way through the host's network
 * stack to the capture: what the filter has taken this long after stop() is what must be written.
 */
const IN_FLIGHT_MS = 100
/** How often the counts are asked for while the last packets wait in an open block. */
const POLL_MS = 50
/** How long tcpdump may take to print its counts after SIGUSR1 before they are no longer asked for. */
const STATS_ANSWER_MS = 1_000
/** Past this, stop waiting for the counts to catch up (e.g. libpcap filtering in user space): the blind wait's own bound. */
const COMPLETE_LIMIT_MS = FLUSH_DELAY_MS + SETTLE_LIMIT_MS
/**
 * The kernel hands a block over one to two of libpcap's 1 s timeouts after opening it: this long
 * after the stop, every block holding a packet from before it has reached tcpdump.
 */
const BLOCK_HANDOVER_MS = 2_200
/** stderr lines tcpdump prints in a normal run (Cuckoo's sniffer accepts exactly these kinds). */
const BENIGN_STDERR = [
  /^tcpdump: listening on /,
  /^\d+ packets? (captured|received by filter|dropped by (kernel|interface))$/,
  // its counts on SIGUSR1 (see complete())
  /^tcpdump: \d+ packets? captured, \d+ packets? received by filter, \d+ packets? dropped by kernel(, \d+ packets? dropped by interface)?$/,
  /dropped privs/,
  /^tcpdump: data link type /,
  /^$/
]

/** Cuckoo's filter: the guest's traffic, minus the agent and the result server (unless debug). */
export function captureFilter(o: CaptureOptions): string {
  const parts = [`host ${o.guestIp}`]
  if (!o.debug) {
    parts.push(
      `and not ( dst host ${o.guestIp} and dst port ${o.agentPort} )`,
      `and not ( src host ${o.guestIp} and src port ${o.agentPort} )`,
      `and not ( dst host ${o.resultserver.ip} and dst port ${o.resultserver.port} )`,
      `and not ( src host ${o.resultserver.ip} and src port ${o.resultserver.port} )`
    )
  }
  if (o.bpf?.trim()) parts.push(`and ( ${o.bpf.trim()} )`)
  return parts.join(' ')
}

/**
 * tcpdump's arguments: Cuckoo's `-U -q -s 0 -n -i IFACE -Z USER -w FILE FILTER` plus
 * `-B` (see bufferKiB). Not `--immediate-mode` (the QEMU note suggests it): in block mode libpcap
 * hands packets over when a block fills or after its 1 s block timeout, so stop() first waits
 * until tcpdump has written every packet the kernel took (complete()), and nothing sent before
 * stop() is lost — measured; with no wait at all 890 of 20,000 datagrams sent just before SIGTERM
 * were missing.
 * `-Z` matters when running as root: Debian's tcpdump otherwise drops to the `tcpdump` user before
 * opening the file and cannot write into the analysis folder.
 */
export function captureArgs(o: CaptureOptions): string[] {
  return ['-U', '-B', String(o.bufferKiB ?? 16384), '-q', '-s', String(o.snaplen ?? 0), '-n', '-i', o.iface,
    ...dropPrivsTo(), '-w', o.file, captureFilter(o)]
}

/** `-Z <current user>` as Cuckoo does; tcpdump ignores it unless running as root. */
function dropPrivsTo(): string[] {
  try {
    return ['-Z', userInfo().username]
  } catch {
    return [] // no passwd entry for this uid: nothing to name
  }
}

export async function startCapture(o: CaptureOptions): Promise<Capture> {
  const proc = await spawnListening(o.tcpdump, captureArgs(o), `capture on ${o.iface}`, true)
  // libpcap makes the ring before it sets the filter: what came in meanwhile is counted as received
  // by filter, then judged by libpcap itself, which leaves out what the filter would have (measured:
  // 66-436 packets of a ping flood the filter excluded, counted and never written). Counted now,
  // so that stop() knows how many received packets may never be written.
  const early = proc.child.pid !== undefined && catches(proc.child.pid, osConstants.signals.SIGUSR1)
    ? await askCounts(proc.child, proc.output)
    : null
  const unjudged = early === null ? 0 : Math.max(0, early.received - early.captured - early.dropped)
  let stats: CaptureStats | undefined
  let stopping: Promise<void> | undefined
  const stop = async (): Promise<void> => {
    const t0 = Date.now()
    const counted = await complete(proc.child, proc.output, unjudged)
    if (counted === null) await flushed(o.file, proc.output)
    const waitedMs = Date.now() - t0
    const { code, signal, stderr, stdout, exitedBefore } = await terminate(proc.child, proc.output)
    const odd = stderr.split('\n').map((l) => l.trim()).filter((l) => !BENIGN_STDERR.some((re) => re.test(l)))
    if (exitedBefore) {
      const why = odd.join('\n') || stderr
      throw new CaptureError(`tcpdump on ${o.iface} exited during the capture (${signal ?? code}): ${tail(why + stdout)}`)
    }
    if (odd.length > 0 || stdout.trim()) {
      throw new CaptureError(`tcpdump on ${o.iface} reported: ${tail([...odd, stdout.trim()].filter(Boolean).join('\n'))}`)
    }
    stats = {
      ...parseStats(stderr), waited: counted === null ? 'blind' : 'counts', waitedMs,
      ...(counted ? { unwritten: counted.unwritten, beforeFilter: unjudged } : {})
    }
  }
  return {
    running: () => proc.output.exit === undefined,
    stats: () => stats,
    stop: () => (stopping ??= stop())
  }
}

/** For `aviary doctor`: tcpdump present, interface present, and a capture can start on it. */
export async function checkCapture(tcpdump: string, iface: string): Promise<{ ok: boolean; detail: string; fix?: string }> {
  const bin = resolveBinary(tcpdump)
  if (!bin) {
    const elsewhere = tcpdump.includes('/') ? resolveBinary('tcpdump') : undefined
    return elsewhere
      ? { ok: false, detail: `tcpdump not found at ${tcpdump}`, fix: `Set the tcpdump path in the configuration to ${elsewhere} (found in PATH).` }
      : { ok: false, detail: `tcpdump not found (${tcpdump})`, fix: 'Install it (apt install tcpdump) or set the tcpdump path in the configuration.' }
  }
  if (!existsSync(path.join('/sys/class/net', iface))) {
    return { ok: false, detail: `network interface ${iface} does not exist`, fix: `Create ${iface} (the VMs' bridge or host-only network) or set the machine's interface to an existing one.` }
  }
  try {
    const proc = await spawnListening(bin, ['-n', '-i', iface, '-c', '1', ...dropPrivsTo(), '-w', '/dev/null'], `test capture on ${iface}`)
    await terminate(proc.child, proc.output)
    return { ok: true, detail: `tcpdump (${bin}) can capture on ${iface}` }
  } catch (err) {
    const msg = (err as Error).message
    if (/permission|not permitted/i.test(msg)) {
      return { ok: false, detail: msg, fix: `Run as root, or grant tcpdump the capabilities: setcap cap_net_raw,cap_net_admin=eip ${bin}` }
    }
    return { ok: false, detail: msg }
  }
}

interface Output {
  stdout: string
  stderr: string
  exit?: { code: number | null; signal: NodeJS.Signals | null }
  /** Settles once the process has exited and its stdio is drained. */
  closed: Promise<void>
}

const SETPRIV = '/usr/bin/setpriv'

function resolvable(bin: string): boolean {
  if (bin.includes('/')) return existsSync(bin)
  return (process.env.PATH ?? '').split(':').some((dir) => dir && existsSync(path.join(dir, bin)))
}

/** Spawns tcpdump and resolves once it says "listening on"; rejects with its own words otherwise. */
function spawnListening(bin: string, args: string[], what: string, dieWithUs = false): Promise<{ child: ChildProcess; output: Output }> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess
    try {
      // A capture must not outlive a service killed with SIGKILL (it would write to an unlinked
      // pcap for ever): util-linux's setpriv execs tcpdump with a parent-death signal. The binary
      // is checked first so that a missing tcpdump still gets tcpdump's own error.
      const wrap = dieWithUs && existsSync(SETPRIV) && resolvable(bin)
      child = wrap
        ? spawn(SETPRIV, ['--pdeathsig', 'TERM', '--', bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    } catch (err) {
      reject(new CaptureError(`${what}: cannot start ${bin}: ${(err as Error).message}`))
      return
    }
    const output: Output = { stdout: '', stderr: '', closed: new Promise((r) => child.once('close', () => r())) }
    let settled = false
    const fail = (reason: string): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (output.exit === undefined) child.kill('SIGKILL')
      reject(new CaptureError(`${what}: ${reason}`))
    }
    const timer = setTimeout(() => fail(`tcpdump did not start listening within ${START_TIMEOUT_MS / 1000} s: ${tail(output.stderr)}`), START_TIMEOUT_MS)
    child.stdout?.on('data', (b: Buffer) => { output.stdout += b.toString() })
    child.stderr?.on('data', (b: Buffer) => {
      output.stderr += b.toString()
      // The whole line: tcpdump writes it in pieces, and a count line it prints on SIGUSR1 must not land inside it.
      if (!settled && /listening on [^\n]*\n/.test(output.stderr)) {
        settled = true
        clearTimeout(timer)
        resolve({ child, output })
      }
    })
    child.once('error', (err) => fail(`cannot start ${bin}: ${err.message}`))
    child.once('exit', (code, signal) => {
      output.exit = { code, signal }
      fail(`tcpdump exited (${signal ?? code}): ${tail(output.stderr + output.stdout) || 'no output'}`)
    })
  })
}

interface Counts {
  captured: number
  received: number
  dropped: number
}

const COUNTS_LINE = /^tcpdump: (\d+) packets? captured, (\d+) packets? received by filter, (\d+) packets? dropped by kernel/gm

/** True when the process catches `signal` (SigCgt in /proc): sent to a program that does not, it would end it. */
function catches(pid: number, signal: number): boolean {
  try {
    const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m !== null && ((BigInt(`0x${m[1]}`) >> BigInt(signal - 1)) & 1n) === 1n
  } catch {
    return false
  }
}

/**
 * Waits until the pcap holds every packet the guest sent before now, knowing it rather than
 * waiting blindly: tcpdump prints its counts on SIGUSR1 (and goes on capturing), where "received
 * by filter" counts every packet the kernel's filter took, handed over or not, and "captured" every
 * one tcpdump has written (with -U, flushed); blocks are handed over in order. The target is what
 * the filter had received IN_FLIGHT_MS after stop(); the capture is complete once captured +
 * dropped reaches it. Packets in the open block wait there until it fills or its 1 s timeout, and
 * are waited for; packets that come later (a guest still talking) are not, so a chatty guest does
 * not hold the stop. A guest that sent nothing in its last second stops in ~IN_FLIGHT_MS instead
 * of 1.2–1.5 s. When packets came in before the filter was set (`unjudged`, a few captures in a
 * hundred), those libpcap leaves out are never written: the count can then only be trusted once
 * every block from before the stop has been handed over (BLOCK_HANDOVER_MS). Resolves with how many of the target were not written when it gave up (0 when
 * complete), or null when the counts cannot be had (a tcpdump that does not catch SIGUSR1, no
 * answer): the caller then waits blindly.
 */
async function complete(child: ChildProcess, output: Output, unjudged: number): Promise<{ unwritten: number } | null> {
  const pid = child.pid
  if (pid === undefined || output.exit !== undefined || !catches(pid, osConstants.signals.SIGUSR1)) return null
  const deadline = Date.now() + COMPLETE_LIMIT_MS
  const pause = (ms: number): Promise<boolean> => Promise.race([output.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))])
  const exited = { unwritten: 0 } // tcpdump exited: it wrote what it had, and its exit is dealt with by stop()
  // Asked once at stop() (so that SIGUSR1 is known to be answered) and once IN_FLIGHT_MS later.
  if ((await askCounts(child, output)) === null) return output.exit !== undefined ? exited : null
  if (await pause(IN_FLIGHT_MS)) return exited
  let counts = await askCounts(child, output)
  if (counts === null) return output.exit !== undefined ? exited : null
  const target = counts.received
  const t0 = Date.now()
  while (counts.captured + counts.dropped < target) {
    const written = counts.captured + counts.dropped
    // Every block from before the stop has been handed over: what is missing, up to the packets
    // taken before the filter was set, was left out by libpcap (see startCapture).
    if (Date.now() - t0 >= BLOCK_HANDOVER_MS && written >= target - unjudged) return { unwritten: 0 }
    // Never caught up (tcpdump starved of CPU, a block the kernel did not hand over): waited as
    // long as the blind wait would, and says how many are missing.
    if (Date.now() >= deadline) return { unwritten: Math.max(0, target - unjudged - written) }
    if (await pause(POLL_MS)) return exited
    counts = await askCounts(child, output)
    if (counts === null) return output.exit !== undefined ? exited : null
  }
  return { unwritten: 0 }
}

/** Sends SIGUSR1 and resolves with the counts tcpdump prints for it (null: no answer, or it exited). */
function askCounts(child: ChildProcess, output: Output): Promise<Counts | null> {
  const before = [...output.stderr.matchAll(COUNTS_LINE)].length
  return new Promise((resolve) => {
    const done = (c: Counts | null): void => {
      clearTimeout(timer)
      child.stderr?.off('data', check)
      resolve(c)
    }
    const check = (): void => {
      const lines = [...output.stderr.matchAll(COUNTS_LINE)]
      const m = lines.length > before ? lines[lines.length - 1] : undefined
      if (m !== undefined) done({ captured: Number(m[1]), received: Number(m[2]), dropped: Number(m[3]) })
    }
    // After the output's own listener (registered first), so the line is already in output.stderr.
    child.stderr?.on('data', check)
    const timer = setTimeout(() => done(null), STATS_ANSWER_MS)
    void output.closed.then(() => done(null))
    try {
      child.kill('SIGUSR1')
    } catch {
      done(null)
    }
  })
}

/** Waits until tcpdump has had its chance to write the last block (or has exited). */
async function flushed(file: string, output: Output): Promise<void> {
  const exited = output.closed.then(() => true)
  const pause = (ms: number): Promise<boolean> => Promise.race([exited, new Promise<boolean>((r) => setTimeout(() => r(false), ms))])
  if (await pause(FLUSH_DELAY_MS)) return
  const size = (): number => { try { return statSync(file).size } catch { return -1 } }
  const deadline = Date.now() + SETTLE_LIMIT_MS
  let last = size()
  while (Date.now() < deadline) {
    if (await pause(SETTLE_MS)) return
    const now = size()
    if (now === last) return
    last = now
  }
}

/** SIGTERM, SIGKILL after the grace period; resolves with what tcpdump said once it has exited. */
function terminate(child: ChildProcess, output: Output): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; exitedBefore: boolean }> {
  const exitedBefore = output.exit !== undefined
  if (!exitedBefore) child.kill('SIGTERM')
  const killer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS)
  return output.closed.then(() => {
    clearTimeout(killer)
    return { code: child.exitCode, signal: child.signalCode, stdout: output.stdout, stderr: output.stderr, exitedBefore }
  })
}

function parseStats(stderr: string): CaptureStats {
  const count = (what: string): number | undefined => {
    const m = new RegExp(`^(\\d+) packets? ${what}$`, 'm').exec(stderr)
    return m ? Number(m[1]) : undefined
  }
  return { captured: count('captured'), receivedByFilter: count('received by filter'), droppedByKernel: count('dropped by kernel') }
}

function resolveBinary(bin: string): string | undefined {
  const candidates = bin.includes('/') ? [bin] : (process.env.PATH ?? '/usr/sbin:/usr/bin').split(':').concat('/usr/sbin', '/sbin').map((d) => path.join(d, bin))
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK)
      return c
    } catch { /* next */ }
  }
  return undefined
}

function tail(s: string): string {
  const t = s.trim()
  return t.length > 1000 ? `…${t.slice(-1000)}` : t
}
