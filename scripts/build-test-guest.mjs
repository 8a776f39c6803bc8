// Builds the small Linux guest the kvm driver's real-VM tests boot under libvirt + QEMU (TCG):
// a Debian 12 kernel, a ~1 MB initramfs that loads the virtio/ext4 modules and mounts the root
// file system from a qcow2 disk, and that disk (busybox, a static network, the agent, optionally
// node and the libraries it links). The agent is "an executable + args" run inside the guest, so
// the stand-in (node + test/guests/kvm/stand-in-agent.mjs) and Aviary's single-file agent both fit.
//
// Why a disk and not one big initramfs: measured here (plain QEMU TCG, 1 vCPU, 512 MiB, boot to
// the stand-in agent answering), this 1.8 MB initramfs + ext4 qcow2 takes 7.3-8.8 s; the same
// root packed into the initramfs (105 MB, 40 MB gzipped) 8.4-9.0 s, and then keeps 105 MB of the
// guest's RAM (in every snapshot and memory dump); with the ~100 MB agent as well it would double.
// Internal snapshots need a qcow2 disk anyway.
//
// The result is cached under <out>/<key>/ where the key hashes every input (this script, the guest
// templates, the kernel package, busybox, the spec, the bytes of each file put in the guest), so
// the second run does not rebuild and a changed agent does. Nothing needs root tricks: files come
// from `apt-get download` + `dpkg -x`, the disk from `mkfs.ext4 -d` + `qemu-img convert`.
//
//   node scripts/build-test-guest.mjs                 the stand-in guest
//   node scripts/build-test-guest.mjs --spec s.json   {"agent": [...], "files": [{"from","to","mode"}],
//                                                      "node": true, "out": "...", "ip", "gateway", "dns",
//                                                      "consoleShell": true (a root shell on the VGA console, tty1)}
// Prints the manifest (JSON: key, kernel, initrd, disk, cmdline, ...) on stdout; progress on stderr.
import { execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import * as fs from 'node:fs'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createGzip } from 'node:zlib'

const run = promisify(execFile)
const root = fileURLToPath(new URL('..', import.meta.url))
const templates = path.join(root, 'test/guests/kvm')
const SELF = fileURLToPath(import.meta.url)
// Debian builds these as modules; ext4 checksums its metadata with crc32c, which the kernel would
// otherwise request through a modprobe the initramfs does not have.
const MODULES = ['virtio_pci', 'virtio_blk', 'virtio_net', 'crc32c_generic', 'ext4']
const CMDLINE = 'console=tty0 console=ttyS0 panic=-1 mitigations=off'
const t0 = Date.now()
const log = (msg) => process.stderr.write(`[build-test-guest ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`)

export const standInSpec = () => ({
  agent: ['/usr/bin/node', '/opt/aviary/stand-in-agent.mjs', '0.0.0.0', '8000'],
  files: [{ from: path.join(templates, 'stand-in-agent.mjs'), to: '/opt/aviary/stand-in-agent.mjs' }]
})

function normalize(spec) {
  if (!Array.isArray(spec.agent) || spec.agent.length === 0) throw new Error('spec.agent: a command line is required')
  const files = (spec.files ?? []).map((f) => {
    if (!path.isAbsolute(f.to)) throw new Error(`spec.files: guest path ${f.to} is not absolute`)
    return { from: path.resolve(f.from), to: f.to, mode: f.mode ?? (fs.statSync(f.from).mode & 0o777) }
  })
  return {
    out: path.resolve(spec.out ?? path.join(root, 'out/test-guest')),
    agent: spec.agent.map(String),
    files,
    node: spec.node ?? true,
    ip: spec.ip ?? '10.205.0.2/24',
    gateway: spec.gateway ?? '10.205.0.1',
    dns: spec.dns ?? '10.205.0.1',
    // Left out when false, so the specs (and cache keys) of guests without it stay as they were.
    ...(spec.consoleShell ? { consoleShell: true } : {})
  }
}

const sha256File = async (file) => {
  const h = createHash('sha256')
  await pipeline(fs.createReadStream(file), h)
  return h.digest('hex')
}

