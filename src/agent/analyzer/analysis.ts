// One analysis inside the guest: find the sample, start it with its package (under strace where
// available, its output streamed to the host as logs/strace.log: strace-run.ts), watch its process
// tree, files and connections until the tree ends or the timeout passes, optionally kill what is
// left, then upload dropped files and logs/behavior.jsonl.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, lstatSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { which } from '../exec.js'
import { extractZip } from '../zip-extract.js'
import { BEHAVIOR_FORMAT_VERSION, toJsonLines, type AnalyzerRecord, type ConnectionRecord, type FileRecord, type ProcessRecord } from '../../guest-protocol/behavior.js'
import type { AnalysisConfig } from './config.js'
import { uploadDropped } from './dropped.js'
import { diffSnapshots, snapshot, watchedFolders, type Snapshot } from './file-monitor.js'
import type { Monitor } from './monitor.js'
import { uploadFile, type NetlogLog } from './netlog.js'
import { choosePackage, launchFor } from './packages.js'
import { ProcMonitor } from './proc-monitor.js'
import { EXIT_HOLD_US, ProcMemDumper, procMemLimits } from './procmem.js'
import type { StraceResult } from './strace-log.js'
import { startStrace } from './strace-run.js'
import { explainStartError } from './start-error.js'
import { HELPER_EXE, windowsMonitor } from './windows-monitor.js'
import { dumpWindowsProcesses } from './windows-procmem.js'
import { trustProxyCa } from './trust.js'
import { HostDeadline } from './deadline.js'
import { BEHAVIOR_LOG } from '../../guest-protocol/netlog.js'

type Platform = 'linux' | 'windows'
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/**
 * How often the Linux monitor reads /proc. Each poll reads every tracked process's stat, image
 * and descriptors: natively ~4% of a core for a tree of twenty ten times a second, and under
 * emulation (a TCG guest) that was the guest's whole vCPU, which the sample sees and which
 * slows it. Under strace, which sees every fork, exec, exit and connect as it happens, the
 * polling only adds images, exit times and sockets strace did not name, and notices the end of
 * the tree: twice a second does. Without strace, or when the memory dumper needs each process
 * known before strace's 150 ms exit hold ends, ten times a second.
 */
export function pollPeriodMs(traced: boolean, dumpsAtExit: boolean): number {
  return traced && !dumpsAtExit ? 500 : 100
}

/**
 * Archive tasks: the stored sample is a zip; it is unpacked into a fresh folder next to it and the
 * member named by option `filename` (else the first file) is the target, as in Cuckoo.
 */
export async function unpackArchive(zip: string, conf: AnalysisConfig): Promise<string> {
  const into = mkdtempSync(join(dirname(zip), 'archive-'))
  const names = await extractZip(zip, into, conf.options.get('password'))
  const wanted = conf.options.get('filename') ?? names.find((n) => !n.endsWith('/'))
  if (wanted === undefined || !names.includes(wanted)) throw new Error(`archive has no member ${wanted ?? '(no files)'}`)
  return join(into, ...wanted.split('/'))
}

export function findSample(conf: AnalysisConfig): string {
  const explicit = conf.options.get('AVIARY_SAMPLE') ?? conf.options.get('aviary_sample')
  if (explicit !== undefined && explicit !== '') return resolve(explicit)
  const dirs = [process.env.TEMP, process.env.TMP, tmpdir(), process.platform === 'win32' ? undefined : '/tmp']
  for (const d of dirs) {
    if (d === undefined || d === '') continue
    const p = join(d, conf.fileName)
    if (existsSync(p)) return p
  }
  throw new Error(`sample ${conf.fileName} not found in the temporary folder`)
}

