#!/usr/bin/env node
// Dropped files at ransomware scale: `node bench/dropped.bench.mjs [files] [--rounds N] [--kib K] [--profile DIR] [--keep]`
// (default 10,000 files, 3 rounds; --quick: 300 files, 1 round). Needs the built CLI (`npm run build:cli`).
//
// Writes one analysis folder as a run that dropped that many files leaves it: files/<sha256[:16]>_<name>
// (2–14 KiB each, ~8 KiB on average, or K/4 to 7K/4 KiB with --kib K; of varied content: encrypted blobs, ransom notes, text, HTML,
// JSON, scripts, PDF, PNG, JPEG, ZIP, gzip, ELF and PE headers), files.json (the result server's line
// per upload), logs/behavior.jsonl (the analyzer's records: the run, the process, a `created` record
// with sha256 and size per dropped file, a `deleted` one per encrypted original), task.json,
// analysis.log, and the task and its sample in the service's database. Then, in turn, round after
// round (A B A B ...), in the same run:
//   tools       `file -b`, md5sum, sha1sum, sha256sum, sha512sum and `ssdeep` over the same files,
//               one after the other, each in batches (xargs), their output to files; wall time;
//   processing  the built `aviary serve` (with bin/aviary.js's flags) processing the task as it
//               processes any: `/tasks/rereport/1`, then the processor and the whole pipeline
//               (src/core/processing/pipeline.ts: every section, report.json and report.html, the
//               search terms); from the request until the task is reported, polled every 20 ms.
// The ratio of each pair, with min / median / max over the rounds, and the service's memory: VmRSS
// before each processing, its peak meanwhile (VmHWM, reset through /proc/<pid>/clear_refs) and the
// growth. The first round checks the report against the tools: every dropped file's type and
// hashes must be what they printed (exit 1 otherwise). Prints one JSON line, with the load average
// before and after. --profile DIR: the service runs under `node --cpu-prof`, its profile written to
// DIR when it stops. --keep: the work folder is left (its path printed); with --rounds 0 the bench
// only writes the folder. Ctrl-C (or an error) stops the service and removes the work folder.
import Database from 'better-sqlite3'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { args, cleanup, numArg, positional, quick, tempDir, track } from './cleanup.mjs'

const FILES = Number(positional(['--rounds', '--profile', '--kib'])[0] ?? (quick ? 300 : 10_000))
const ROUNDS = numArg('--rounds', 3, 1)
/** Average file size in KiB: sizes are drawn between a quarter of it and 1.75 times it (default 8: 2–14 KiB). */
const KIB = numArg('--kib', 8)
const PROFILE = args.includes('--profile') ? path.resolve(args[args.indexOf('--profile') + 1]) : null
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const KEEP = args.includes('--keep')
// --keep: the folder stays (its path is printed), for profiling or timing its parts by hand.
const work = KEEP ? mkdtempSync(path.join(tmpdir(), 'aviary-dropped-bench-')) : tempDir('aviary-dropped-bench-')

/** A small seeded PRNG (xorshift32): the same folder every run. */
function prng(seed) {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x / 0x1_0000_0000
  }
}

const WORDS = ('the invoice payment account report quarterly meeting project budget contract customer order ' +
  'shipping delivery schedule review draft final version update notes summary analysis data sales team ' +
  'please find attached regards thank you for your time we will send the documents tomorrow').split(' ')

