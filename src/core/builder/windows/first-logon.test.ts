// The first-logon script under Wine, as Windows would run it: the answer medium is built with the
// real Windows agent (the Node single executable), extracted with xorriso and given to a Wine
// prefix as drive D:, and the FirstLogonCommands command line, read from the medium's own
// Autounattend.xml, runs under `wine cmd.exe` inside a network namespace guest
// (test/guests/wine-guest.ts's template prefix, netns-guest.ts's namespace avwv54). It must find
// the script on D:, install the agent at C:\Program Files\Guest Tools\guestd.exe and start it, and
// the agent must then answer on the guest's address, port 8000, from the host.
//
// What Wine cannot show: Wine's schtasks refuses /SC ONLOGON, so the script's fallback (starting
// the agent itself) is what runs here, not the scheduled task; `netsh advfirewall`, `sc`,
// `powershell` and `powercfg` are stubs or missing, so their steps are only seen to be logged.
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, symlinkSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNetnsGuest, type NetnsGuest } from '../../../../test/guests/netns-guest'
import { prefixFromTemplate, wineEnv, wineLeftAfter, windowsAgent } from '../../../../test/guests/wine-guest'
import { findOne, parseXml } from '../../../../test/windows-builder/xml-oracle'
import { probeAgent } from '../../guest/agent-identity'
import { buildAnswerMedium } from './answer-medium'
import { autounattendXml } from './autounattend'
import { AGENT_PATH, firstLogonScript, MEDIUM_FILES, SETUP_LOG } from './first-logon'
import { checkWindowsInput } from './options'

const run = promisify(execFile)
/** The guest's home on the host; Windows programs see the prefix's path, so it names no sandbox. */
const HOMES = '/var/cache/avwv-guests'
/** What an init system gives a program: enough for Wine, nothing of the test runner's. */
const UNIX_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root', USER: 'root', LANG: 'C.UTF-8' }

/** A C: path of the prefix on the host; Wine's own folders are lower case (C:\\windows\\temp), Windows is not case-sensitive. */
function onC(driveC: string, winPath: string): string {
  let at = driveC
  for (const part of winPath.slice(3).split('\\')) {
    const found = existsSync(at) ? readdirSync(at).find((n) => n.toLowerCase() === part.toLowerCase()) : undefined
    at = path.join(at, found ?? part)
  }
  return at
}

