// Volatility 3 over the machine's full dump (memory=1), when the user has it: `vol` on PATH (it is
// in neither Debian 12 nor npm; `pip install volatility3` gives it). Two plugins, the ones an
// analyst reads first: the process list and malfind (memory that is executable, private and not
// backed by a file: injected or unpacked code), for the machine's platform (windows.* or linux.*).
// Each runs as `vol -q -r json -f <dump> <plugin>`, bounded in time (VOL_SECONDS) and output
// (VOL_OUTPUT_BYTES); its JSON rows (column names as Volatility prints them) are reduced to a few
// named fields, at most MAX_ROWS per plugin. Volatility is the fragile part of other sandboxes
// (symbol tables missing for a kernel, a plugin failing on a dump): a plugin that fails is named
// in `errors` with the first line it printed, and the rest of the report is unaffected.
import { execFile } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import path from 'node:path'
import { Closed, Type, type Static } from './schema'

export const VOL_SECONDS = 600
const VOL_OUTPUT_BYTES = 64 * 1024 * 1024
export const MAX_ROWS = 2000
const HEX_CHARS = 1024

export const VolProcessSchema = Closed({
  pid: Type.Integer(), ppid: Type.Union([Type.Integer(), Type.Null()]), name: Type.String(),
  offset: Type.Union([Type.String(), Type.Null()]), threads: Type.Union([Type.Integer(), Type.Null()]),
  create_time: Type.Union([Type.String(), Type.Null()]), exit_time: Type.Union([Type.String(), Type.Null()])
})
export const VolMalfindSchema = Closed({
  pid: Type.Integer(), process: Type.String(), start: Type.String(), end: Type.String(),
  protection: Type.String(), hexdump: Type.String(), disasm: Type.String()
})
export const VolatilitySchema = Closed({
  /** The plugins run (windows.pslist.PsList, ...). */
  plugins: Type.Array(Type.String()),
  pslist: Type.Array(VolProcessSchema),
  malfind: Type.Array(VolMalfindSchema),
  errors: Type.Array(Type.String())
})
export type Volatility = Static<typeof VolatilitySchema>

/** `vol` on PATH, or null. */
export function findVol(env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue
    const p = path.join(dir, 'vol')
    try {
      accessSync(p, constants.X_OK)
      return p
    } catch {
      // not here
    }
  }
  return null
}

type Row = Record<string, unknown>

function runPlugin(vol: string, dump: string, plugin: string, seconds: number): Promise<Row[]> {
  return new Promise((resolve, reject) => {
    execFile(vol, ['-q', '-r', 'json', '-f', dump, plugin], { timeout: seconds * 1000, maxBuffer: VOL_OUTPUT_BYTES, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      if (err) {
        const first = `${stderr}`.split('\n').map((l) => l.trim()).find((l) => l !== '') ?? err.message
        reject(new Error(err.killed ? `stopped after ${seconds} s` : first.slice(0, 300)))
        return
      }
      try {
        const rows = JSON.parse(stdout) as unknown
        if (!Array.isArray(rows)) throw new Error('not a JSON list')
        // Child rows (__children) are flattened: pstree-like plugins nest them.
        const flat: Row[] = []
        const walk = (list: unknown[]): void => {
          for (const r of list) {
            if (flat.length >= MAX_ROWS || r === null || typeof r !== 'object') continue
            flat.push(r as Row)
            const kids = (r as Row).__children
            if (Array.isArray(kids)) walk(kids)
          }
        }
        walk(rows)
        resolve(flat)
      } catch (e) {
        reject(new Error(`unreadable output: ${(e as Error).message}`))
      }
    })
  })
}

const pick = (r: Row, ...keys: string[]): unknown => keys.map((k) => r[k]).find((v) => v !== undefined && v !== null)
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null)
const text = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' ? `0x${v.toString(16)}` : null)

export async function runVolatility(dump: string, platform: string, o: { vol?: string | null; seconds?: number } = {}): Promise<Volatility | null> {
  const vol = o.vol === undefined ? findVol() : o.vol
  if (vol === null) return null
  const os = platform === 'windows' ? 'windows' : 'linux'
  const plugins = [`${os}.pslist.PsList`, `${os}.malfind.Malfind`]
  const out: Volatility = { plugins, pslist: [], malfind: [], errors: [] }
  const seconds = o.seconds ?? VOL_SECONDS
  try {
    for (const r of await runPlugin(vol, dump, plugins[0]!, seconds)) {
      const pid = int(pick(r, 'PID', 'Pid'))
      if (pid === null) continue
      out.pslist.push({
        pid, ppid: int(pick(r, 'PPID', 'PPid')), name: text(pick(r, 'ImageFileName', 'COMM', 'Name')) ?? '',
        offset: text(pick(r, 'Offset(V)', 'OFFSET (V)', 'Offset')), threads: int(pick(r, 'Threads')),
        create_time: text(pick(r, 'CreateTime', 'CREATION TIME')), exit_time: text(pick(r, 'ExitTime'))
      })
    }
  } catch (err) {
    out.errors.push(`${plugins[0]}: ${(err as Error).message}`)
  }
  try {
    for (const r of await runPlugin(vol, dump, plugins[1]!, seconds)) {
      const pid = int(pick(r, 'PID'))
      if (pid === null) continue
      out.malfind.push({
        pid, process: text(pick(r, 'Process')) ?? '', start: text(pick(r, 'Start VPN', 'Start')) ?? '', end: text(pick(r, 'End VPN', 'End')) ?? '',
        protection: text(pick(r, 'Protection')) ?? '', hexdump: (text(pick(r, 'Hexdump')) ?? '').slice(0, HEX_CHARS),
        disasm: (text(pick(r, 'Disasm')) ?? '').slice(0, HEX_CHARS)
      })
    }
  } catch (err) {
    out.errors.push(`${plugins[1]}: ${(err as Error).message}`)
  }
  return out
}