/** `n` bytes of a file of kind `kind`: a real header where the kind has one, then fitting filler. */
function content(kind, n, rnd, i) {
  const random = (len) => {
    const b = Buffer.alloc(len)
    for (let k = 0; k < len; k += 4) b.writeUInt32LE((rnd() * 0x1_0000_0000) >>> 0, Math.min(k, len - 4))
    return b
  }
  const text = (len) => {
    let s = ''
    while (s.length < len) s += WORDS[Math.floor(rnd() * WORDS.length)] + (rnd() < 0.1 ? '.\n' : ' ')
    return s.slice(0, len)
  }
  const fit = (head, fill) => Buffer.concat([head, fill(Math.max(0, n - head.length))]).subarray(0, Math.max(n, head.length))
  switch (kind) {
    case 'locked': return random(n)
    case 'note': return Buffer.from(text(n - 120) + `\nYour files are encrypted. Visit http://restore-${i % 97}.example.onion/id/${i} to pay.\n`.padEnd(120))
    case 'txt': return Buffer.from(text(n))
    case 'html': return fit(Buffer.from(`<!DOCTYPE html>\n<html><head><title>Report ${i}</title></head><body>\n<p>`), (k) => Buffer.from(text(k - 20) + '</p></body></html>\n'))
    case 'json': return Buffer.from(JSON.stringify({ id: i, items: Array.from({ length: Math.floor(n / 40) }, (_, k) => ({ k, v: WORDS[k % WORDS.length] })) }).slice(0, n))
    case 'sh': return fit(Buffer.from(`#!/bin/sh\n# job ${i}\nset -e\n`), (k) => Buffer.from(Array.from({ length: Math.ceil(k / 30) }, (_, j) => `echo step ${j} >> /tmp/log\n`).join('').slice(0, k)))
    case 'pdf': return fit(Buffer.from(`%PDF-1.${i % 8}\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n`, 'latin1'), random)
    case 'png': {
      const ihdr = Buffer.alloc(25)
      ihdr.writeUInt32BE(13, 0)
      ihdr.write('IHDR', 4, 'latin1')
      ihdr.writeUInt32BE(64 + (i % 1000), 8)
      ihdr.writeUInt32BE(48 + (i % 500), 12)
      ihdr.set([8, 2, 0, 0, 0], 16)
      return fit(Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ihdr]), random)
    }
    case 'jpg': return fit(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x48, 0x00, 0x48, 0x00, 0x00]), random)
    case 'zip': {
      const name = Buffer.from(`word/document${i}.xml`)
      const h = Buffer.alloc(30)
      h.writeUInt32LE(0x04034b50, 0)
      h.writeUInt16LE(20, 4)
      h.writeUInt16LE(8, 8)
      h.writeUInt32LE(n, 18)
      h.writeUInt32LE(n * 3, 22)
      h.writeUInt16LE(name.length, 26)
      return fit(Buffer.concat([h, name]), random)
    }
    case 'gz': return fit(Buffer.from([0x1f, 0x8b, 0x08, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, ...Buffer.from(`backup-${i}.tar\0`)]), random)
    case 'elf': {
      const h = Buffer.alloc(64)
      h.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])
      h.writeUInt16LE(i % 2 ? 3 : 2, 16) // ET_DYN or ET_EXEC
      h.writeUInt16LE(62, 18) // x86-64
      h.writeUInt32LE(1, 20)
      h.writeUInt16LE(64, 52)
      return fit(h, random)
    }
    case 'pe': {
      const h = Buffer.alloc(0x98)
      h.write('MZ', 0, 'latin1')
      h.writeUInt32LE(0x80, 0x3c)
      h.write('PE\0\0', 0x80, 'latin1')
      h.writeUInt16LE(0x14c, 0x84) // i386
      h.writeUInt16LE(1, 0x86)
      h.writeUInt16LE(0xe0, 0x94)
      h.writeUInt16LE(0x0102, 0x96)
      return fit(h, random)
    }
  }
  throw new Error(kind)
}

// Ransomware's output: mostly encrypted copies, a note per folder, and what else a user had.
const KINDS = [['locked', 40], ['note', 5], ['txt', 8], ['html', 6], ['json', 5], ['sh', 3], ['pdf', 8], ['png', 6], ['jpg', 6], ['zip', 6], ['gz', 3], ['elf', 2], ['pe', 2]]
const EXT = { locked: 'docx.locked', note: 'txt', txt: 'txt', html: 'html', json: 'json', sh: 'sh', pdf: 'pdf', png: 'png', jpg: 'jpg', zip: 'docx', gz: 'gz', elf: 'so', pe: 'dll' }

function kindOf(r) {
  let at = r * 100
  for (const [k, w] of KINDS) if ((at -= w) < 0) return k
  return 'locked'
}

