// The answer medium: a small ISO beside the user's untouched Windows ISO, holding Autounattend.xml
// (which Windows Setup looks for in the root of every CD), the agent and the first-logon script.
// Built with xorriso (`-as mkisofs`): Rock Ridge for Linux tools, Joliet for Windows, which reads
// the Joliet names (case kept, long names) and so finds `Autounattend.xml` as written.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { MEDIUM_FILES } from './first-logon'

const run = promisify(execFile)

/** The volume label: a plain one, as a vendor's driver disc might have. */
export const MEDIUM_LABEL = 'SETUP'

export interface AnswerMediumInput {
  /** Autounattend.xml's text. */
  unattend: string
  /** guestsetup.cmd's text. */
  script: string
  /** The Windows agent (aviary-agent-win-x64.exe), copied in as guestd.exe. */
  agentExe: string
  /** The ISO to write (replaced if it exists). */
  out: string
  /** The xorriso executable (default from PATH). */
  xorriso?: string
}

export class AnswerMediumError extends Error {}

export async function buildAnswerMedium(i: AnswerMediumInput): Promise<void> {
  let agentSize: number
  try {
    agentSize = statSync(i.agentExe).size
  } catch {
    throw new AnswerMediumError(`the Windows agent ${i.agentExe} does not exist: build it with \`npm run build:agent\``)
  }
  if (agentSize === 0) throw new AnswerMediumError(`the Windows agent ${i.agentExe} is empty`)
  // Graft points name each file in the image whatever its name here; `=` and `\` in a source
  // path would be read as syntax, which only the agent's path (the user's build folder) could hold.
  if (/[=\\]/.test(path.resolve(i.agentExe))) throw new AnswerMediumError(`the agent's path must not contain '=' or '\\': ${i.agentExe}`)
  const work = mkdtempSync(path.join(path.dirname(i.out), '.answer-'))
  try {
    writeFileSync(path.join(work, 'unattend.xml'), i.unattend)
    writeFileSync(path.join(work, 'script.cmd'), i.script)
    rmSync(i.out, { force: true })
    await run(i.xorriso ?? 'xorriso', [
      '-no_rc', '-as', 'mkisofs', '-quiet', '-o', i.out, '-V', MEDIUM_LABEL,
      '-J', '-joliet-long', '-r', '-iso-level', '3', '-graft-points',
      `${MEDIUM_FILES.unattend}=${path.join(work, 'unattend.xml')}`,
      `${MEDIUM_FILES.agent}=${path.resolve(i.agentExe)}`,
      `${MEDIUM_FILES.script}=${path.join(work, 'script.cmd')}`
    ], { timeout: 300_000, maxBuffer: 4 << 20 }).catch((err: NodeJS.ErrnoException & { stderr?: string }) => {
      if (err.code === 'ENOENT') throw new AnswerMediumError('xorriso was not found: install it (apt-get install xorriso)')
      throw new AnswerMediumError(`xorriso could not write ${i.out}: ${(err.stderr ?? err.message).trim().split('\n').slice(-2).join(' ')}`)
    })
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

export interface MediumEntry { name: string; size: number }

/**
 * The files in an ISO's root as xorriso lists them (`-lsl /`): `tree: 'rockridge'` reads the Rock
 * Ridge names (as Linux sees them), `'joliet'` the Joliet names (as Windows sees them).
 */
export async function listIsoRoot(iso: string, tree: 'rockridge' | 'joliet' = 'rockridge', xorriso = 'xorriso'): Promise<MediumEntry[]> {
  const args = ['-no_rc', ...(tree === 'joliet' ? ['-read_fs', 'norock'] : []), '-indev', iso, '-lsl', '/']
  const { stdout } = await run(xorriso, args, { timeout: 60_000, maxBuffer: 4 << 20 })
  const entries: MediumEntry[] = []
  for (const line of stdout.split('\n')) {
    // -r--r--r--    1 0        0            1000 Nov 28 05:54 'guestd.exe'
    const m = /^\S+\s+\d+\s+\S+\s+\S+\s+(\d+)\s+\S+\s+\d+\s+\S+\s+'(.*)'$/.exec(line)
    if (m) entries.push({ name: m[2]!.replace(/'"'"'/g, "'"), size: Number(m[1]) })
  }
  return entries
}