describe('the first-logon script under Wine starts the agent', () => {
  let guest: NetnsGuest
  let home: string
  let prefix: string
  let driveC: string
  let agentExe: string
  let setupOut: string
  let commandLine: string
  let removePrefix: (() => Promise<void>) | undefined

  /** `wine args...` (or `wineserver args...`) in the guest, its output appended to `out`. */
  const wineExec = async (args: string[], out: string, timeoutMs: number): Promise<number | null> => {
    const argv = args[0] === 'wineserver' ? args : ['wine', ...args]
    const child = guest.exec(['sh', '-c', 'out=$1; shift; exec "$@" >>"$out" 2>&1', 'sh', out, ...argv], { env: wineEnv(prefix, UNIX_ENV), stdio: 'ignore' })
    return await new Promise((resolve) => {
      const t = setTimeout(() => resolve(null), timeoutMs)
      child.once('exit', (code) => { clearTimeout(t); resolve(code) })
    })
  }

  beforeAll(async () => {
    agentExe = await windowsAgent()
    guest = await createNetnsGuest({ index: 54, prefix: 'avwv' })
    home = path.join(HOMES, guest.ns)
    const own = await prefixFromTemplate(home)
    removePrefix = own.remove
    prefix = own.prefix
    driveC = path.join(prefix, 'drive_c')

    // The medium as the command builds it, then read back as Windows would see the CD.
    const spec = checkWindowsInput({ name: 'wine', password: 'Pass<&>"word', ip: guest.guestIp, gateway: guest.hostIp, agentPort: 8000 })
    const iso = path.join(home, 'answer.iso')
    await buildAnswerMedium({ unattend: autounattendXml(spec, 'Windows 10 Pro'), script: firstLogonScript({ agentPort: spec.agentPort }), agentExe, out: iso })
    const cdrom = path.join(home, 'cdrom')
    await run('xorriso', ['-no_rc', '-osirrox', 'on', '-indev', iso, '-extract', '/', cdrom])
    symlinkSync(cdrom, path.join(prefix, 'dosdevices', 'd:'))
    const unattend = parseXml(readFileSync(path.join(cdrom, MEDIUM_FILES.unattend), 'utf8'))
    commandLine = findOne(unattend, 'FirstLogonCommands/SynchronousCommand/CommandLine').text

    // FirstLogonCommands runs the command line as it is; Wine's cmd.exe gets it the same way.
    expect(commandLine.startsWith('cmd.exe /d /c ')).toBe(true)
    setupOut = path.join(home, 'first-logon.out')
    const code = await wineExec(['cmd.exe', '/d', '/c', commandLine.slice('cmd.exe /d /c '.length)], setupOut, 240_000)
    if (code !== 0) throw new Error(`the first-logon command exited with ${code}: ${existsSync(setupOut) ? readFileSync(setupOut, 'utf8').slice(-2000) : ''}`)
  }, 900_000)

  afterAll(async () => {
    if (guest) {
      await wineExec(['wineserver', '-k'], '/dev/null', 10_000).catch(() => null)
      await guest.close()
    }
    await removePrefix?.()
  }, 60_000)

  it('installs the agent at its neutral path, byte for byte', () => {
    const installed = onC(driveC, AGENT_PATH)
    expect(existsSync(installed)).toBe(true)
    expect(readFileSync(installed).equals(readFileSync(agentExe))).toBe(true)
  })

  it('the agent answers on the guest\'s address from the host', async () => {
    const deadline = Date.now() + 120_000
    let info: Awaited<ReturnType<typeof probeAgent>> | null = null
    let last = ''
    while (!info && Date.now() < deadline) {
      info = await probeAgent(guest.guestIp, 8000, 5000).catch((err: Error) => { last = err.message; return null })
      if (!info) await new Promise((r) => setTimeout(r, 1000))
    }
    expect(info, `no agent answered: ${last}`).not.toBeNull()
    expect(info!.kind).toBe('aviary')
  }, 150_000)

  it('logs every step, and says the logon task failed and the agent was started directly (Wine)', () => {
    const log = readFileSync(onC(driveC, SETUP_LOG), 'utf8').replace(/\r/g, '')
    expect(log).toMatch(/^started .* from D:\\$/m)
    expect(log).toMatch(/^agent copy: ok$/m)
    expect(log).toMatch(/^update policy: ok$/m)
    for (const step of ['firewall off', 'update service disabled', 'defender preferences', 'hibernation off']) expect(log).toMatch(new RegExp(`^${step}: (ok|failed, exit code \\d+)$`, 'm'))
    expect(log).toMatch(/^logon task: failed, exit code \d+$/m)
    expect(log).toMatch(/^agent started directly: ok$/m)
    expect(log).toMatch(/^finished /m)
    expect(log).not.toMatch(/aviary/i)
  })

  it('sets the update policy in the registry', async () => {
    const out = path.join(home, 'reg.out')
    const code = await wineExec(['reg', 'query', 'HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate\\AU', '/v', 'NoAutoUpdate'], out, 60_000)
    expect(code).toBe(0)
    expect(readFileSync(out, 'utf8')).toMatch(/NoAutoUpdate\s+REG_DWORD\s+0x1/)
  })

  it('leaves no Wine process once the guest is closed', async () => {
    await wineExec(['wineserver', '-k'], '/dev/null', 10_000)
    expect(await wineLeftAfter(10_000, HOMES)).toEqual([])
  }, 30_000)
})
