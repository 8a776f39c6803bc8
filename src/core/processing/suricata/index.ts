// The IDS step: Suricata, offline, over the task's dump.pcap (and, for mitm=1 tasks, over the
// proxy's decrypted HTTPS, decrypted-pcap.ts), giving the report's `suricata` section (eve.ts).
// Debian's suricata 7 (bookworm-backports) is run once per pcap as Cuckoo 2.0.7's binary mode does:
//   suricata -c <analysis>/suricata/suricata.yaml -r dump.pcap -l <analysis>/suricata -k none
// with a configuration written per run (below): the rule sets of rulesets.ts, eve.json with
// alert/http/tls (JA3, JA3S)/dns/fileinfo, and checksum validation off. Captures on a host with
// checksum offload carry packets whose checksums the NIC fills in later; `-k none` alone still
// lets the decoder rules flag every one of them ("TCPv4 invalid checksum"), so pcap-file's
// checksum checks are off too, and the noise lists (settings.ts) catch what is left.
// Bounded: a capture larger than max_pcap_size is not given to Suricata; a run longer than
// `timeout` is killed (its process group) and what it wrote so far is reported as partial.
// Skipped, with the reason in `suricata.skipped`: turned off, no capture (and nothing the proxy
// decrypted), Suricata not installed, no rules, settings file wrong.
import { spawn } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { ARTIFACTS, artifactPath } from '../../storage/layout'
import { emptySuricataReport, readEve, type SuricataReport } from './eve'
import { listRuleSets, type RuleSet } from './rulesets'
import { loadSuricataSettings, type SuricataSettings } from './settings'
import { writeDecryptedPcap } from './decrypted-pcap'

export { SuricataSchema, emptySuricataReport, type SuricataReport, type SuricataAlert } from './eve'

/** The folder of an analysis Suricata's files go into (Cuckoo 2's `suricata/`). */
export const SURICATA_DIR = 'suricata'
const DECRYPTED_DIR = 'decrypted'

export interface SuricataStepOptions {
  /** The analysis folder. */
  dir: string
  /** <data>/suricata (settings and imported rule sets), or null: defaults, no imported sets. */
  suricataDir: string | null
  log(msg: string): void
  /** What went wrong (a run that was stopped, a bad exit): the report's debug.errors. */
  errors: string[]
  /** Aviary's own rule file (tests point elsewhere). */
  aviaryRules?: string
}

/** A command's path: as given when it has a slash, else the first match on PATH; null when absent. */
export function findBinary(name: string): string | null {
  if (name.includes('/')) return existsSync(name) ? name : null
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(path.delimiter)) {
    if (dir === '') continue
    const f = path.join(dir, name)
    if (existsSync(f)) return f
  }
  return null
}