/** The analysis folder of a run that dropped `count` files; returns its path and the bytes written. */
function makeAnalysis(dir, count) {
  for (const d of ['files', 'logs', 'reports']) mkdirSync(path.join(dir, d), { recursive: true })
  const rnd = prng(24)
  const t0 = 1_764_000_000_000
  const pid = 4242
  const filesJson = []
  const records = [
    { type: 'analyzer', version: 1, task: '1', package: 'bin', platform: 'linux', category: 'file', target: '/tmp/aviary-sample/locker', pid, started: t0, ended: t0 + 60_000, reason: 'timeout', monitors: ['proc', 'files'] },
    { type: 'process', pid, ppid: 1000, command_line: '/tmp/aviary-sample/locker --all', exe: '/tmp/aviary-sample/locker', first_seen: t0, exited: null }
  ]
  let bytes = 0
  for (let i = 0; i < count; i++) {
    const kind = kindOf(rnd())
    const size = Math.floor(KIB * 256 + rnd() * KIB * 1536)
    const data = content(kind, size, rnd, i)
    bytes += data.length
    const sha256 = createHash('sha256').update(data).digest('hex')
    // Names as users have them: spaces, brackets, accents, now and then a quote or a dash first.
    const base = i % 50 === 7 ? `Résumé (copy ${i})` : i % 61 === 3 ? `-rf 'quoted' ${i}` : `report-${String(i).padStart(5, '0')}`
    const name = kind === 'note' ? `README_RESTORE_${i}.txt` : `${base}.${EXT[kind]}`
    const guestPath = `/home/user/Documents/folder-${i % 100}/${name}`
    writeFileSync(path.join(dir, 'files', `${sha256.slice(0, 16)}_${name}`), data)
    filesJson.push(JSON.stringify({ path: `files/${sha256.slice(0, 16)}_${name}`, filepath: guestPath, pids: [pid] }))
    const time = t0 + 1000 + i * 5
    if (kind === 'locked') records.push({ type: 'file', op: 'deleted', path: guestPath.replace(/\.locked$/, ''), time, pid })
    records.push({ type: 'file', op: 'created', path: guestPath, time, pid, sha256, size: data.length })
  }
  writeFileSync(path.join(dir, 'files.json'), filesJson.join('\n') + '\n')
  writeFileSync(path.join(dir, 'logs', 'behavior.jsonl'), records.map((r) => JSON.stringify(r)).join('\n') + '\n')
  writeFileSync(path.join(dir, 'analysis.log'), '2026-11-27 10:00:00,000 [aviary.engine] INFO: machine locked\n')
  writeFileSync(path.join(dir, 'task.json'), JSON.stringify({
    id: 1, category: 'file', target: '/data/storage/uploads/x/locker', package: 'bin', timeout: 60, priority: 1, custom: null, owner: null,
    machine: null, platform: 'linux', options: 'max_dropped=10000', tags: [], memory: false, enforce_timeout: true, clock: '2026-11-27 10:00:00',
    added_on: '2026-11-27 10:00:00', started_on: '2026-11-27 10:00:01', completed_on: '2026-11-27 10:01:05', status: 'completed', route: 'none',
    duration: 64, guest: { name: 'g0', label: 'g0', manager: 'physical', started_on: '2026-11-27 10:00:01', shutdown_on: '2026-11-27 10:01:05', status: 'stopped' }
  }))
  // The sample: a real ELF, its type as the store recorded it.
  const sample = path.join(work, 'locker')
  copyFileSync('/usr/bin/gzip', sample)
  return { bytes, sample }
}

/** A child's exit, stdout, stderr and wall time; in its own process group, stopped at cleanup. */
function run(cmd, argv, opts = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now()
    const c = track(spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...opts }), { group: true })
    let stdout = ''
    let stderr = ''
    c.stdout.setEncoding('utf8').on('data', (d) => { stdout += d })
    c.stderr.setEncoding('utf8').on('data', (d) => { stderr += d })
    c.on('close', (status) => resolve({ status, stdout, stderr, s: (performance.now() - t0) / 1000 }))
  })
}

/** The standard tools over the files, one after the other, each in batches; outputs in `out`. */
const TOOLS = `set -e
cd "$1/files"
out="$2"
ls -U | LC_ALL=C sort > "$out/names"
tr '\\n' '\\0' < "$out/names" | xargs -0 file -b -- > "$out/file"
for h in md5 sha1 sha256 sha512; do tr '\\n' '\\0' < "$out/names" | xargs -0 \${h}sum -- > "$out/$h"; done
tr '\\n' '\\0' < "$out/names" | xargs -0 ssdeep -s -- > "$out/ssdeep"
`

