#!/usr/bin/env node
// The dispatcher at scale (figures, not a test): 10,000 queued tasks assigned and submitted over 4
// real headless nodes (`aviary serve` processes with fresh data folders and no machines, so tasks
// wait there), on SQLite and on PostgreSQL. Measured from the worker's start to the last task
// `processing`: wall time and the CPU time of the dispatcher (this process: store and worker; the
// nodes and the PostgreSQL server are other processes). Target: < 5 s of CPU. Prints JSON.
// The dispatcher's code is bundled from src/ with esbuild (as scripts/build-cli.mjs does).
// Usage: node bench/dist.bench.mjs [--no-build] [--tasks N] [--only sqlite|postgresql] [--profile DIR] [--quick (200 tasks)]
// --profile writes DIR/dist-<db>.cpuprofile: the dispatcher's CPU profile over the measured phase
// only (not the setup), for Chrome DevTools or speedscope.
// Interrupted or failing, it stops the nodes and the PostgreSQL cluster and removes its folders.
import { execFileSync, spawn } from 'node:child_process'
import { Session } from 'node:inspector/promises'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { args, cleanup, numArg, onCleanup, own, stopChild, tempDir, track } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const TASKS = numArg('--tasks', 10_000, 200)
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null
const profileDir = args.includes('--profile') ? path.resolve(args[args.indexOf('--profile') + 1]) : null
const NODES = 4
// Nodes without machines never start a task, so each must accept its whole share: the threshold
// (a node's pending tasks above which it gets no submissions) is set to fit.
const THRESHOLD = Math.ceil(TASKS / NODES)

if (!args.includes('--no-build')) execFileSync(process.execPath, [path.join(root, 'scripts/build-cli.mjs')], { stdio: 'inherit' })

async function bundle() {
  // Under out/ so that the bundle's external packages resolve from the project.
  const outdir = tempDir('dist-bench-', path.join(root, 'out'))
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const entry = path.join(outdir, 'dist-entry.ts')
  writeFileSync(entry, [
    `export { openStore } from '${root}/src/dispatcher/store/index'`,
    `export { startWorker } from '${root}/src/dispatcher/worker/index'`,
    `export { startPostgres } from '${root}/test/postgres'`
  ].join('\n'))
  const outfile = path.join(outdir, 'dist.mjs')
  await build({
    entryPoints: [entry], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'warning',
    external: Object.keys(pkg.dependencies).flatMap((d) => [d, `${d}/*`]),
    // test/postgres.ts registers vitest hooks in usePostgres(), which the bench does not call.
    plugins: [{
      name: 'no-vitest',
      setup(b) {
        b.onResolve({ filter: /^vitest$/ }, () => ({ path: 'vitest', namespace: 'stub' }))
        b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({ contents: 'export const beforeAll = () => {}; export const afterAll = () => {}' }))
      }
    }]
  })
  return import(pathToFileURL(outfile).href)
}

const freePort = () => Number(execFileSync(process.execPath, ['-e',
  'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})']).toString())

