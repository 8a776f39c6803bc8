#!/usr/bin/env node
// YARA-X is not a dependency (its lock entries break npm ci): `npm install --no-save @litko/yara-x@0.3.0` first.
// Without it (as in CI) only the `yara` CLI's part runs, and the output says the YARA-X part was skipped.
// YARA engines compared: `node bench/yara.bench.mjs [rounds] [quick]` (default 3 rounds; --quick is
// 1 round of the quick sizes). Writes a 100 MB and a
// 1 GB file of random bytes with a few planted markers, and a folder of 20 rules (text, wide,
// nocase, hex with jumps and wildcards, regular expressions, counts, PE checks). Each round scans
// each file with
//   - YARA-X in-process: src/core/processing/yara/scanner.ts (yaraScan) bundled with esbuild, run
//     in a fresh Node process per file (so compile time is included, as on a cold cache);
//   - the Debian `yara` CLI: `yara -s -w <20 rule files> FILE`.
// Wall time and peak RSS (/usr/bin/time %M) of each process are recorded; best of the rounds is
// reported. Note: both engines memory-map the scanned file, so peak RSS includes the file pages
// touched (about the file size); the YARA-X child also reports its anonymous RSS (RssAnon), the
// memory that is really held. Both must agree on which rules match. Prints one JSON line.
import { build } from 'esbuild'
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, positional, quick, tempDir } from './cleanup.mjs'

const ROUNDS = Number(positional()[0] ?? (quick ? 1 : 3))
/** `quick` as second argument (or --quick): 10 MB and 20 MB files, to check the harness. */
const SIZES = quick || positional()[1] === 'quick' ? [['10MB', 10e6], ['20MB', 20e6]] : [['100MB', 100e6], ['1GB', 1e9]]
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const work = tempDir('aviary-yara-bench-')
const YARA_X_MISSING = (() => {
  try {
    createRequire(path.join(root, 'package.json')).resolve('@litko/yara-x')
    return null
  } catch {
    return 'YARA-X part skipped: @litko/yara-x is not installed (not a dependency: npm install --no-save @litko/yara-x@0.3.0)'
  }
})()

const RULES = [
  'rule r01_text { strings: $a = "EVIL-MARKER-0001" condition: $a }',
  'rule r02_wide { strings: $a = "cmd.exe /c powershell" wide condition: $a }',
  'rule r03_nocase { strings: $a = "CreateRemoteThread" nocase condition: $a }',
  'rule r04_ascii_wide { strings: $a = "VirtualAllocEx" ascii wide $b = "WriteProcessMemory" ascii wide condition: all of them }',
  'rule r05_hex { strings: $a = { 4D 5A 90 00 03 00 00 00 } condition: $a }',
  'rule r06_hex_jump { strings: $a = { E8 [4] 83 C4 ?? 85 C0 74 } condition: #a > 3 }',
  'rule r07_hex_alt { strings: $a = { 68 ( 00 | 01 | 02 ) 10 00 00 6A 00 FF 15 } condition: $a }',
  'rule r08_regex_url { strings: $a = /https?:\\/\\/[a-z0-9.-]{4,40}\\.(ru|cn|top)\\/[a-z0-9]{6}/ condition: $a }',
  'rule r09_regex_ip { strings: $a = /\\b1[0-9]{2}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}:44[0-9]{2}\\b/ condition: $a }',
  'rule r10_mutex { strings: $a = "Global\\\\MsWinZonesCacheCounterMutexA" condition: $a }',
  'rule r11_ransom { strings: $a = "YOUR FILES HAVE BEEN ENCRYPTED" nocase $b = ".onion" condition: $a and $b }',
  'rule r12_pe { condition: uint16(0) == 0x5A4D and uint32(uint32(0x3C)) == 0x00004550 }',
  'rule r13_many { strings: $a = "PLANTED" condition: #a >= 5 }',
  'rule r14_base64 { strings: $a = "TVqQAAMAAAAEAAAA" condition: $a }',
  'rule r15_xor { strings: $a = "This program cannot be run" xor(1-255) condition: $a }',
  'rule r16_registry { strings: $a = "Software\\\\Microsoft\\\\Windows\\\\CurrentVersion\\\\Run" nocase wide ascii condition: $a }',
  'rule r17_shell { strings: $a = "/bin/sh -c" $b = "wget http" $c = "chmod +x" condition: 2 of them }',
  'rule r18_hex_wild { strings: $a = { 8B ?? ?? ?? 89 ?? ?? 8B ?? ?? E8 } condition: #a > 1000000 }',
  'rule r19_end_marker { strings: $a = "END-OF-DUMP" condition: $a in (filesize - 4096 .. filesize) }',
  'rule r20_fullword { strings: $a = "mimikatz" fullword nocase condition: $a }'
]

function writeRules() {
  const dir = path.join(work, 'rules')
  mkdirSync(dir)
  RULES.forEach((r, i) => writeFileSync(path.join(dir, `r${String(i + 1).padStart(2, '0')}.yar`), r + '\n'))
  return dir
}

