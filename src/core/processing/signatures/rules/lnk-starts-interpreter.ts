// Fires when the sample is a Windows shortcut whose target is a program that runs code handed to
// it (cmd, PowerShell, the script hosts, mshta, rundll32, regsvr32, …): the shape of phishing
// shortcuts, which look like a document and start a command. Read from static.lnk (its base path,
// its environment-variable target or its relative path), so it fires without a Windows guest.
import type { SignatureRule } from '../signature'
import { obj, str } from '../../../reporting/report-view'

/** Programs a shortcut can hand code to (lower case). */
const RUNS_CODE = new Set(['cmd.exe', 'powershell.exe', 'pwsh.exe', 'wscript.exe', 'cscript.exe', 'mshta.exe', 'rundll32.exe',
  'regsvr32.exe', 'msiexec.exe', 'certutil.exe', 'bitsadmin.exe', 'forfiles.exe', 'conhost.exe', 'wmic.exe', 'msbuild.exe', 'installutil.exe'])

export const lnkStartsInterpreter: SignatureRule = {
  name: 'lnk_starts_interpreter',
  description: 'A Windows shortcut starts a program that runs the code it is given (cmd, PowerShell, a script host, mshta, …)',
  severity: 2,
  categories: ['lnk', 'execution'],
  ttp: ['T1204.002', 'T1059'],
  run(report, mark) {
    const lnk = obj(obj(report, 'static'), 'lnk')
    const target = [str(lnk, 'basepath'), str(lnk, 'environment_target'), str(lnk, 'relapath')].find((t) => t !== '')
    if (target === undefined) return
    const program = target.split(/[\\/]/).at(-1)!.toLowerCase()
    if (!RUNS_CODE.has(program)) return
    const args = str(lnk, 'cmdline')
    mark.ioc('lnk', args === '' ? target : `${target} ${args}`, str(lnk, 'show_window') === 'minimized' ? 'starts minimized' : 'the shortcut\'s target and arguments')
  }
}
