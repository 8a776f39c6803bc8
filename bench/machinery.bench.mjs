#!/usr/bin/env node
// Machinery benchmark (figures, not a test): what one kvm driver operation costs on libvirt's test
// hypervisor, where the hypervisor itself is instant, so the figures are the driver's own overhead:
// state() through the binding's one connection, check() (binding + two or three virsh processes),
// start() (virsh snapshot-revert + state polls) and stop() (binding destroy). Our own domain
// `avh4-bench` with a running snapshot; removed afterwards. The driver is bundled with esbuild
// from src/ on the fly (the CLI bundle does not export it).
// Usage: node bench/machinery.bench.mjs [--n 50] [--quick (3 runs each)]
import { execFileSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { cleanup, numArg, onCleanup, tempDir } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const N = numArg('--n', 50, 3)
const URI = 'test+unix:///default'
const DOMAIN = 'avh4-bench'
const virsh = (...a) => execFileSync('virsh', ['-q', '-c', URI, ...a], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

try {
  const work = tempDir('aviary-machinery-bench-')
  try { virsh('version') } catch { execFileSync('sh', ['-c', 'pgrep -x virtlogd || virtlogd -d; pgrep -x libvirtd || libvirtd -d; sleep 2']) }
  const out = path.join(root, 'out', `machinery-bench-${process.pid}.mjs`)
  onCleanup(() => rmSync(out, { force: true }), `remove ${out}`)
  await build({ entryPoints: [path.join(root, 'src/core/machinery/kvm.ts')], bundle: true, platform: 'node', format: 'esm', outfile: out, external: ['@unraid/libvirt'], logLevel: 'error' })
  const { KvmDriver } = await import(pathToFileURL(out).href)
  const { Hypervisor } = await import('@unraid/libvirt')
  // The test driver forgets everything when its last connection closes: hold one.
  const holder = new Hypervisor({ uri: URI })
  await holder.connectOpen()
  onCleanup(() => holder.connectClose(), 'close the test hypervisor connection')
  const xml = path.join(work, 'd.xml')
  writeFileSync(xml, `<domain type='test'><name>${DOMAIN}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`)
  try { virsh('destroy', DOMAIN) } catch { /* not running */ }
  try { virsh('undefine', DOMAIN, '--snapshots-metadata') } catch { /* not defined */ }
  onCleanup(() => {
    try { virsh('destroy', DOMAIN) } catch { /* off */ }
    try { virsh('undefine', DOMAIN, '--snapshots-metadata') } catch { /* gone */ }
  }, `remove domain ${DOMAIN}`)
  virsh('define', xml)
  virsh('start', DOMAIN)
  virsh('snapshot-create-as', DOMAIN, 'clean')
  const driver = new KvmDriver({ uri: URI, vmStateSeconds: 10 })
  const closeDriver = onCleanup(() => driver.close(), 'close the kvm driver')
  const m = { name: DOMAIN, label: DOMAIN, ip: '192.168.122.250', snapshot: 'clean', platform: 'windows', interface: null, options: [] }
  await driver.state(m) // connect once
  const figures = {}
  const time = async (name, f) => {
    const t = []
    for (let i = 0; i < N; i++) {
      const s = performance.now()
      await f()
      t.push(performance.now() - s)
    }
    t.sort((a, b) => a - b)
    figures[name] = { median_ms: +t[Math.floor(N / 2)].toFixed(2), p90_ms: +t[Math.floor(N * 0.9)].toFixed(2) }
  }
  await time('state()', () => driver.state(m))
  await time('check()', () => driver.check(m))
  await time('stop() + start()', async () => { await driver.stop(m); await driver.start(m) })
  await time('virsh domstate (one process, for comparison)', async () => virsh('domstate', DOMAIN))
  console.log(`kvm driver on ${URI}, ${N} runs each:`)
  console.table(figures)
  await closeDriver()
} finally {
  await cleanup()
}
