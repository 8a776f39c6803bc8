// A real "guest" for tests that need one without a VM: a Linux network namespace joined to the host
// by a veth pair, plus a tiny fake internet (a DNS server answering every A query with one address,
// and an HTTP server) that the guest reaches through its default route. The host side of the veth
// is the capture interface, so tcpdump, the result server and the agent client see exactly the
// traffic a bridged VM would produce. Processes run inside with a private /tmp (two guests' analyzers
// must not see each other's files) and a resolv.conf pointing at the fake DNS server.
//
// Names and addresses: index N (1..60) → namespace `<prefix>N`, host-side veth `<prefix>Nh`,
// guest-side veth `<prefix>Ng`, 10.204.N.1 (host) ↔ 10.204.N.2 (guest), 10.204.N.254 = "internet"
// (a second address on the host side). Needs root (ip netns, mount). Indexes in use, so parallel
// test files never share a subnet: 1-2 engine e2e, 3 doctor, 4-7 bench/engine-overhead, 8 UI e2e,
// 9 dispatcher real analysis, 11-13 this fixture's tests, 14-15 capture tests, 16 network
// processing, 17 the IDS step (processing/suricata), 19 bench/capture, 21-24 recovery of physical guests, 25 the benign corpus, 26 its
// Windows runs (Wine), 30-45 hostile agents, 50-53 bench/hostile-agent, 54-55 the Windows
// builder's Wine guests, 59 route fallback (e2e/route-fallback.test.ts), 20 process memory
// (e2e/procmem.test.ts) and 46 its Wine run (e2e/procmem-wine.test.ts).
import { execFile, spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { chmodSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { connect } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import dnsPacket from 'dns-packet'

const run = promisify(execFile)

export interface HttpRequestRecord {
  method: string
  url: string
  host: string | undefined
  ua: string | undefined
}

export interface ExecOptions {
  env?: NodeJS.ProcessEnv
  cwd?: string
  /** Default: stdin ignored, stdout and stderr piped. */
  stdio?: StdioOptions
}

export interface NetnsGuest {
  /** Namespace name, e.g. `avng1`. */
  ns: string
  /** Host side of the veth: where to capture. */
  hostIf: string
  hostIp: string
  guestIp: string
  /** "The internet": a second address on the host side; the fake DNS and HTTP servers listen here. */
  internetIp: string
  /** Host folder bind-mounted on the guest's /tmp (its processes' /tmp, readable from the host). */
  tmpDir: string
  /** Every question name the DNS server saw (A and AAAA lookups of one name both appear). */
  dns: { queries: string[]; questions: { name: string; type: string }[] }
  http: { requests: HttpRequestRecord[] }
  /** Spawn inside the namespace with the guest's private /tmp. Runs in its own process group. */
  exec(cmd: string[], opts?: ExecOptions): ChildProcess
  /** exec() an agent and wait until guestIp:port (default 8000) accepts connections. */
  startAgent(cmd: string[], opts?: ExecOptions & { port?: number; timeoutMs?: number }): Promise<ChildProcess>
  /** Kill every process inside, stop the fake internet, delete namespace, veth, /etc/netns/<ns>, tmpDir. */
  close(): Promise<void>
}

export interface NetnsGuestOptions {
  /** 1..60: picks 10.204.<index>.0/24 and the names. */
  index: number
  /** Name prefix, default 'avng'. At most 9 characters (interface names are ≤ 15). */
  prefix?: string
}

/** Tail of a process's output kept for error messages. */
const TAIL_CHARS = 2000

export async function createNetnsGuest(o: NetnsGuestOptions): Promise<NetnsGuest> {
  if (!Number.isInteger(o.index) || o.index < 1 || o.index > 60) throw new Error(`netns guest index must be 1..60, got ${o.index}`)
  const prefix = o.prefix ?? 'avng'
  const ns = `${prefix}${o.index}`
  const hostIf = `${ns}h`
  const guestIf = `${ns}g`
  if (guestIf.length > 15) throw new Error(`netns guest prefix too long for an interface name: ${guestIf}`)
  const net = `10.204.${o.index}`
  const hostIp = `${net}.1`
  const guestIp = `${net}.2`
  const internetIp = `${net}.254`
  const etcDir = path.join('/etc/netns', ns)
  const tmpDir = path.join(tmpdir(), 'aviary-netns', ns)

  await removeLeftovers(ns, hostIf, etcDir, tmpDir)

  const children = new Set<ChildProcess>()
  let udp: UdpSocket | undefined
  let http: HttpServer | undefined
  const dns: NetnsGuest['dns'] = { queries: [], questions: [] }
  const httpLog: NetnsGuest['http'] = { requests: [] }

  const close = async (): Promise<void> => {
    for (const child of children) killGroup(child)
    children.clear()
    await new Promise<void>((resolve) => (udp ? udp.close(() => resolve()) : resolve())).catch(() => undefined)
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()))
    http?.closeAllConnections()
    await removeLeftovers(ns, hostIf, etcDir, tmpDir)
  }

  try {
    await ip('netns', 'add', ns)
    await ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', guestIf)
    await ip('link', 'set', guestIf, 'netns', ns)
    await ip('addr', 'add', `${hostIp}/24`, 'dev', hostIf)
    await ip('addr', 'add', `${internetIp}/24`, 'dev', hostIf)
    await ip('link', 'set', hostIf, 'up')
    await ip('-n', ns, 'link', 'set', 'lo', 'up')
    await ip('-n', ns, 'addr', 'add', `${guestIp}/24`, 'dev', guestIf)
    await ip('-n', ns, 'link', 'set', guestIf, 'up')
    await ip('-n', ns, 'route', 'add', 'default', 'via', hostIp)
    // `ip netns exec` bind-mounts every file of /etc/netns/<ns>/ over its /etc/ twin.
    mkdirSync(etcDir, { recursive: true })
    writeFileSync(path.join(etcDir, 'resolv.conf'), `nameserver ${internetIp}\n`)
    mkdirSync(tmpDir, { recursive: true })
    chmodSync(tmpDir, 0o1777)
    udp = await startDns(internetIp, dns)
    http = await startHttp(internetIp, httpLog)
  } catch (err) {
    await close()
    throw err
  }

  const exec = (cmd: string[], opts: ExecOptions = {}): ChildProcess => {
    const child = spawnIsolated(ns, tmpDir, cmd, opts)
    children.add(child)
    child.once('exit', () => children.delete(child))
    return child
  }

  const startAgent = async (cmd: string[], opts: ExecOptions & { port?: number; timeoutMs?: number } = {}): Promise<ChildProcess> => {
    const port = opts.port ?? 8000
    const deadline = Date.now() + (opts.timeoutMs ?? 30_000)
    const child = exec(cmd, opts)
    let tail = ''
    const keep = (b: Buffer): void => { tail = (tail + b.toString()).slice(-TAIL_CHARS) }
    child.stdout?.on('data', keep)
    child.stderr?.on('data', keep)
    let exited: string | undefined
    child.once('exit', (code, signal) => { exited = `exited (${signal ?? code})` })
    while (!(await accepts(guestIp, port))) {
      if (exited) throw new Error(`agent ${cmd.join(' ')} ${exited} before ${guestIp}:${port} accepted: ${tail.trim()}`)
      if (Date.now() > deadline) {
        killGroup(child)
        throw new Error(`agent ${cmd.join(' ')} did not listen on ${guestIp}:${port} in time: ${tail.trim()}`)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    return child
  }

  return { ns, hostIf, hostIp, guestIp, internetIp, tmpDir, dns, http: httpLog, exec, startAgent, close }
}

/**
 * Spawns `cmd` in network namespace `ns` with `tmpDir` as its private /tmp (and empty private
 * /dev/shm and /var/tmp, a private copy of /etc in `<tmpDir>-etc`, and a private home folder in
 * `<tmpDir>-home`), and each [source, target] of `binds` mounted over target (a private copy of a
 * system folder, say). In its own process group.
 */
export function spawnIsolated(ns: string, tmpDir: string, cmd: string[], opts: ExecOptions = {}, binds: [string, string][] = []): ChildProcess {
  if (cmd.length === 0) throw new Error('exec: empty command')
  // ip netns exec already gives the command its own mount namespace; unshare -m with private
  // propagation makes sure the binds can never leak to the host. The shell only mounts and
  // execs: the command and the folders are positional arguments, never part of the script text.
  // Folders under /tmp that must stay visible (the project itself when it is checked out under
  // /tmp, as a CI clone may be) are bound into the private /tmp at the same place first.
  const project = opts.cwd ?? process.cwd()
  // The project is then in the guest's /tmp, which the analyzer watches: the folders other test
  // files write into while this guest runs (the QEMU test guest's files, UI screenshots) are
  // covered by an empty tmpfs there, or their changes would be this guest's dropped files.
  const tmp = privateView('/tmp', tmpDir, project)
  // The home folder, which the analyzer watches too, is the guest's own as well: other test files'
  // programs write into the host's meanwhile (Chromium its crash reporter's settings.dat under
  // ~/.config, which showed up as a physical guest's dropped file). A project checked out under
  // it stays visible the same way, and its outputs masked.
  const home = homedir()
  const homeDir = `${tmpDir}-home`
  const own = privateView(home, homeDir, project)
  const script =
    // A VM has its own /etc too: without it, what other tests write there meanwhile (libvirt's
    // domain and network XML, say) shows up as this guest's dropped files. The guest's copy is
    // made here, inside `ip netns exec`, so it holds the guest's resolv.conf; once, beside its
    // /tmp (the rename makes a second exec racing the first keep one copy).
    'e="$0-etc"; [ -d "$e" ] || { cp -a /etc "$e.$$" && { mv -T "$e.$$" "$e" 2>/dev/null || rm -rf "$e.$$"; }; }; mount --bind "$e" /etc || exit 1; ' +
    'n=$1; shift; while [ "$n" -gt 0 ]; do mount --bind "/tmp/$1" "$0/$1" || exit 1; shift; n=$((n-1)); done; ' +
    'k=$1; shift; while [ "$k" -gt 0 ]; do mount -t tmpfs -o size=1m tmpfs "$0/$1" || exit 1; shift; k=$((k-1)); done; ' +
    'H=$1; P=$2; shift 2; j=$1; shift; while [ "$j" -gt 0 ]; do mount --bind "$H/$1" "$P/$1" || exit 1; shift; j=$((j-1)); done; ' +
    'mount --rbind "$P" "$H" || exit 1; ' +
    'k=$1; shift; while [ "$k" -gt 0 ]; do mount -t tmpfs -o size=1m tmpfs "$H/$1" || exit 1; shift; k=$((k-1)); done; ' +
    'm=$1; shift; while [ "$m" -gt 0 ]; do mount --bind "$1" "$2" || exit 1; shift 2; m=$((m-1)); done; ' +
    // A VM has its own /dev/shm and /var/tmp too: without them, files other tests (PostgreSQL's
    // shared memory, a kvm guest's XML) make there meanwhile show up as this guest's dropped files.
    'mount --rbind "$0" /tmp && mount -t tmpfs -o size=64m tmpfs /dev/shm && mount -t tmpfs -o size=64m tmpfs /var/tmp && exec "$@"'
  const argv = ['netns', 'exec', ns, 'unshare', '-m', '--propagation', 'private',
    'sh', '-c', script, tmpDir, String(tmp.keep.length), ...tmp.keep, String(tmp.masks.length), ...tmp.masks,
    home, homeDir, String(own.keep.length), ...own.keep, String(own.masks.length), ...own.masks, String(binds.length), ...binds.flat(), ...cmd]
  // Nor does it get the host's TMPDIR: the test run's is a folder of the host's /tmp, which the
  // guest's own /tmp replaces, so its programs would find no such folder.
  const { TMPDIR: _hostTmp, ...env } = opts.env ?? process.env
  return spawn('ip', argv, {
    detached: true,
    env,
    cwd: opts.cwd,
    stdio: opts.stdio ?? ['ignore', 'pipe', 'pipe']
  })
}

/** Folders of the project that test files write into while others run (see spawnIsolated). */
const PROJECT_OUTPUTS = ['out/test-guest', 'test-results']

/**
 * What a guest's private copy (`privateDir`) of the host folder `base` needs: the project folder
 * relative to `base` when it is under it (`keep`, made in `privateDir` to be bound there), and its
 * folders other test files write into (`masks`, made in `base` to be covered by an empty tmpfs).
 */
function privateView(base: string, privateDir: string, project: string): { keep: string[]; masks: string[] } {
  mkdirSync(privateDir, { recursive: true })
  const keep = visibleUnder(base, project)
  for (const rel of keep) mkdirSync(path.join(privateDir, rel), { recursive: true })
  const masks = keep.flatMap((rel) => PROJECT_OUTPUTS.map((o) => path.join(rel, o)))
  for (const m of masks) mkdirSync(path.join(realpathSync(base), m), { recursive: true })
  return { keep, masks }
}

/** The project folder relative to `base`, if it is under it. */
function visibleUnder(base: string, dir: string): string[] {
  const rel = path.relative(realpathSync(base), realpathSync(dir))
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? [rel] : []
}

export async function ip(...args: string[]): Promise<void> {
  try {
    await run('ip', args)
  } catch (err) {
    const e = err as { stderr?: string; message: string }
    throw new Error(`ip ${args.join(' ')}: ${(e.stderr ?? e.message).trim()}`, { cause: err })
  }
}

/** Whatever a previous (possibly crashed) run with the same names left behind. */
async function removeLeftovers(ns: string, hostIf: string, etcDir: string, tmpDir: string): Promise<void> {
  const pids = await run('ip', ['netns', 'pids', ns]).then((r) => r.stdout.split(/\s+/).filter(Boolean), () => [])
  for (const pid of pids) {
    try { process.kill(Number(pid), 'SIGKILL') } catch { /* already gone */ }
  }
  // SIGKILL is delivered asynchronously: wait (briefly) until each is gone or a zombie.
  const deadline = Date.now() + 3000
  while (pids.some((pid) => alive(Number(pid))) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  await run('ip', ['netns', 'del', ns]).catch(() => undefined)
  await run('ip', ['link', 'del', hostIf]).catch(() => undefined)
  rmSync(etcDir, { recursive: true, force: true })
  rmSync(tmpDir, { recursive: true, force: true })
  rmSync(`${tmpDir}-etc`, { recursive: true, force: true })
  rmSync(`${tmpDir}-home`, { recursive: true, force: true })
  // The copy of /etc an exec was making when it was killed (close() kills what still runs, and a
  // test's fire-and-forget exec may still be copying): `<tmpDir>-etc.<its pid>`.
  const copying = `${path.basename(tmpDir)}-etc.`
  mkdirSync(path.dirname(tmpDir), { recursive: true }) // absent the first time under a new TMPDIR
  for (const f of readdirSync(path.dirname(tmpDir)).filter((n) => n.startsWith(copying))) rmSync(path.join(path.dirname(tmpDir), f), { recursive: true, force: true })
}

/** The process exists and is not a zombie. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try { process.kill(-child.pid, 'SIGKILL') } catch { child.kill('SIGKILL') }
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port })
    const done = (ok: boolean): void => { s.destroy(); resolve(ok) }
    s.setTimeout(1000, () => done(false))
    s.once('connect', () => done(true))
    s.once('error', () => done(false))
  })
}

/** A DNS server answering every A question with `answerIp` (other types: no records, NOERROR). */
function startDns(answerIp: string, log: NetnsGuest['dns']): Promise<UdpSocket> {
  const sock = createSocket('udp4')
  sock.on('message', (msg, rinfo) => {
    let query: dnsPacket.Packet
    try { query = dnsPacket.decode(msg) } catch { return }
    const questions = query.questions ?? []
    for (const q of questions) {
      log.queries.push(q.name)
      log.questions.push({ name: q.name, type: q.type })
    }
    const reply = dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
      questions,
      answers: questions.filter((q) => q.type === 'A').map((q) => ({ type: 'A' as const, name: q.name, ttl: 60, data: answerIp }))
    })
    sock.send(reply, rinfo.port, rinfo.address)
  })
  return new Promise((resolve, reject) => {
    sock.once('error', reject)
    sock.bind(53, answerIp, () => { sock.off('error', reject); resolve(sock) })
  })
}

/** An HTTP server answering 200 with a small body to everything, recording each request. */
function startHttp(ip: string, log: NetnsGuest['http']): Promise<HttpServer> {
  const server = createHttpServer((req, res) => {
    log.requests.push({ method: req.method ?? '', url: req.url ?? '', host: req.headers.host, ua: req.headers['user-agent'] })
    req.resume()
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('aviary fake internet\n')
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(80, ip, () => { server.off('error', reject); resolve(server) })
  })
}