/** Suricata's configuration for one run, as JSON (which YAML 1.1 reads as it is). */
export function suricataConfig(o: { ruleFiles: string[]; bundledRules: string | null; logDir: string }): string {
  const etc = o.bundledRules !== null ? path.dirname(o.bundledRules) : '/etc/suricata'
  const config = {
    vars: {
      'address-groups': { HOME_NET: '[10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7]', EXTERNAL_NET: 'any', HTTP_SERVERS: '$HOME_NET', SMTP_SERVERS: '$HOME_NET',
        SQL_SERVERS: '$HOME_NET', DNS_SERVERS: '$HOME_NET', TELNET_SERVERS: '$HOME_NET', AIM_SERVERS: '$EXTERNAL_NET', DC_SERVERS: '$HOME_NET',
        DNP3_SERVER: '$HOME_NET', DNP3_CLIENT: '$HOME_NET', MODBUS_CLIENT: '$HOME_NET', MODBUS_SERVER: '$HOME_NET', ENIP_CLIENT: '$HOME_NET', ENIP_SERVER: '$HOME_NET' },
      'port-groups': { HTTP_PORTS: '80', SHELLCODE_PORTS: '!80', ORACLE_PORTS: '1521', SSH_PORTS: '22', DNP3_PORTS: '20000', MODBUS_PORTS: '502',
        FILE_DATA_PORTS: '[$HTTP_PORTS,110,143]', FTP_PORTS: '21', GENEVE_PORTS: '6081', VXLAN_PORTS: '4789', TEREDO_PORTS: '3544' }
    },
    'default-log-dir': o.logDir,
    'classification-file': path.join(etc, 'classification.config'),
    'reference-config-file': path.join(etc, 'reference.config'),
    'rule-files': o.ruleFiles,
    // Checksums: see the header.
    'pcap-file': { 'checksum-checks': 'no' },
    stream: { 'checksum-validation': 'no' },
    // JA3/JA3S always; the ICS parsers Suricata leaves off by default on, so that the bundled
    // dnp3 and modbus event rules load (and a sample speaking them is seen).
    'app-layer': { protocols: { tls: { 'ja3-fingerprints': 'yes' }, dnp3: { enabled: 'yes', 'detection-ports': { dp: 20000 } },
      modbus: { enabled: 'yes', 'detection-ports': { dp: 502 } } } },
    engine: { 'init-failure-fatal': 'no' },
    outputs: [{
      'eve-log': {
        enabled: 'yes', filetype: 'regular', filename: 'eve.json',
        types: ['alert', { http: { extended: 'yes' } }, { dns: { version: 2 } }, { tls: { extended: 'yes', custom: ['subject', 'issuer', 'fingerprint', 'sni', 'version', 'ja3', 'ja3s'] } },
          { files: { 'force-magic': 'yes', 'force-hash': ['md5', 'sha1', 'sha256'] } }]
      }
    }],
    logging: { 'default-log-level': 'notice', outputs: [{ console: { enabled: 'no' } }, { file: { enabled: 'yes', level: 'info', filename: 'suricata.log' } }] }
  }
  return `%YAML 1.1\n---\n${JSON.stringify(config, null, 1)}\n`
}

interface RunResult { timedOut: boolean; code: number | null; stderr: string }

function runSuricata(binary: string, args: string[], timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a timeout ends Suricata and every thread and child it has.
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    let stderr = ''
    let timedOut = false
    child.stderr.on('data', (b: Buffer) => { if (stderr.length < 64 * 1024) stderr += b.toString() })
    const timer = setTimeout(() => {
      timedOut = true
      try { process.kill(-child.pid!, 'SIGKILL') } catch { /* already gone */ }
    }, timeoutMs)
    child.once('error', (err) => { clearTimeout(timer); reject(err) })
    child.once('close', (code) => { clearTimeout(timer); resolve({ timedOut, code, stderr }) })
  })
}

/** What Suricata's own log says about the run: its version and the rules it loaded. */
async function readRunLog(logDir: string): Promise<{ version: string | null; loaded: number | null; failed: number | null; errors: string[] }> {
  const text = await readFile(path.join(logDir, 'suricata.log'), 'utf8').catch(() => '')
  const version = /This is Suricata version (\S+)/.exec(text)?.[1] ?? null
  let loaded: number | null = null
  let failed: number | null = null
  for (const m of text.matchAll(/(\d+) rules successfully loaded, (\d+) rules failed/g)) {
    loaded = (loaded ?? 0) + Number(m[1])
    failed = (failed ?? 0) + Number(m[2])
  }
  const errors = text.split('\n').filter((l) => / Error: /.test(l)).map((l) => l.replace(/^\[[^\]]*\] \S+ \S+ /, '').slice(0, 300)).slice(0, 5)
  return { version, loaded, failed, errors }
}

