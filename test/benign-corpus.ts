// The benign corpus: ordinary programs run as samples, which no signature may fire on. Each entry is
// what an analyst might submit that is not malware (package tools, archivers, a compiler, Python,
// shell-script programs, web fetches, key generation, an installer). test/e2e/benign-corpus.test.ts
// runs the Linux ones through the whole pipeline on a netns guest, test/e2e/benign-windows.test.ts
// the Windows one on the Wine test bed; both keep what the rules read of each report in
// test/fixtures/benign-corpus/ (AVIARY_UPDATE_CORPUS=1), where the rules' unit tests
// (src/core/processing/signatures/signatures.test.ts) run every rule over them.
//
// The guest shares the host's files but /tmp: every sample writes under /tmp only (HOME included),
// and asks its tools not to refresh caches outside it.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'

export interface CorpusRun {
  /** The fixture's name. */
  name: string
  /** The submitted file name (the extension picks the analysis package). */
  file: string
  content: string
  /** Task fields (timeout, options). */
  fields?: Record<string, string>
  /** What it is, in words. */
  what: string
}

const sh = (body: string): string => `#!/bin/sh\nset -e\nexport HOME=/tmp/bc-home LC_ALL=C\nmkdir -p "$HOME"\n${body}\n`

/** A host name of the lab's fake internet (its DNS server answers every A question with its own address). */
export const WEB_HOST = 'downloads.example.org'

