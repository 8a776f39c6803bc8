// What the UI benches share (ui-tasks, ui-calls, ui-compare): a free port, the built `aviary
// serve` in its own process (registered with cleanup.mjs), waiting for it to answer, Debian's
// Chromium launched so that cleanup.mjs, not Playwright, handles signals, and the CPU profile's
// self time per function.
import { execFileSync, spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { own, stopChild, track } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))

export const freePort = () => Number(execFileSync(process.execPath, ['-e',
  'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})']).toString())

export async function waitFor(url) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).ok) return
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${url} did not answer`)
}

/** `aviary serve --data dataDir` on a free port (extra Node flags first); resolves once it answers. */
export async function startAviary(dataDir, nodeArgs = []) {
  const port = freePort()
  const child = track(spawn(process.execPath, [...nodeArgs, path.join(root, 'bin/aviary.js'), 'serve', '--data', dataDir, '-p', String(port)],
    { stdio: ['ignore', 'ignore', 'inherit'], detached: true }), { group: true, graceMs: 20_000, label: 'stop aviary serve' })
  const base = `http://127.0.0.1:${port}`
  const stop = () => stopChild(child, { group: true, graceMs: 20_000 })
  try {
    await waitFor(`${base}/cuckoo/status`)
  } catch (err) {
    await stop()
    throw err
  }
  return { base, stop }
}

/**
 * Debian's Chromium, its temp files in the bench's folder `work` (a signal during its start leaves
 * none in /tmp). Playwright's own signal handlers are off: it would exit the process (130) before
 * cleanup.mjs stops the service and removes the folders.
 */
export function launchChromium(work) {
  return own(chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'], env: { ...process.env, TMPDIR: work },
    handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false }), (b) => b.close(), 'close Chromium')
}

/** Self time per function of a CDP CPU profile, the top 20, through `log`. */
export function printProfile(profile, log) {
  const self = new Map()
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  profile.samples.forEach((id, i) => {
    const f = byId.get(id).callFrame
    const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000)
  })
  for (const [k, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 20)) log(`${ms.toFixed(0).padStart(6)} ms  ${k}`)
}