/** Sets the guest clock to the task's clock (Linux, root only, only when far off; failures ignored). */
export function setClock(conf: AnalysisConfig, log: NetlogLog): void {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(conf.clock)
  if (m === null || process.platform !== 'linux' || process.getuid?.() !== 0 || conf.options.get('set_clock') === '0') return
  const when = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}`)
  if (Math.abs(when.getTime() - Date.now()) < 120_000) return
  const r = spawnSync('date', ['-s', `${m[1]}-${m[2]}-${m[3]} ${m[4]}:${m[5]}:${m[6]}`], { stdio: 'ignore' })
  log.info(r.status === 0 ? `clock set to ${conf.clock}` : `could not set the clock to ${conf.clock}`)
}

function killTree(platform: Platform, pids: number[], root: number): void {
  if (platform === 'windows') {
    // taskkill /T also ends descendants nobody saw (Windows); Wine refuses /T, so every known
    // process is ended by its pid too (TerminateProcess, without starting a taskkill per pid).
    spawnSync('taskkill', ['/F', '/T', '/PID', String(root)], { stdio: 'ignore', windowsHide: true })
    for (const pid of pids) {
      try {
        process.kill(pid)
      } catch {
        // already gone
      }
    }
    return
  }
  // Tracees first: killing strace first would detach them and let them run on.
  for (const pid of pids.filter((p) => p !== root)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  for (const target of [-root, root]) {
    try {
      process.kill(target, 'SIGKILL')
    } catch {
      // already gone
    }
  }
}

function mergeProcesses(polled: ProcessRecord[], traced: ProcessRecord[]): ProcessRecord[] {
  const byPid = new Map<number, ProcessRecord>(polled.map((p) => [p.pid, { ...p }]))
  for (const t of traced) {
    const p = byPid.get(t.pid)
    if (p === undefined) {
      byPid.set(t.pid, t)
      continue
    }
    if (t.command_line !== '') p.command_line = t.command_line
    p.exe ??= t.exe
    if (t.first_seen > 0) p.first_seen = Math.min(p.first_seen, t.first_seen)
    if (t.exited !== null) p.exited = t.exited
    if (t.exit_code !== undefined) p.exit_code = t.exit_code
  }
  return [...byPid.values()].sort((a, b) => a.first_seen - b.first_seen)
}

function fileRecords(before: Snapshot, after: Snapshot, traced: StraceResult | null, started: number, exclude: string[]): FileRecord[] {
  const now = Date.now()
  const lastPid = traced?.lastPid ?? new Map<string, number>()
  const out: FileRecord[] = diffSnapshots(before, after).map((c) => {
    const r: FileRecord = { type: 'file', op: c.op, path: c.path, time: after.get(c.path)?.mtimeMs ?? now }
    const pid = lastPid.get(c.path)
    if (pid !== undefined) r.pid = pid
    return r
  })
  const known = new Set(out.map((r) => r.path))
  for (const e of traced?.files ?? []) {
    if (known.has(e.path) || /^\/(dev|proc|sys)\//.test(e.path) || exclude.some((x) => e.path.startsWith(x))) continue
    known.add(e.path)
    let exists = false
    let born = 0
    try {
      const st = lstatSync(e.path)
      exists = st.isFile()
      born = st.birthtimeMs || st.ctimeMs
    } catch {
      // gone
    }
    const existed = before.has(e.path)
    if (e.op === 'unlink') {
      out.push({ type: 'file', op: 'deleted', path: e.path, time: e.time, pid: e.pid })
    } else if (exists) {
      out.push({ type: 'file', op: existed || born < started ? 'modified' : 'created', path: e.path, time: e.time, pid: e.pid })
    } else if (!existed) {
      out.push({ type: 'file', op: 'created', path: e.path, time: e.time, pid: e.pid })
      out.push({ type: 'file', op: 'deleted', path: e.path, time: e.time, pid: e.pid })
    }
  }
  return out
}

/** `env` is the sample's environment (main.ts): strace passes it on unchanged, so every execve of the trace shows what the sample gave. */
export async function runAnalysis(conf: AnalysisConfig, log: NetlogLog, analyzerDir: string, env: NodeJS.ProcessEnv): Promise<AnalyzerRecord> {
  const platform: Platform = process.platform === 'win32' ? 'windows' : 'linux'
  setClock(conf, log)
  const stored = conf.category === 'url' ? conf.target : findSample(conf)
  const target = conf.category === 'archive' ? await unpackArchive(stored, conf) : stored
  const pkg =
    conf.package ||
    conf.options.get('package') ||
    (conf.category === 'url' ? 'browser' : choosePackage(platform, basename(target), conf.category === 'archive' ? '' : conf.fileType))
  const launch = launchFor(platform, pkg, target, conf.options)
  log.info(`target ${target}, package ${launch.package}`)

  const exclude = [resolve(analyzerDir)]
  const sampleDir = conf.category === 'url' ? null : dirname(target)
  const folders = watchedFolders(platform, sampleDir)
  const limits = { maxDepth: Number(conf.options.get('files_depth') ?? 4), maxEntries: Number(conf.options.get('files_max') ?? 20_000), exclude }
  const t0 = Date.now()
  const before = snapshot(folders, limits)
  log.info(`watching ${folders.join(', ')} (${before.size} files, listed in ${Date.now() - t0} ms)`)

  const strace = platform === 'linux' && conf.options.get('strace') !== '0' ? which(['strace']) : null
  // strace's output streams to the result server (logs/strace.log) while the sample runs.
  // Process memory (procmem.ts): Linux, where strace holds exits for the dumper.
  const memLimits = platform === 'linux' && strace !== null ? procMemLimits(conf.options) : null
  const dumper = memLimits !== null ? new ProcMemDumper(conf, memLimits, log) : null
  const winMemLimits = platform === 'windows' ? procMemLimits(conf.options) : null
  const trace = strace !== null ? startStrace(strace, conf, analyzerDir, log, dumper !== null ? EXIT_HOLD_US : undefined) : null
  // Windows: the helper watches before the sample starts, so that no early child is missed.
  const winMon = platform === 'windows' ? windowsMonitor(analyzerDir) : null
  const monitors = [winMon?.kind ?? 'proc', 'files', ...(strace !== null ? ['strace'] : [])]
  const [file, args] = trace !== null ? [trace.file, [...trace.args, '--', launch.file, ...launch.args]] : [launch.file, launch.args]
  const untrust = trustProxyCa(analyzerDir, log)
  // Trusted before the analysis clock starts (`started`) and undone after it stops (`ended`): it
  // takes milliseconds and counts against no timeout. Also undone when the analysis fails on the
  // way: the CA never outlives the run.
  if (untrust !== null) process.once('exit', untrust)
  if (winMon !== null) {
    winMon.start()
    await winMon.ready()
  }
  const started = Date.now()
  const record: AnalyzerRecord = {
    type: 'analyzer', version: BEHAVIOR_FORMAT_VERSION, task: conf.id, package: launch.package, platform, category: conf.category,
    target, pid: null, started, ended: started, reason: 'tree-ended', monitors
  }
  const child = spawn(file, args, {
    cwd: sampleDir ?? tmpdir(),
    env,
    detached: true,
    stdio: 'ignore',
    windowsHide: false,
    windowsVerbatimArguments: launch.verbatim === true
  })
  const spawned = await new Promise<boolean>((ok) => {
    child.once('spawn', () => ok(true))
    child.once('error', (err) => {
      log.error(`could not start ${launch.file}: ${err.message}`)
      record.error = err.message
      ok(false)
    })
  })
  let rootRunning = spawned
  trace?.started(spawned ? child : null)
  child.once('exit', (code) => {
    rootRunning = false
    winMon?.rootExited(code)
  })
  const root = child.pid ?? -1
  const monitor: Monitor = winMon ?? new ProcMonitor(root, strace !== null, pollPeriodMs(strace !== null, dumper !== null))
  if (spawned) {
    log.info(`started ${[launch.file, ...launch.args].join(' ')} as pid ${root}${strace !== null ? ' under strace' : ''}`)
    // Quoted as Windows quotes a program with blanks in its path, so its name reads back right.
    const program = /\s/.test(launch.file) ? `"${launch.file}"` : launch.file
    if (winMon !== null) winMon.setRoot(root, { command_line: [program, ...launch.args].join(' '), exe: launch.file })
    else monitor.start()
    if (dumper !== null && trace !== null) dumper.watchExits(root, () => monitor.alive())
    // The host may move the end (Extend, Finish now): deadline.ts.
    const deadline = new HostDeadline(analyzerDir, started + conf.timeout * 1000)
    record.reason = 'timeout'
    while (Date.now() < deadline.current()) {
      await sleep(100)
      if (!conf.enforceTimeout && !rootRunning && monitor.alive().length === 0) {
        record.reason = 'tree-ended'
        break
      }
    }
    log.info(record.reason === 'timeout' ? `the end was reached (timeout ${conf.timeout} s, as the host set it)` : 'the process tree has ended')
    dumper?.dumpAll(monitor.alive().filter((p) => p !== root))
    if (winMon?.kind === 'winmon' && winMemLimits !== null) {
      const n = await dumpWindowsProcesses(join(analyzerDir, HELPER_EXE), monitor.alive(), conf, winMemLimits, log)
      if (n > 0) log.info(`${n} process memory dump(s) uploaded`)
    }
    if (conf.terminateProcesses) {
      const pids = monitor.alive()
      log.info(`terminating ${pids.length} remaining process(es)`)
      killTree(platform, pids, root)
      for (let i = 0; i < 20 && (rootRunning || monitor.alive().length > 0); i++) await sleep(100)
    }
    if (winMon === null) monitor.stop()
  } else {
    record.reason = 'start-failed'
  }
  if (winMon !== null) {
    await winMon.finish()
    for (const note of winMon.notes()) log.warning(note)
  }
  record.ended = Date.now()
  untrust?.()

  let traced: StraceResult | null = null
  if (trace !== null) {
    traced = await trace.finish()
    const first = traced.processes[0]
    if (first !== undefined && traced.startError === null) first.ppid = process.pid
    if (traced.startError !== null) {
      // strace itself started, but its execve of the sample failed: the sample never ran.
      const why = explainStartError(target, traced.startError)
      log.error(`the sample did not start: ${why}`)
      record.reason = 'start-failed'
      record.error = why
    }
  }
  record.pid = record.reason === 'start-failed' ? null : (traced?.processes[0]?.pid ?? (spawned ? root : null))
  const after = snapshot(folders, limits)
  const files = fileRecords(before, after, traced, started, exclude)
  // A sample that did not start has no process: what polling saw was strace's child before it failed.
  const processes = record.reason === 'start-failed' ? [] : mergeProcesses(monitor.processes(), traced?.processes ?? [])
  const polled = monitor.connectionRecords()
  const connections: ConnectionRecord[] = [
    ...polled,
    ...(traced?.connections ?? []).filter((t) => !polled.some((p) => p.dst === t.dst && p.dport === t.dport && p.pid === t.pid))
  ]
  const dropped = await uploadDropped(files, conf, {
    maxFiles: Number(conf.options.get('max_dropped') ?? 100),
    maxSize: Number(conf.options.get('max_dropped_size') ?? 32 * 1024 * 1024)
  }, log)
  const dumps = (await dumper?.finish()) ?? 0
  if (dumps > 0) log.info(`${dumps} process memory dump(s) uploaded`)
  const registry = winMon?.registryRecords() ?? []
  log.info(`${processes.length} process(es), ${files.length} file change(s), ${connections.length} connection(s), ` +
    `${registry.length > 0 ? `${registry.length} registry change(s), ` : ''}${dropped} file(s) uploaded`)

  const jsonl = toJsonLines([record, ...processes, ...files, ...connections, ...registry])
  const local = join(analyzerDir, 'behavior.jsonl')
  try {
    writeFileSync(local, jsonl)
  } catch {
    // read-only analyzer folder: the upload below is what counts
  }
  await uploadFile(conf, BEHAVIOR_LOG, local, [], Buffer.from(jsonl))
  return record
}