/** Random bytes with markers planted at fixed places, written in 16 MiB chunks. */
function writeTarget(name, bytes) {
  const file = path.join(work, name)
  const fd = openSync(file, 'w')
  const chunk = 16 * 1024 * 1024
  for (let at = 0; at < bytes; at += chunk) {
    const buf = randomBytes(Math.min(chunk, bytes - at))
    if (at === 0) Buffer.from('MZ').copy(buf, 0)
    writeSync(fd, buf, 0, buf.length, at)
  }
  const plant = (text, at) => writeSync(fd, Buffer.isBuffer(text) ? text : Buffer.from(text), 0, Buffer.byteLength(text), at)
  plant('EVIL-MARKER-0001', Math.floor(bytes / 3))
  plant(Buffer.from('cmd.exe /c powershell', 'utf16le'), Math.floor(bytes / 2))
  for (let i = 0; i < 6; i++) plant('PLANTED', Math.floor((bytes / 7) * (i + 1)) + 11)
  plant('http://evil-host.example.top/abc123', Math.floor(bytes * 0.7))
  plant('END-OF-DUMP', bytes - 100)
  closeSync(fd)
  return file
}

function timed(cmd, args) {
  const t0 = process.hrtime.bigint()
  const r = spawnSync('/usr/bin/time', ['-f', '%M', cmd, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, NODE_PATH: path.join(root, 'node_modules') } })
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  const lines = r.stderr.trim().split('\n')
  return { ms, rssKiB: Number(lines[lines.length - 1]), stdout: r.stdout, stderr: r.stderr, status: r.status }
}

async function main() {
  const rules = writeRules()
  const runner = path.join(work, 'scan.cjs')
  writeFileSync(path.join(work, 'scan-entry.ts'), `
import { loadRules, yaraScan } from ${JSON.stringify(path.join(root, 'src/core/processing/yara/scanner.ts'))}
import { readFileSync } from 'node:fs'
async function main(): Promise<void> {
  const t0 = performance.now()
  await loadRules(process.argv[2])
  const t1 = performance.now()
  const res = await yaraScan([process.argv[3]], process.argv[2])
  const ms = performance.now() - t1
  const compileMs = t1 - t0
  const status = readFileSync('/proc/self/status', 'utf8')
  const kib = (k: string): number => Number((new RegExp(k + ':\\\\s+(\\\\d+)').exec(status) ?? [])[1])
  console.log(JSON.stringify({ ms, compileMs, rules: (res.get(process.argv[3]) ?? []).map((m) => m.name).sort(), rssAnonKiB: kib('RssAnon'), hwmKiB: kib('VmHWM') }))
}
void main()
`)
  if (YARA_X_MISSING) console.error(`bench: ${YARA_X_MISSING}`)
  else await build({ entryPoints: [path.join(work, 'scan-entry.ts')], outfile: runner, bundle: true, platform: 'node', format: 'cjs', target: 'node20', external: ['@litko/yara-x'], nodePaths: [path.join(root, 'node_modules')], logLevel: 'error' })
  const ruleFiles = RULES.map((_, i) => path.join(rules, `r${String(i + 1).padStart(2, '0')}.yar`))
  const out = { rules: RULES.length, rounds: ROUNDS, ...(YARA_X_MISSING ? { skipped: YARA_X_MISSING } : {}), files: {} }
  for (const [label, bytes] of SIZES) {
    const file = writeTarget(`target-${label}.bin`, bytes)
    execFileSync('sync')
    const x = []
    const c = []
    let agree = true
    for (let round = 0; round < ROUNDS; round++) {
      let inner = null
      if (!YARA_X_MISSING) {
        const rx = timed(process.execPath, [runner, rules, file])
        if (rx.status !== 0) throw new Error(`yara-x runner failed: ${rx.stderr}`)
        inner = JSON.parse(rx.stdout.trim())
        x.push({ ms: rx.ms, scanMs: inner.ms, compileMs: inner.compileMs, rssKiB: rx.rssKiB, rssAnonKiB: inner.rssAnonKiB, rules: inner.rules })
      }
      const rc = timed('yara', ['-s', '-w', ...ruleFiles, file])
      if (rc.status !== 0) throw new Error(`yara failed: ${rc.stderr}`)
      const cliRules = rc.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('0x')).map((l) => l.split(' ')[0]).sort()
      c.push({ ms: rc.ms, rssKiB: rc.rssKiB, rules: cliRules })
      if (inner) agree &&= JSON.stringify(cliRules) === JSON.stringify(inner.rules)
    }
    const best = (list) => list.reduce((a, b) => (b.ms < a.ms ? b : a))
    const bx = x.length > 0 ? best(x) : null
    const bc = best(c)
    out.files[label] = {
      bytes,
      yarax: bx && { ms: Math.round(bx.ms), compileMs: Math.round(bx.compileMs), scanMs: Math.round(bx.scanMs), peakRssMiB: Math.round(bx.rssKiB / 1024), rssAnonMiB: Math.round(bx.rssAnonKiB / 1024), MBps: Math.round(bytes / 1e6 / (bx.ms / 1000)) },
      yaraCli: { ms: Math.round(bc.ms), peakRssMiB: Math.round(bc.rssKiB / 1024), MBps: Math.round(bytes / 1e6 / (bc.ms / 1000)) },
      ratioCliOverX: bx && Number((bc.ms / bx.ms).toFixed(2)),
      matched: bx ? bx.rules : bc.rules,
      sameMatches: bx ? agree : null
    }
    rmSync(file)
  }
  console.log(JSON.stringify(out))
}

try {
  await main()
} finally {
  await cleanup()
}