/** The report's dropped files against what the tools printed: every type and hash the same. */
function compare(dir, out) {
  const names = readFileSync(path.join(out, 'names'), 'utf8').split('\n').filter(Boolean)
  const types = readFileSync(path.join(out, 'file'), 'utf8').split('\n')
  const sums = Object.fromEntries(['md5', 'sha1', 'sha256', 'sha512'].map((h) => [h, new Map(readFileSync(path.join(out, h), 'utf8').split('\n').filter(Boolean)
    .map((l) => [l.slice(l.indexOf('  ') + 2), l.slice(0, l.indexOf('  '))]))]))
  const ssdeep = new Map(readFileSync(path.join(out, 'ssdeep'), 'utf8').split('\n').filter((l) => l && !l.startsWith('ssdeep,'))
    .map((l) => [path.basename(JSON.parse(l.slice(l.indexOf(',') + 1))), l.slice(0, l.indexOf(','))]))
  const report = JSON.parse(readFileSync(path.join(dir, 'reports', 'report.json'), 'utf8'))
  const byRel = new Map(report.dropped.map((d) => [d.relpath, d]))
  const wrong = []
  names.forEach((name, k) => {
    const d = byRel.get(`files/${name}`)
    if (d === undefined) return wrong.push(`${name}: not in the report`)
    const want = { type: types[k], md5: sums.md5.get(name), sha1: sums.sha1.get(name), sha256: sums.sha256.get(name), sha512: sums.sha512.get(name), ssdeep: ssdeep.get(name) }
    for (const [key, v] of Object.entries(want)) if (d[key] !== v) wrong.push(`${name}: ${key} ${JSON.stringify(d[key])}, the tool says ${JSON.stringify(v)}`)
  })
  return { checked: names.length, dropped: report.dropped.length, errors: report.debug.errors, wrong }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
const spread = (xs) => ({ min: +Math.min(...xs).toFixed(3), median: +median(xs).toFixed(3), max: +Math.max(...xs).toFixed(3) })
const statusKiB = (pid, key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN)

/** The built `aviary serve` on `data`, with the flags users run it with (bin/aviary.js's shebang). */
async function serve(data, nodeFlags) {
  const child = track(spawn(process.execPath, ['--max-semi-space-size=2', ...nodeFlags, path.join(root, 'bin/aviary.js'), 'serve', '--data', data, '-p', '0'],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true }), { group: true, graceMs: 20_000, label: 'stop aviary serve' })
  let err = ''
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`aviary serve did not listen: ${err}`)), 60_000)
    child.stderr.on('data', (b) => {
      err = (err + b).slice(-4096)
      const m = /analysis API on (http:\/\/\S+)/.exec(err)
      if (m) { clearTimeout(timer); resolve(m[1]) }
    })
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`aviary serve exited (${code}): ${err}`)) })
  })
  return { child, url }
}

