// The UI is there after an install, wherever `aviary serve` is started from. What `npm install`
// runs (package.json's prepare script) builds the CLI and the UI into a fresh folder inside the
// checkout (so its node_modules resolve), with the `aviary` command beside them as the package
// has it; the command is then started from another directory (the system's temp folder, which has
// no out/) and must serve the real built UI at /, with every asset it names, not the
// "the web UI has not been built yet" page.
import { afterAll, describe, expect, it } from 'vitest'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

const root = path.resolve('.')
const install = mkdtempSync(path.join(root, '.install-test-'))
const data = mkdtempSync(path.join(tmpdir(), 'aviary-install-data-'))
let child: ChildProcess | undefined

afterAll(() => {
  child?.kill('SIGTERM')
  rmSync(install, { recursive: true, force: true })
  rmSync(data, { recursive: true, force: true })
})

describe('after npm install', () => {
  it('aviary serve serves the built UI when started from another directory', async () => {
    const prepare = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { prepare: string } }).scripts.prepare
    expect(prepare).toMatch(/build-ui/)
    execFileSync('sh', ['-c', prepare], {
      cwd: root, stdio: 'pipe',
      env: { ...process.env, AVIARY_CLI_OUTDIR: path.join(install, 'out', 'cli'), AVIARY_UI_OUTDIR: path.join(install, 'out') }
    })
    mkdirSync(path.join(install, 'bin'))
    copyFileSync('bin/aviary.js', path.join(install, 'bin', 'aviary.js'))

    child = spawn(process.execPath, [path.join(install, 'bin', 'aviary.js'), 'serve', '-p', '0', '--data', data], { cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no UI line in 30 s: ${out}`)), 30_000)
      const seen = (d: Buffer) => {
        out += d.toString()
        const m = /UI: (http:\/\/\S+?)\/?\s/.exec(out)
        if (m) { clearTimeout(timer); resolve(m[1]!) }
      }
      child!.stdout!.on('data', seen)
      child!.stderr!.on('data', seen)
      child!.once('exit', (code) => { clearTimeout(timer); reject(new Error(`aviary serve exited (${code}): ${out}`)) })
    })
    const html = await (await fetch(`${url}/`)).text()
    expect(html).not.toMatch(/has not been built/)
    expect(html).toBe(readFileSync(path.join(install, 'out', 'renderer', 'index.html'), 'utf8'))
    const assets = [...html.matchAll(/(?:src|href)="\.?(\/(?:assets\/[^"]+|favicon\.svg))"/g)].map((m) => m[1]!)
    expect(assets.filter((a) => a.startsWith('/assets/')).length).toBeGreaterThan(0)
    for (const a of assets) expect((await fetch(url + a)).status, a).toBe(200)
  }, 120_000)
})