/** Libraries an ELF file loads (from ldd), as absolute host paths; [] for scripts and static files. */
async function sharedLibs(file) {
  try {
    const { stdout } = await run('ldd', [file])
    return [...stdout.matchAll(/(?:=>\s*)?(\/\S+)\s+\(0x/g)].map((m) => m[1])
  } catch {
    return [] // "not a dynamic executable"
  }
}

/** The host files the guest's root gets: guest path → host path. */
async function payload(spec) {
  const map = new Map()
  const elf = spec.node ? [['/usr/bin/node', process.execPath]] : []
  for (const f of spec.files) elf.push([f.to, f.from])
  for (const [to, from] of elf) {
    map.set(to, from)
    for (const lib of await sharedLibs(from)) map.set(lib, lib)
  }
  return map
}

/** The newest cached kernel package, else the newest linux-image-6.1.0-N-amd64 apt knows, downloaded. */
async function kernelDeb(dir) {
  fs.mkdirSync(dir, { recursive: true })
  // Exactly the signed image package (not -dbg, -unsigned, -rt or -cloud) and its .deb.
  const abi = (name) => Number(/^linux-image-6\.1\.0-(\d+)-amd64(?:$|_.*\.deb$)/.exec(name)?.[1] ?? -1)
  const newest = (names) => names.filter((n) => abi(n) >= 0).sort((a, b) => abi(b) - abi(a))[0]
  const cached = newest(fs.readdirSync(dir).filter((n) => n.endsWith('.deb')))
  if (cached) return path.join(dir, cached)
  const known = async () => newest((await run('apt-cache', ['pkgnames', 'linux-image-6.1.0-'])).stdout.split('\n'))
  let pkg = await known().catch(() => undefined)
  if (!pkg) {
    log('apt-get update (no kernel package known yet)')
    await run('apt-get', ['update', '-qq'])
    pkg = await known()
  }
  if (!pkg) throw new Error('apt knows no linux-image-6.1.0-*-amd64 package')
  log(`apt-get download ${pkg}`)
  const part = fs.mkdtempSync(path.join(dir, '.download-'))
  await run('apt-get', ['download', pkg], { cwd: part })
  const deb = fs.readdirSync(part).find((n) => n.endsWith('.deb'))
  fs.renameSync(path.join(part, deb), path.join(dir, deb))
  fs.rmSync(part, { recursive: true })
  return path.join(dir, deb)
}

/** Module files (relative to /lib/modules/<ver>) for MODULES and their dependencies, dependencies first. */
function moduleOrder(modulesDep) {
  const deps = new Map()
  for (const line of modulesDep.split('\n')) {
    const [mod, rest] = line.split(':')
    if (rest !== undefined) deps.set(mod, rest.trim().split(/\s+/).filter(Boolean))
  }
  const byName = new Map([...deps.keys()].map((m) => [path.basename(m, '.ko'), m]))
  const order = []
  const visit = (mod) => {
    if (order.includes(mod)) return
    for (const d of deps.get(mod) ?? []) visit(d)
    order.push(mod)
  }
  for (const name of MODULES) {
    const mod = byName.get(name)
    if (!mod) throw new Error(`kernel module ${name} not found in modules.dep`)
    visit(mod)
  }
  return order
}

const fill = (text, vars) => text.replace(/@([A-Z_]+)@/g, (_, k) => {
  if (!(k in vars)) throw new Error(`template variable @${k}@ has no value`)
  return vars[k]
})
const template = (name, vars = {}) => fill(fs.readFileSync(path.join(templates, name), 'utf8'), vars)
const quote = (s) => `'${s.replace(/'/g, `'\\''`)}'`
const put = (file, content, mode = 0o644) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content, { mode })
  fs.chmodSync(file, mode)
}

/** Packs `dir` as a gzipped newc cpio (what the kernel unpacks as its initramfs). */
async function packCpio(dir, dest) {
  const names = []
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name
      names.push(r)
      if (e.isDirectory()) walk(r)
    }
  }
  walk('')
  const cpio = spawn('cpio', ['-o', '-H', 'newc', '-R', '0:0', '--quiet'], { cwd: dir, stdio: ['pipe', 'pipe', 'inherit'] })
  cpio.stdin.end(names.join('\n') + '\n')
  const exited = new Promise((resolve, reject) => cpio.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`cpio exited ${c}`)))))
  await pipeline(cpio.stdout, createGzip(), fs.createWriteStream(dest))
  await exited
}

async function buildInitramfs(spec, deb, work, dest) {
  const kx = path.join(work, 'kernel')
  await run('dpkg', ['-x', deb, kx]) // unpacks only: no maintainer scripts, no initramfs-tools
  const ver = fs.readdirSync(path.join(kx, 'lib/modules'))[0]
  // The package ships no modules.dep (depmod runs at install); busybox's depmod writes one.
  await run('busybox', ['depmod', '-b', kx, ver])
  const order = moduleOrder(fs.readFileSync(path.join(kx, 'lib/modules', ver, 'modules.dep'), 'utf8'))
  const ird = path.join(work, 'initramfs')
  for (const m of order) fs.cpSync(path.join(kx, 'lib/modules', ver, m), path.join(ird, 'modules', path.basename(m)))
  fs.mkdirSync(path.join(ird, 'bin'), { recursive: true })
  fs.copyFileSync('/bin/busybox', path.join(ird, 'bin/busybox'))
  put(path.join(ird, 'init'), template('initramfs-init.sh', { MODULES: order.map((m) => path.basename(m)).join(' ') }), 0o755)
  await packCpio(ird, path.join(dest, 'initrd.img'))
  fs.copyFileSync(path.join(kx, `boot/vmlinuz-${ver}`), path.join(dest, 'vmlinuz'))
  fs.rmSync(kx, { recursive: true })
  return { version: ver, modules: order.map((m) => path.basename(m, '.ko')) }
}

async function buildDisk(spec, files, work, dest) {
  const rootfs = path.join(work, 'rootfs')
  for (const d of ['proc', 'sys', 'dev', 'root', 'etc/init.d', 'etc/aviary', 'lib64', 'usr/bin', 'usr/sbin', 'opt', 'var/log']) {
    fs.mkdirSync(path.join(rootfs, d), { recursive: true })
  }
  fs.mkdirSync(path.join(rootfs, 'tmp'), { mode: 0o1777 })
  fs.chmodSync(path.join(rootfs, 'tmp'), 0o1777)
  fs.mkdirSync(path.join(rootfs, 'bin'))
  fs.copyFileSync('/bin/busybox', path.join(rootfs, 'bin/busybox'))
  const { stdout } = await run('/bin/busybox', ['--list-full'])
  for (const applet of stdout.split('\n').filter(Boolean)) {
    const link = path.join(rootfs, applet)
    if (fs.existsSync(link)) continue
    fs.mkdirSync(path.dirname(link), { recursive: true })
    fs.symlinkSync('/bin/busybox', link)
  }
  const [ipAddr] = spec.ip.split('/')
  const vars = { IP: spec.ip, GATEWAY: spec.gateway }
  // consoleShell: what is typed on the VGA console (the live console's keyboard) runs as root.
  put(path.join(rootfs, 'etc/inittab'), template('inittab') + (spec.consoleShell ? 'tty1::respawn:-/bin/sh\n' : ''))
  put(path.join(rootfs, 'etc/init.d/rcS'), template('rcS', vars), 0o755)
  put(path.join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n')
  put(path.join(rootfs, 'etc/group'), 'root:x:0:\n')
  put(path.join(rootfs, 'etc/hosts'), `127.0.0.1 localhost\n${ipAddr} aviary-guest\n`)
  put(path.join(rootfs, 'etc/resolv.conf'), `nameserver ${spec.dns}\n`)
  put(path.join(rootfs, 'etc/nsswitch.conf'), 'hosts: files dns\n')
  const agentSh = [
    '#!/bin/sh',
    '# Written by scripts/build-test-guest.mjs: the agent command of the build spec.',
    'export HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin',
    `cd ${quote(path.posix.dirname(spec.agent[0]))}`,
    'echo "aviary-guest: starting the agent"',
    `exec ${spec.agent.map(quote).join(' ')}`
  ]
  put(path.join(rootfs, 'etc/aviary/agent.sh'), agentSh.join('\n') + '\n', 0o755)
  for (const [to, from] of files) {
    const dst = path.join(rootfs, to)
    fs.mkdirSync(path.dirname(dst), { recursive: true })
    fs.copyFileSync(from, dst) // follows symlinks: the guest gets the library's bytes under the linked name
    const wanted = spec.files.find((f) => f.to === to)?.mode
    fs.chmodSync(dst, wanted ?? (fs.statSync(from).mode & 0o777))
  }
  const { stdout: du } = await run('du', ['-sb', rootfs])
  // Room for what the analyzer and samples write into the guest; the qcow2 stays sparse.
  const sizeMiB = Math.ceil((Number(du.split('\t')[0]) * 1.2) / 2 ** 20) + 512
  const raw = path.join(work, 'rootfs.ext4')
  fs.closeSync(fs.openSync(raw, 'w'))
  fs.truncateSync(raw, sizeMiB * 2 ** 20)
  await run('mkfs.ext4', ['-q', '-F', '-L', 'aviary-root', '-m', '0', '-E', 'root_owner=0:0', '-d', rootfs, raw])
  await run('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', raw, path.join(dest, 'rootfs.qcow2')])
  fs.rmSync(rootfs, { recursive: true })
  fs.rmSync(raw)
  return sizeMiB
}

/** Keeps the `keep` newest builds; each is a few hundred MB. */
function prune(out, current, keep = 3) {
  const builds = fs.readdirSync(out).filter((n) => /^g-[0-9a-f]{16}$/.test(n) && fs.existsSync(path.join(out, n, 'manifest.json')))
  const byAge = builds.map((n) => [n, fs.statSync(path.join(out, n, 'manifest.json')).mtimeMs]).sort((a, b) => b[1] - a[1])
  for (const [n] of byAge.slice(keep)) if (n !== current) fs.rmSync(path.join(out, n), { recursive: true, force: true })
}

export async function buildTestGuest(rawSpec) {
  const spec = normalize(rawSpec)
  const deb = await kernelDeb(path.join(spec.out, 'kernel'))
  const files = await payload(spec)
  const h = createHash('sha256')
  h.update(fs.readFileSync(SELF))
  for (const t of ['initramfs-init.sh', 'rcS', 'inittab']) h.update(fs.readFileSync(path.join(templates, t)))
  h.update(path.basename(deb))
  h.update(await sha256File('/bin/busybox'))
  h.update(JSON.stringify({ ...spec, out: undefined, files: spec.files.map((f) => [f.to, f.mode]) }))
  for (const [to, from] of [...files].sort()) h.update(`${to}\0${await sha256File(from)}\0`)
  const key = `g-${h.digest('hex').slice(0, 16)}`
  const dest = path.join(spec.out, key)
  if (fs.existsSync(path.join(dest, 'manifest.json'))) {
    log(`cached: ${dest}`)
    return { ...JSON.parse(fs.readFileSync(path.join(dest, 'manifest.json'), 'utf8')), cached: true }
  }
  log(`building ${key} (kernel ${path.basename(deb)})`)
  // Built aside and renamed into place, so an interrupted build never looks like a cached one.
  const work = fs.mkdtempSync(path.join(spec.out, `.${key}-`))
  try {
    return await buildInto(spec, files, deb, key, dest, work)
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
}

async function buildInto(spec, files, deb, key, dest, work) {
  const part = path.join(work, 'out')
  fs.mkdirSync(part)
  const kernel = await buildInitramfs(spec, deb, work, part)
  log(`initramfs: ${kernel.modules.join(' ')}`)
  const diskMiB = await buildDisk(spec, files, work, part)
  log(`disk: ${diskMiB} MiB ext4 in qcow2`)
  const manifest = {
    key,
    kernel: path.join(dest, 'vmlinuz'),
    initrd: path.join(dest, 'initrd.img'),
    disk: path.join(dest, 'rootfs.qcow2'),
    cmdline: CMDLINE,
    kernelVersion: kernel.version,
    kernelPackage: path.basename(deb),
    agent: spec.agent,
    ip: spec.ip,
    buildSeconds: (Date.now() - t0) / 1000
  }
  fs.writeFileSync(path.join(part, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n')
  fs.rmSync(dest, { recursive: true, force: true })
  fs.renameSync(part, dest)
  prune(spec.out, key)
  log('done')
  return { ...manifest, cached: false }
}

if (process.argv[1] === SELF) {
  const i = process.argv.indexOf('--spec')
  const spec = i > 0 ? JSON.parse(fs.readFileSync(process.argv[i + 1], 'utf8')) : standInSpec()
  buildTestGuest(spec).then(
    (m) => process.stdout.write(JSON.stringify(m) + '\n'),
    (err) => {
      process.stderr.write(`build-test-guest: ${err.stack ?? err}\n`)
      process.exit(1)
    }
  )
}