const api = async (url) => {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`)
  return res.json()
}

/**
 * One processing of task 1 by the service, as `/tasks/rereport` asks for it: from the request to
 * the task reported (polled every 20 ms), with the service's RSS before and its peak meanwhile
 * (VmHWM, reset first through /proc/<pid>/clear_refs).
 */
async function processOnce(svc) {
  const pid = svc.child.pid
  writeFileSync(`/proc/${pid}/clear_refs`, '5')
  const rssBefore = statusKiB(pid, 'VmRSS')
  const t0 = performance.now()
  const { success } = await api(`${svc.url}/tasks/rereport/1`)
  if (!success) throw new Error('rereport refused')
  for (;;) {
    const { task } = await api(`${svc.url}/tasks/view/1`)
    if (task.status === 'reported') break
    if (task.status !== 'completed') throw new Error(`processing ended ${task.status}: ${JSON.stringify(task.errors)}`)
    await new Promise((r) => setTimeout(r, 20))
  }
  const s = (performance.now() - t0) / 1000
  return { s, rssBeforeMiB: rssBefore / 1024, hwmMiB: statusKiB(pid, 'VmHWM') / 1024 }
}

async function main() {
  if (!existsSync(path.join(root, 'out/cli/aviary.mjs'))) throw new Error('out/cli is missing: run `npm run build:cli` first')
  const data = path.join(work, 'data')
  mkdirSync(data)
  // The service makes its database; the task and its sample are then written as a finished run
  // leaves them, and its analysis folder beside.
  const svc = await serve(data, PROFILE === null ? [] : ['--cpu-prof', '--cpu-prof-dir', PROFILE])
  const dir = path.join(data, 'storage', 'analyses', '1')
  const { bytes, sample } = makeAnalysis(dir, FILES)
  if (ROUNDS === 0) return console.log(JSON.stringify({ files: FILES, MB: +(bytes / 1e6).toFixed(1), folder: dir }))
  const sampleBytes = readFileSync(sample)
  const h = (alg) => createHash(alg).update(sampleBytes).digest('hex')
  const binary = path.join(data, 'storage', 'binaries', h('sha256'))
  copyFileSync(sample, binary)
  const db = new Database(path.join(data, 'aviary.db'))
  const sampleId = db.prepare(`INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
    VALUES (?, 'ELF 64-bit LSB pie executable', ?, '00000000', ?, ?, ?, NULL, '2026-11-27 10:00:00')`)
    .run(sampleBytes.length, h('md5'), h('sha1'), h('sha256'), h('sha512')).lastInsertRowid
  db.prepare(`INSERT INTO tasks (id, category, target, sample_id, package, timeout, options, clock, added_on, started_on, completed_on, status)
    VALUES (1, 'file', ?, ?, 'bin', 60, 'max_dropped=10000', '2026-11-27 10:00:00', '2026-11-27 10:00:00', '2026-11-27 10:00:01', '2026-11-27 10:01:05', 'reported')`)
    .run(path.join(data, 'storage', 'uploads', h('sha256'), 'locker'), sampleId)
  db.close()

  const out = path.join(work, 'tools')
  mkdirSync(out)
  const tools = path.join(work, 'tools.sh')
  writeFileSync(tools, TOOLS)
  // Both sides read the files from the page cache.
  await run('sh', ['-c', 'cat files/* > /dev/null'], { cwd: dir })
  const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  const pairs = []
  let check = null
  for (let round = 0; round < ROUNDS; round++) {
    const t = await run('sh', [tools, dir, out])
    if (t.status !== 0) throw new Error(`tools: ${t.stderr}`)
    const p = await processOnce(svc)
    if (round === 0) check = compare(dir, out)
    pairs.push({ tools_s: t.s, processing_s: p.s, growthMiB: p.hwmMiB - p.rssBeforeMiB, hwmMiB: p.hwmMiB, rssBeforeMiB: p.rssBeforeMiB })
  }
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  console.log(JSON.stringify({
    bench: 'dropped files', files: FILES, MB: +(bytes / 1e6).toFixed(1), rounds: ROUNDS, load: { before: loadBefore, after: load },
    tools_s: spread(pairs.map((x) => x.tools_s)), processing_s: spread(pairs.map((x) => x.processing_s)),
    ratio: spread(pairs.map((x) => x.processing_s / x.tools_s)),
    service_rss_before_MiB: spread(pairs.map((x) => x.rssBeforeMiB)), service_peak_MiB: spread(pairs.map((x) => x.hwmMiB)),
    rss_growth_MiB: spread(pairs.map((x) => x.growthMiB)),
    each_round: pairs.map((x) => ({ tools_s: +x.tools_s.toFixed(2), processing_s: +x.processing_s.toFixed(2), rss_before_MiB: Math.round(x.rssBeforeMiB), peak_MiB: Math.round(x.hwmMiB) })),
    dropped_in_report: check.dropped, processing_errors: check.errors, ...(KEEP ? { kept: work } : {}),
    checked_against_tools: check.checked, mismatches: check.wrong.length, first_mismatches: check.wrong.slice(0, 5)
  }))
  if (check.wrong.length > 0 || check.dropped !== FILES) process.exitCode = 1
}

try {
  await main()
} finally {
  await cleanup()
}