export const LINUX_CORPUS: readonly CorpusRun[] = [
  {
    name: 'dpkg', file: 'packages.sh', what: 'dpkg lists the installed packages and the files of one',
    content: sh('dpkg -l > /dev/null\ndpkg -s coreutils > /dev/null\ndpkg -L tar > /dev/null\ndpkg-query -W -f=\'${Package} ${Version}\\n\' bash > /tmp/bc-bash-version.txt')
  },
  {
    name: 'apt-cache', file: 'policy.sh', what: 'apt-cache policy and show, without rewriting its cache files',
    content: sh('apt-cache -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= policy bash tar > /tmp/bc-policy.txt\n' +
      'apt-cache -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= show tar > /dev/null')
  },
  {
    name: 'tar', file: 'archive.sh', what: 'GNU tar makes and lists a gzip archive (it starts /bin/sh -c gzip for -z)',
    content: sh('mkdir -p /tmp/bc-src\ncp /etc/hostname /etc/os-release /tmp/bc-src/\ntar -czf /tmp/bc-src.tgz -C /tmp bc-src\ntar -tzf /tmp/bc-src.tgz > /dev/null\n' +
      'mkdir -p /tmp/bc-out\ntar -xzf /tmp/bc-src.tgz -C /tmp/bc-out')
  },
  {
    name: 'gzip', file: 'compress.sh', what: 'gzip, and gunzip, zcat and zgrep, which are shell scripts themselves',
    content: sh('cp /etc/os-release /tmp/bc-os-release\ngzip -9 /tmp/bc-os-release\nzcat /tmp/bc-os-release.gz > /dev/null\n' +
      'zgrep -c ID /tmp/bc-os-release.gz > /dev/null\ngunzip /tmp/bc-os-release.gz')
  },
  {
    name: 'cc', file: 'build.sh', what: 'the C compiler builds a small program (cc1, as, collect2, ld)',
    content: sh('mkdir -p /tmp/bc-build\ncat > /tmp/bc-build/hello.c <<EOF\n#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\nEOF\n' +
      'cc -O2 -Wall -o /tmp/bc-build/hello /tmp/bc-build/hello.c')
  },
  {
    name: 'make', file: 'make.sh', what: 'make builds with a Makefile whose recipes run through /bin/sh -c',
    content: sh('mkdir -p /tmp/bc-make\nprintf \'int main(void) { return 0; }\\n\' > /tmp/bc-make/main.c\n' +
      'printf \'all: main.o\\n\\t@echo linking > build.log && cc -o prog main.o\\nmain.o: main.c\\n\\tcc -c main.c -o main.o\\n\' > /tmp/bc-make/Makefile\n' +
      'make -s -C /tmp/bc-make')
  },
  {
    name: 'python', file: 'report.py', what: 'a Python program: reads system files, hashes, writes JSON',
    content: [
      'import sys',
      'sys.dont_write_bytecode = True',
      'import hashlib, json, os, platform, subprocess',
      'info = {"python": platform.python_version(), "files": sorted(os.listdir("/etc"))[:20]}',
      'with open("/etc/os-release", "rb") as f:',
      '    info["sha256"] = hashlib.sha256(f.read()).hexdigest()',
      'info["uname"] = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout',
      'with open("/tmp/bc-report.json", "w") as f:',
      '    json.dump(info, f)',
      ''
    ].join('\n')
  },
  {
    name: 'wrapper', file: 'wrapper.sh', what: 'a shell-script wrapper that runs programs written in shell (ldd, which) and execs a tool',
    content: sh('ldd /bin/true > /dev/null\nwhich ls > /dev/null\nexec sort -u -o /tmp/bc-services.txt /etc/services')
  },
  {
    name: 'curl', file: 'fetch-curl.sh', what: `curl fetches a page (${WEB_HOST}, the lab's web server)`,
    content: sh(`curl -s -o /tmp/bc-page.html http://${WEB_HOST}/index.html`)
  },
  {
    name: 'wget', file: 'fetch-wget.sh', what: 'wget fetches a file',
    content: sh(`wget -q -O /tmp/bc-file.txt http://${WEB_HOST}/files/readme.txt`)
  },
  {
    name: 'ssh-keygen', file: 'keygen.sh', what: 'ssh-keygen makes a key pair in a new ~/.ssh and prints its fingerprint',
    content: sh('mkdir -p -m 700 "$HOME/.ssh"\nssh-keygen -q -t ed25519 -N "" -C bc@example -f "$HOME/.ssh/id_ed25519"\n' +
      'ssh-keygen -l -f "$HOME/.ssh/id_ed25519.pub" > /dev/null\nssh-keygen -y -f "$HOME/.ssh/id_ed25519" > /dev/null')
  },
  {
    name: 'coreutils', file: 'inventory.sh', what: 'an inventory script: find, sort, grep, awk, stat, df, id, uname',
    content: sh('find /usr/share/doc -maxdepth 1 -type d | sort | head -n 20 > /tmp/bc-docs.txt\ngrep -c "^root:" /etc/passwd > /dev/null\n' +
      'awk -F: \'{ print $1 }\' /etc/group | sort > /dev/null\nstat /etc/hostname > /dev/null\ndf -h > /dev/null\nid > /dev/null\nuname -a > /tmp/bc-uname.txt')
  },
  {
    name: 'long-running', file: 'waits.sh', what: 'a program still running when the analysis ends (as most samples are)',
    content: sh('echo started > /tmp/bc-started.txt\nsleep 600'),
    fields: { timeout: '12' }
  }
]

/**
 * An execve's arguments with only the dynamic linker's variables (LD_*, what ld_preload reads) of
 * its environment: the rest is the test host's own environment, which no rule reads and a fixture
 * must not keep.
 */
function loaderEnvironment(args: Record<string, unknown>): Record<string, unknown> {
  if (!Array.isArray(args.environment)) return args
  return { ...args, environment: args.environment.filter((e) => typeof e === 'string' && e.startsWith('LD_')) }
}

