// `npm test`'s first step: the typecheck and the lint, side by side (each is one process that
// uses one core, and on a 2-core machine they took 64 s one after the other from a cold cache).
// Each one's output is printed whole once it ends, so the two never interleave; the step fails
// when either does.
import { spawn } from 'node:child_process'

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function run(script) {
  return new Promise((resolve) => {
    const child = spawn(npm, ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (b) => { out += b })
    child.stderr.on('data', (b) => { out += b })
    child.once('error', (err) => resolve({ script, code: 1, out: String(err) }))
    child.once('exit', (code, signal) => resolve({ script, code: code ?? (signal ? 1 : 0), out }))
  })
}

const results = await Promise.all(['typecheck', 'lint'].map(run))
for (const r of results) {
  process.stdout.write(`> ${r.script}: ${r.code === 0 ? 'ok' : `failed (${r.code})`}\n`)
  if (r.out.trim()) process.stdout.write(r.out.endsWith('\n') ? r.out : `${r.out}\n`)
}
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0