async function onePass(o: { binary: string; settings: SuricataSettings; sets: RuleSet[]; pcap: string; logDir: string; source: 'capture' | 'decrypted' },
  report: SuricataReport, step: SuricataStepOptions): Promise<void> {
  await rm(o.logDir, { recursive: true, force: true })
  await mkdir(o.logDir, { recursive: true })
  const yaml = path.join(o.logDir, 'suricata.yaml')
  await writeFile(yaml, suricataConfig({ ruleFiles: o.sets.flatMap((s) => s.files), bundledRules: o.settings.bundledRules, logDir: o.logDir }))
  const started = Date.now()
  const r = await runSuricata(o.binary, ['-c', yaml, '-r', o.pcap, '-l', o.logDir, '-k', 'none'], o.settings.timeout * 1000)
  const what = o.source === 'capture' ? 'the capture' : 'the decrypted traffic'
  const runLog = await readRunLog(o.logDir)
  if (r.timedOut) step.errors.push(`suricata: stopped after ${o.settings.timeout} s on ${what}; its results are partial`)
  else if (r.code !== 0) {
    const why = runLog.errors[0] ?? r.stderr.trim().split('\n').pop() ?? ''
    step.errors.push(`suricata: exited with status ${r.code} on ${what}${why ? `: ${why}` : ''}`)
  }
  if (report.version === null) {
    report.version = runLog.version
    report.rules_loaded = runLog.loaded
    report.rules_failed = runLog.failed
  }
  await readEve(path.join(o.logDir, 'eve.json'), report, { settings: o.settings, source: o.source })
  step.log(`suricata: ${what} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

/** The `suricata` section of one analysis. */
export async function suricataStep(step: SuricataStepOptions): Promise<SuricataReport> {
  let settings: SuricataSettings
  try {
    settings = loadSuricataSettings(step.suricataDir)
  } catch (err) {
    return emptySuricataReport(`the settings are wrong: ${(err as Error).message}`)
  }
  if (!settings.enabled) return emptySuricataReport('turned off (suricata.json: "enabled": false)')
  const pcap = artifactPath(step.dir, ARTIFACTS.pcap)
  const flows = artifactPath(step.dir, ARTIFACTS.mitmFlows)
  // Without a capture, the proxy's decrypted exchanges (a mitm=1 task whose tcpdump failed) are still read.
  const hasPcap = existsSync(pcap)
  if (!hasPcap && !existsSync(flows)) return emptySuricataReport('the task has no packet capture')
  const size = hasPcap ? statSync(pcap).size : 0
  if (size > settings.maxPcapSize) {
    return emptySuricataReport(`the capture (${size} bytes) is larger than max_pcap_size (${settings.maxPcapSize} bytes)`)
  }
  const binary = findBinary(settings.binary)
  if (binary === null) {
    return emptySuricataReport(`Suricata is not installed (no '${settings.binary}'): scripts/install-debian-deps.sh installs it from bookworm-backports`)
  }
  const sets = listRuleSets(step.suricataDir, { bundledRules: settings.bundledRules, ...(step.aviaryRules !== undefined ? { aviaryRules: step.aviaryRules } : {}) })
    .filter((s) => s.rules > 0)
  if (sets.length === 0) return emptySuricataReport('no rules: neither the bundled rules, Aviary\'s own nor an imported set has any')
  const report = emptySuricataReport()
  report.rulesets = sets.map((s) => ({ name: s.name, rules: s.rules }))
  const out = artifactPath(step.dir, ARTIFACTS.suricata)
  if (hasPcap) await onePass({ binary, settings, sets, pcap, logDir: out, source: 'capture' }, report, step)
  else {
    await rm(out, { recursive: true, force: true })
    await mkdir(out, { recursive: true })
    step.log('suricata: no capture; the decrypted traffic only')
  }
  // mitm=1: what the proxy decrypted, as the plain HTTP it was (decrypted-pcap.ts).
  const decrypted = path.join(out, DECRYPTED_DIR)
  const written = await writeDecryptedPcap(flows, path.join(out, 'decrypted.pcap'))
  if (written.flows > 0) {
    await onePass({ binary, settings, sets, pcap: path.join(out, 'decrypted.pcap'), logDir: decrypted, source: 'decrypted' }, report, step)
  }
  if (!hasPcap && written.flows === 0) return emptySuricataReport('the task has no packet capture, and the proxy decrypted nothing')
  return report
}