/** What the signature rules read of a report (engine.ts, rules/), and nothing else: small, and stable across runs. */
export function ruleInputs(report: Record<string, unknown>): Record<string, unknown> {
  const o = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : {})
  const behavior = o(report.behavior)
  const target = o(report.target)
  const file = o(target.file)
  const network = o(report.network)
  const st = o(report.static)
  // The calls the call rules look at (engine.ts reads only the apis a rule names).
  const CALL_APIS = new Set(['execve', 'execveat', 'ptrace', 'WriteProcessMemory', 'NtWriteVirtualMemory', 'NtMapViewOfSection',
    'CreateRemoteThread', 'CreateRemoteThreadEx', 'NtCreateThreadEx', 'RtlCreateUserThread', 'QueueUserAPC', 'NtQueueApcThread',
    'NtQueueApcThreadEx', 'SetThreadContext', 'NtSetContextThread'])
  // A failed execve (a PATH search trying each folder) starts nothing: its environment is left out.
  const processes = (Array.isArray(behavior.processes) ? behavior.processes : []).map((p) => {
    const { calls, pid, ppid, process_name, process_path, command_line } = o(p)
    const kept = (Array.isArray(calls) ? calls : []).map(o).filter((c) => CALL_APIS.has(String(c.api)) && !(String(c.api).startsWith('execve') && c.status !== 1))
      .map((c) => ({ api: c.api, category: c.category, arguments: loaderEnvironment(o(c.arguments)), return_value: c.return_value, status: c.status }))
    return { pid, ppid, process_name, process_path, command_line, calls: kept }
  })
  // The summary keys the rules read (report-view.ts's writtenPaths and commandLines, and the rules').
  const SUMMARY_KEYS = ['command_line', 'file_created', 'file_written', 'file_recreated', 'file_moved', 'file_copied', 'file_deleted', 'file_read',
    'connects_ip', 'connects_host', 'regkey_written', 'regkey_created']
  const pick = (summary: unknown, keys: readonly string[]): Record<string, unknown> =>
    Object.fromEntries(keys.filter((k) => o(summary)[k] !== undefined).map((k) => [k, o(summary)[k]]))
  const generic = (Array.isArray(behavior.generic) ? behavior.generic : []).map(o)
    .map((g) => ({ pid: g.pid, summary: pick(g.summary, ['file_written', 'file_created']) }))
  return {
    info: { platform: o(report.info).platform, category: o(report.info).category },
    target: target.category === 'url' ? { category: 'url', url: target.url } : { category: target.category, file: { name: file.name, path: file.path, type: file.type, yara: file.yara ?? [] } },
    static: { pe_sections: st.pe_sections ?? [], office: st.office, lnk: st.lnk },
    strings: report.strings ?? [],
    behavior: { processes, generic, summary: pick(behavior.summary, SUMMARY_KEYS), apistats: behavior.apistats ?? {} },
    network: { hosts: network.hosts ?? [], domains: network.domains ?? [], dns: network.dns ?? [], dns_servers: network.dns_servers ?? [],
      http: network.http ?? [], tcp: network.tcp ?? [], udp: network.udp ?? [] },
    dropped: (Array.isArray(report.dropped) ? report.dropped : []).map(o).map((d) => ({ name: d.name, filepath: d.filepath, type: d.type, pids: d.pids, yara: d.yara ?? [] })),
    procmemory: (Array.isArray(report.procmemory) ? report.procmemory : []).map(o).map((p) => ({ file: p.file, pid: p.pid, yara: p.yara ?? [] }))
  }
}

export const CORPUS_FIXTURES = path.resolve(__dirname, 'fixtures/benign-corpus')

/** Keeps `report`'s rule inputs as the fixture `name` when AVIARY_UPDATE_CORPUS=1. */
export function keepFixture(name: string, report: Record<string, unknown>): void {
  if (process.env.AVIARY_UPDATE_CORPUS !== '1') return
  mkdirSync(CORPUS_FIXTURES, { recursive: true })
  writeFileSync(path.join(CORPUS_FIXTURES, `${name}.json`), `${JSON.stringify(ruleInputs(report), null, 1)}\n`)
}

/** Every kept corpus report, by name. */
export function corpusFixtures(): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>()
  for (const f of readdirSync(CORPUS_FIXTURES).filter((n) => n.endsWith('.json')).sort()) {
    out.set(f.slice(0, -5), JSON.parse(readFileSync(path.join(CORPUS_FIXTURES, f), 'utf8')) as Record<string, unknown>)
  }
  return out
}
