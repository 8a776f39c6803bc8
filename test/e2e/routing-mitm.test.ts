// mitm=1 with real parts (test/guests/routed-lab.ts, index 3): the rooter as root and `aviary
// serve` as nobody in the lab's host namespace, guests on its bridge running the real agent and
// analyzer, Debian's mitmdump, an upstream namespace playing the internet with its own HTTPS
// server. Judged from outside: what the upstream served and the report shows decrypted, what the
// guest itself saw (its samples write what they saw into a file the analyzer uploads), the
// guest's trust store as files on the host, and the processes of the host namespace.
//   - two mitm=1 tasks submitted together on a fresh data folder are both decrypted (one CA);
//   - the guest's trust store is exactly as before after the run, names no tool while it runs,
//     and is no dropped file; a sample's own root CA stays in it and in the report;
//   - a 20 s task with a 20 s critical timeout completes (the trust store's changes take
//     milliseconds, outside the analysis window);
//   - kill -9 of the service during a mitm=1 run leaves no mitmdump; a restarted service ends one
//     left anyway, and the run, queued again, is decrypted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chownSync, existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { createRoutedLab, type RoutedLab } from '../guests/routed-lab'
import { stages, submitFile, waitForTask } from './e2e-helpers'

const FINAL = ['reported', 'failed_analysis', 'failed_processing']
const NOBODY = 65534

/**
 * A Python sample that fetches https://upstream.example/<tag> with the system's trust (no
 * verification turned off), says who issued the certificate it was shown and what the trust
 * store holds while it runs, then, the first time only when `sleepFirst` is set, sleeps.
 */
function sample(tag: string, o: { sleep?: number; sleepOnce?: boolean } = {}): string {
  return `import json, os, re, socket, ssl, subprocess, time, urllib.request
R = {}
try:
    ctx = ssl.create_default_context()
    with socket.create_connection(('upstream.example', 443), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname='upstream.example') as t:
            R['issuer'] = ', '.join('%s=%s' % kv for rdn in t.getpeercert()['issuer'] for kv in rdn)
    R['body'] = urllib.request.urlopen('https://upstream.example/${tag}', timeout=10).read().decode()
except Exception as e:
    R['error'] = repr(e)
subjects = subprocess.run('openssl crl2pkcs7 -nocrl -certfile /etc/ssl/certs/ca-certificates.crt | openssl pkcs7 -print_certs -noout',
    shell=True, capture_output=True, text=True).stdout
R['bundle_certs'] = subjects.count('subject=')
R['bundle_naming_tool'] = [l for l in subjects.splitlines() if re.search('mitm|aviary', l, re.I)]
R['store_naming_tool'] = [os.path.join(d, f) for top in ('/etc/ssl', '/usr/local/share/ca-certificates') for d, _, fs in os.walk(top) for f in fs
    if re.search('mitm|aviary', f, re.I)]
R['cert_files_naming_tool'] = [os.path.join(d, f) for d, _, fs in os.walk('/tmp') for f in fs
    if re.search(r'\\.(pem|crt|cer|hash)$', f) and re.search('mitm|aviary', f, re.I)]
json.dump(R, open('/tmp/mitm-${tag}.json', 'w'))
${o.sleep === undefined ? '' : o.sleepOnce === true
    ? `if not os.path.exists('/tmp/slept-${tag}'):\n    open('/tmp/slept-${tag}', 'w').close()\n    time.sleep(${o.sleep})\n`
    : `time.sleep(${o.sleep})\n`}`
}

/** Every file, link and folder of a tree, with what tells one state from another (mtimes to the nanosecond). */
function treeState(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name)
      const st = lstatSync(p, { bigint: true })
      const rel = path.relative(root, p)
      if (st.isSymbolicLink()) out[rel] = `link ${readlinkSync(p)}`
      else if (st.isDirectory()) {
        out[rel] = `dir mtime ${st.mtimeNs}`
        walk(p)
      } else out[rel] = `file ino ${st.ino} size ${st.size} mtime ${st.mtimeNs} sha256 ${createHash('sha256').update(readFileSync(p)).digest('hex')}`
    }
  }
  out['.'] = `dir mtime ${statSync(root, { bigint: true }).mtimeNs}`
  walk(root)
  return out
}