async function startNode() {
  const dataDir = tempDir('aviary-bench-node-')
  const port = freePort()
  const child = track(spawn(process.execPath, [path.join(root, 'bin/aviary.js'), 'serve', '--data', dataDir, '-p', String(port)],
    { stdio: ['ignore', 'ignore', 'inherit'] }), { graceMs: 20_000, label: `stop node on port ${port}` })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/cuckoo/status`)).ok) break
    } catch { /* not yet */ }
    if (i >= 300 || child.exitCode !== null) throw new Error(`the node on port ${port} did not start`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    async stop() {
      await stopChild(child, { graceMs: 20_000 })
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

async function run(kind, dist, dbUrl) {
  const dir = tempDir('aviary-bench-dist-')
  const nodes = []
  let store
  const closeStore = onCleanup(() => store?.close(), 'close the store')
  try {
    for (let i = 0; i < NODES; i++) nodes.push(await startNode())
    store = await dist.openStore(dbUrl ?? path.join(dir, 'dist.db'), dir)
    for (const [i, n] of nodes.entries()) {
      await store.addNode({ name: `node${i + 1}`, url: n.url, machines: [{ name: 'win10', platform: 'windows', tags: [] }] })
    }
    const samplesDir = path.join(dir, 'samples')
    mkdirSync(samplesDir)
    const sample = path.join(samplesDir, 'sample.exe')
    writeFileSync(sample, Buffer.alloc(4096, 7))
    const fields = { package: null, timeout: null, priority: 1, options: null, machine: null, platform: 'windows', tags: null, custom: null, owner: null, memory: null, clock: null, enforce_timeout: null }
    for (let i = 0; i < TASKS; i++) await store.createTask({ ...fields, category: 'file', path: sample, filename: `sample-${i}.exe`, url: null })

    // The machine is shared: the 1-minute load average before the run says how busy it was.
    const loadBefore = +os.loadavg()[0].toFixed(2)
    const profiler = profileDir ? new Session() : null
    if (profiler) {
      profiler.connect()
      await profiler.post('Profiler.enable')
      await profiler.post('Profiler.start')
    }
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const worker = dist.startWorker(store, {
      reportsDir: path.join(dir, 'reports'), samplesDir, threshold: THRESHOLD, assignIntervalMs: 200, nodeIntervalMs: 200, concurrency: 8,
      log: { info: () => undefined, warn: (m) => console.error(m) }
    })
    const stopWorker = onCleanup(() => worker.stop(), 'stop the dispatcher worker')
    // The poll runs in this process, so its CPU counts as the dispatcher's: every 250 ms (a count
    // over all tasks costs ~1-2 ms on SQLite) keeps it small, for a wall time within 0.25 s.
    const deadline = Date.now() + 600_000
    for (;;) {
      const { processing } = await store.countByStatus()
      if (processing >= TASKS) break
      if (Date.now() > deadline) throw new Error(`only ${processing} of ${TASKS} tasks processing after 600 s`)
      await new Promise((r) => setTimeout(r, 250))
    }
    const wall = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    if (profiler) {
      const { profile } = await profiler.post('Profiler.stop')
      mkdirSync(profileDir, { recursive: true })
      writeFileSync(path.join(profileDir, `dist-${kind}.cpuprofile`), JSON.stringify(profile))
      profiler.disconnect()
    }
    await stopWorker()
    const counts = await store.countByStatus()
    const perNode = []
    for (const n of nodes) perNode.push((await (await fetch(`${n.url}/cuckoo/status`)).json()).tasks.total)
    return {
      tasks: TASKS, nodes: NODES, threshold: THRESHOLD,
      wall_s: +wall.toFixed(2),
      cpu_s: +((cpu.user + cpu.system) / 1e6).toFixed(2),
      cpu_user_s: +(cpu.user / 1e6).toFixed(2),
      cpu_system_s: +(cpu.system / 1e6).toFixed(2),
      tasks_per_node: perNode,
      all_processing: counts.processing === TASKS,
      all_created_once: perNode.reduce((a, b) => a + b, 0) === TASKS,
      load_before: loadBefore
    }
  } finally {
    await closeStore()
    for (const n of nodes) await n.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

try {
  const dist = await bundle()
  const results = { target_cpu_s: 5 }
  if (!only || only === 'sqlite') results.sqlite = await run('sqlite', dist)
  if (!only || only === 'postgresql') {
    const starting = own(dist.startPostgres(), (pg) => pg.stop(), 'stop the PostgreSQL cluster')
    const pg = await starting
    try {
      results.postgresql = await run('postgresql', dist, await pg.newDatabase('bench'))
    } finally {
      await starting.release()
    }
  }
  console.log(JSON.stringify(results, null, 2))
} finally {
  await cleanup()
}
