// The rooter's command lines as README.md and docs/network.md give them, run as written: an
// install with --print added (it would write /etc and start a unit), the rooter itself and its
// `remove` in a network namespace of the test's own. A documented command that fails (as
// `rooter install --guest-network …` once did: the parent command took the options) fails here.
import { describe, expect, it } from 'vitest'
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const DOCS = ['README.md', 'docs/network.md']

/** Every rooter command line of a Markdown text: shell blocks and inline code, without placeholders. */
function rooterCommands(markdown: string): string[] {
  const pieces: string[] = []
  for (const m of markdown.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)) pieces.push(...m[1]!.split('\n'))
  for (const m of markdown.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`\n]+)`/g)) pieces.push(m[1]!)
  return pieces.map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => /^(sudo )?(node bin\/aviary\.js|aviary) rooter\b/.test(l) && !/[<[…]|CIDR|IF:TABLE/.test(l))
}

/** As a user would type it here (as root, from the project folder). */
const asRun = (line: string): string => line.replace(/^sudo /, '').replace(/^aviary /, 'node bin/aviary.js ')

describe('the rooter commands of the documentation', () => {
  const found = DOCS.flatMap((f) => rooterCommands(readFileSync(f, 'utf8')).map((line) => ({ file: f, line })))

  it('finds the commands (README step 2, the install, foreground and remove lines of docs/network.md)', () => {
    expect(found.filter((c) => c.file === 'README.md').length).toBeGreaterThan(0)
    expect(found.some((c) => / rooter install /.test(c.line))).toBe(true)
    expect(found.some((c) => / rooter --guest-network /.test(c.line))).toBe(true)
    expect(found.some((c) => / rooter remove\b/.test(c.line))).toBe(true)
  })

  it.each(found.filter((c) => / rooter install /.test(c.line)))('$file: $line (with --print)', async ({ line }) => {
    const { stdout } = await run('sh', ['-c', `${asRun(line)} --print`], { env: { ...process.env, USER: 'analyst' } })
    const config = JSON.parse(/^# \/etc\/aviary\/rooter\.json\n([\s\S]*?)\n# /m.exec(stdout)?.[1] ?? 'null') as { guest_networks: string[]; group: string }
    for (const net of line.match(/--guest-network (\S+)/g) ?? []) expect(config.guest_networks).toContain(net.split(' ')[1])
    expect(config.group).toBe('aviary')
    expect(stdout).toContain('ExecStart=')
    expect(stdout).toMatch(/usermod --append --groups aviary analyst/)
  })

  it.each(found.filter((c) => / rooter (--|remove)/.test(c.line)))('$file: $line (in a namespace of its own)', async ({ line }) => {
    const ns = `avdoc${Math.random().toString(36).slice(2, 7)}`
    const dir = mkdtempSync(path.join(tmpdir(), 'aviary-doc-'))
    await run('ip', ['netns', 'add', ns])
    try {
      const cmd = `${asRun(line)} --socket ${path.join(dir, 'rooter.sock')}`
      if (/ rooter remove\b/.test(line)) {
        const { stdout } = await run('ip', ['netns', 'exec', ns, 'sh', '-c', cmd])
        expect(stdout).toMatch(/removed the table inet aviary/)
        return
      }
      const child = spawn('ip', ['netns', 'exec', ns, 'sh', '-c', `exec ${cmd}`], { stdio: ['ignore', 'ignore', 'pipe'] })
      let err = ''
      await new Promise<void>((resolve, reject) => {
        child.stderr!.on('data', (b: Buffer) => { err += b.toString(); if (err.includes('listening on')) resolve() })
        child.once('exit', (code) => reject(new Error(`exited (${code}): ${err}`)))
      })
      child.kill('SIGTERM')
      const code = await new Promise((r) => child.once('exit', r))
      expect(code).toBe(0)
      expect((await run('ip', ['netns', 'exec', ns, 'nft', 'list', 'table', 'inet', 'aviary'])).stdout).toContain('iifname @guest_ifs jump from_guest')
    } finally {
      await run('ip', ['netns', 'del', ns]).catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