/** The pids of this host's mitmdumps started on a confdir. */
function proxiesOf(confdir: string): number[] {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0')
      return args.some((a) => a.endsWith('mitmdump')) && args.includes(`confdir=${confdir}`)
    } catch {
      return false
    }
  }).map(Number)
}

const alive = (pid: number): boolean => {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('mitm=1, with the rooter as root and the service as nobody', () => {
  let lab: RoutedLab
  let s: { proc: ChildProcess; url: string }
  let dataDir: string
  let confdir: string

  beforeAll(async () => {
    lab = await createRoutedLab({ index: 3, guests: 2 })
    for (const g of lab.guests) await g.startAgent()
    await lab.startRooter()
    dataDir = lab.dataDir({
      driver: 'physical',
      tcpdump: lab.tcpdump,
      resultserver: { port: 0 },
      screenshots: { interval: 0 },
      timeouts: { critical: 20 },
      routing: { default: 'none', rooter: path.join(lab.dir, 'rooter.sock'), internet: { interface: 'up0' } },
      machines: lab.guests.map((g, i) => ({ name: `lab${i}`, ip: g.ip, platform: 'linux', interface: g.hostIf, resultserver_ip: lab.bridgeIp }))
    })
    confdir = path.join(dataDir, 'mitm')
    s = await lab.serve(dataDir)
  }, 120_000)

  afterAll(async () => {
    await lab?.close()
  }, 60_000)

  type Report = {
    network: { https_ex: { uri: string; status: number; response_body: string }[]; mitm: string[] }
    dropped: { filepath: string; path: string }[]
    behavior?: { summary?: Record<string, unknown> }
  }
  const view = async (id: number): Promise<{ status: string; errors: string[] }> =>
    ((await (await fetch(`${s.url}/tasks/view/${id}`)).json()) as { task: { status: string; errors: string[] } }).task
  const report = async (id: number): Promise<Report> => (await (await fetch(`${s.url}/tasks/report/${id}/json`)).json()) as Report
  const analysisFile = (id: number, f: string): string => path.join(dataDir, 'storage', 'analyses', String(id), f)
  /** What the sample saw (its result file, uploaded as a dropped file). */
  const seen = (id: number, tag: string): Record<string, unknown> => {
    const dir = analysisFile(id, 'files')
    const f = readdirSync(dir).find((n) => n.endsWith(`_mitm-${tag}.json`))
    if (!f) throw new Error(`task ${id} uploaded no result: ${readdirSync(dir).join(', ')}`)
    return JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as Record<string, unknown>
  }
  const bundleCerts = (guest: number): number =>
    (readFileSync(path.join(lab.dir, `guest${guest}`, 'etc-ssl', 'certs', 'ca-certificates.crt'), 'utf8').match(/-----BEGIN CERTIFICATE-----/g) ?? []).length
  /** The task was decrypted: the upstream's answer, in the report and as the sample got it. */
  const expectDecrypted = async (id: number, tag: string, guest: number): Promise<void> => {
    const got = seen(id, tag)
    expect(got.error, JSON.stringify(got)).toBeUndefined()
    expect(got.body).toBe(`upstream answers ${lab.natIp}\n`)
    expect(lab.seen('upstream').some((e) => e.path === `/${tag}` && e.client === lab.natIp)).toBe(true)
    const r = await report(id)
    const ex = r.network.https_ex.find((e) => e.uri === `https://upstream.example/${tag}`)
    expect(ex, JSON.stringify(r.network)).toMatchObject({ status: 200, response_body: `upstream answers ${lab.natIp}\n` })
    expect(r.network.mitm).toEqual([])
    // What the guest was shown and what its trust store held meanwhile name no tool.
    expect(got.issuer).toMatch(/^organizationName=.+, commonName=Root CA [0-9A-F]{4}$/)
    expect(got).toMatchObject({ bundle_naming_tool: [], store_naming_tool: [], cert_files_naming_tool: [] })
    expect(got.bundle_certs).toBe(bundleCerts(guest) + 1)
  }

  it('two tasks submitted together on a fresh data folder are both decrypted: one CA, made before either proxy', async () => {
    expect(existsSync(confdir)).toBe(false)
    const ids = await Promise.all(['both0', 'both1'].map((tag, i) =>
      submitFile(s, `${tag}.py`, sample(tag), { machine: `lab${i}`, options: 'route=internet,mitm=1', timeout: '60' })))
    for (const id of ids) expect(await waitForTask(s, id, FINAL, 150_000)).toBe('reported')
    for (const [i, id] of ids.entries()) {
      expect((await view(id)).errors).toEqual([])
      await expectDecrypted(id, `both${i}`, i)
    }
    expect(readdirSync(confdir).sort()).toEqual(['mitmproxy-ca-cert.pem', 'mitmproxy-ca.pem', 'mitmproxy-dhparam.pem', 'pids'])
    expect(readdirSync(path.join(confdir, 'pids'))).toEqual([])
    expect(proxiesOf(confdir)).toEqual([])
  }, 240_000)

  it('the guest\'s trust store is exactly as before, and none of its files is reported as the sample\'s', async () => {
    const store = path.join(lab.dir, 'guest0', 'etc-ssl')
    const before = treeState(store)
    const id = await submitFile(s, 'store.py', sample('store'), { machine: 'lab0', options: 'route=internet,mitm=1', timeout: '60' })
    expect(await waitForTask(s, id, FINAL, 150_000)).toBe('reported')
    await expectDecrypted(id, 'store', 0)
    // The analyzer's log says whether it trusted the CA, ended, and undid it (for a failure's message).
    expect(treeState(store), readFileSync(analysisFile(id, 'analysis.log'), 'utf8').slice(-4000)).toEqual(before)
    const r = await report(id)
    // (Lab guests share the host's other folders, where other tests' programs write meanwhile:
    // only what is about the trust store is judged.)
    const paths = r.dropped.map((d) => d.filepath)
    expect(paths).toContainEqual(expect.stringMatching(/\/mitm-store\.json$/))
    expect(paths.filter((p) => /^\/etc\/|^\/usr\/local\/share\/ca-certificates|ca-certificates|cacerts/.test(p))).toEqual([])
    // (The sample read the store, which the summary shows; it changed nothing there.)
    const changed = Object.entries(r.behavior?.summary ?? {}).filter(([k]) => /^file_(written|created|deleted|recreated|moved|copied)$/.test(k))
    expect(changed.length).toBeGreaterThan(0)
    expect(JSON.stringify(changed)).not.toMatch(/\/etc\/ssl|ca-certificates|cacerts/)
    const log = readFileSync(analysisFile(id, 'analysis.log'), 'utf8')
    expect(log).toMatch(/the proxy's CA \(O=.*, CN=Root CA [0-9A-F]{4}\) is trusted for this run: added to \/etc\/ssl\/certs\/ca-certificates\.crt and written as \/etc\/ssl\/certs\/[0-9a-f]{8}\.0 \(\d+ ms\)/)
    expect(log).toMatch(/the proxy's CA is no longer trusted: \/etc\/ssl\/certs\/[0-9a-f]{8}\.0 removed; \/etc\/ssl\/certs\/ca-certificates\.crt restored as it was/)

    // A sample that adds a root CA of its own: that stays, in the store and in the report; ours goes.
    const own = readFileSync(path.join(lab.dir, 'server.crt'), 'utf8')
    const bundle = path.join(store, 'certs', 'ca-certificates.crt')
    const original = readFileSync(bundle, 'utf8')
    const adds = `import urllib.request\nurllib.request.urlopen('https://upstream.example/adds', timeout=10).read()\n` +
      `open('/etc/ssl/certs/ca-certificates.crt', 'a').write('''${own}''')\n`
    const id2 = await submitFile(s, 'adds.py', adds, { machine: 'lab0', options: 'route=internet,mitm=1', timeout: '60' })
    expect(await waitForTask(s, id2, FINAL, 150_000)).toBe('reported')
    expect(readFileSync(bundle, 'utf8')).toBe(original + own)
    const r2 = await report(id2)
    const dropped = r2.dropped.find((d) => d.filepath === '/etc/ssl/certs/ca-certificates.crt')
    expect(dropped, JSON.stringify(r2.dropped.map((d) => d.filepath))).toBeDefined()
    expect(readFileSync(dropped!.path, 'utf8')).toBe(original + own) // the sample's root, not ours
    expect(readdirSync(path.join(store, 'certs')).filter((f) => /^[0-9a-f]{8}\.\d$/.test(f)).sort())
      .toEqual(Object.keys(before).filter((f) => /^certs\/[0-9a-f]{8}\.\d$/.test(f)).map((f) => f.slice(6)).sort())
    writeFileSync(bundle, original)
  }, 240_000)

  it('a 20 s task with a 20 s critical timeout completes: trusting the CA takes nothing from its window', async () => {
    // The sample outlives the timeout, so the window is the whole 20 s. (strace=0: strace's log of a
    // sample still sleeping when the analysis ends stops inside a line, which processing notes.)
    const id = await submitFile(s, 'short.py', sample('short', { sleep: 60 }), { machine: 'lab1', options: 'route=internet,mitm=1,strace=0', timeout: '20' })
    expect(await waitForTask(s, id, FINAL, 150_000)).toBe('reported')
    const t = await view(id)
    expect(t.errors).toEqual([])
    expect(await stages(s, id)).not.toContain('timed_out')
    await expectDecrypted(id, 'short', 1)
    const log = readFileSync(analysisFile(id, 'analysis.log'), 'utf8')
    expect(log).toMatch(/the end was reached \(timeout 20 s, as the host set it\)/)
    const ms = [...log.matchAll(/the proxy's CA (?:\(.*\) is trusted for this run|is no longer trusted): .* \((\d+) ms\)/g)].map((m) => Number(m[1]))
    expect(ms).toHaveLength(2)
  }, 240_000)

  it('kill -9 of the service during a mitm=1 run leaves no mitmdump; the restarted service ends one left anyway and decrypts the run', async () => {
    const id = await submitFile(s, 'long.py', sample('long', { sleep: 60, sleepOnce: true }), { machine: 'lab0', options: 'route=internet,mitm=1', timeout: '90' })
    const deadline = Date.now() + 90_000
    while (!(await stages(s, id)).includes('sample_running')) {
      if (Date.now() > deadline) throw new Error(`task ${id} did not start`)
      await new Promise((r) => setTimeout(r, 200))
    }
    // Killed in the sample's sleep, once it has marked its first run: the run that follows the
    // restart is then the short one. (Killed any earlier, the agent's reset ends the first run
    // before it marks it, and the second sleeps the whole minute.)
    await until('the sample asleep in its first run', () => existsSync(path.join(lab.guests[0]!.tmpDir, 'slept-long')), 60_000)
    const proxies = proxiesOf(confdir)
    expect(proxies).toHaveLength(1)
    s.proc.kill('SIGKILL')
    await new Promise((r) => s.proc.once('exit', r))
    // The kernel ends it with the service (its parent-death signal), not the next service.
    await until('mitmdump gone with the service', () => !proxies.some(alive), 5_000)
    expect(proxiesOf(confdir)).toEqual([])

    // One left anyway (as a service without setpriv would leave it), with its pid kept: the
    // next service on the data folder ends it before any run.
    const left = spawn('ip', ['netns', 'exec', lab.host, 'setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups',
      'mitmdump', '--mode', 'regular', '--listen-host', '127.0.0.1', '--listen-port', '0', '--set', `confdir=${confdir}`],
    { stdio: 'ignore', detached: true, env: { ...process.env, HOME: dataDir } })
    await until('the leftover mitmdump running', () => proxiesOf(confdir).includes(left.pid!), 20_000)
    const pidFile = path.join(confdir, 'pids', String(left.pid))
    writeFileSync(pidFile, 'an earlier run\n')
    chownSync(pidFile, NOBODY, NOBODY)
    s = await lab.serve(dataDir)
    await until('the leftover mitmdump ended by the restarted service', () => !alive(left.pid!), 10_000)

    expect(await waitForTask(s, id, FINAL, 200_000)).toBe('reported')
    expect((await view(id)).errors).toEqual([])
    await expectDecrypted(id, 'long', 0)
    expect(proxiesOf(confdir)).toEqual([])
    expect(readdirSync(path.join(confdir, 'pids'))).toEqual([])
  }, 360_000)
})
