// Fires when the sample sets itself up to run again after a reboot or log-on: Windows Run/RunOnce
// keys, Winlogon and service keys, the Startup folder, scheduled tasks; on Linux rc.local/init.d
// and XDG autostart (cron, systemd and shell start-up files have rules of their own,
// linux-persistence.ts). Seen as written files or registry keys, or as the command lines that
// create them (schtasks, reg add, sc create, update-rc.d).
import type { SignatureRule } from '../signature'
import { commandLines, summary, writtenPaths } from '../../../reporting/report-view'

const AUTORUN_KEYS = [
  /\\software\\(wow6432node\\)?microsoft\\windows\\currentversion\\(run|runonce|runonceex|runservices|runservicesonce|policies\\explorer\\run)(\\|$)/i,
  /\\software\\(wow6432node\\)?microsoft\\windows nt\\currentversion\\(winlogon\\(userinit|shell)|windows\\(appinit_dlls|load|run))$/i,
  /\\system\\(currentcontrolset|controlset\d{3})\\services\\[^\\]+\\(imagepath|servicedll)$/i,
  /\\software\\(wow6432node\\)?microsoft\\windows nt\\currentversion\\image file execution options\\[^\\]+\\debugger$/i
]

const AUTORUN_FILES = [
  /\\start menu\\programs\\startup\\/i,
  /\\windows\\system32\\tasks\\/i,
  /\/\.config\/autostart\/[^/]+\.desktop$/,
  /^\/etc\/xdg\/autostart\//,
  /^\/etc\/(rc\.local|init\.d\/)/
]

const AUTORUN_COMMANDS = [
  /\bschtasks(\.exe)?\s.*\/create\b/i,
  /\breg(\.exe)?\s+add\s.*\\currentversion\\run/i,
  /\bsc(\.exe)?\s+create\b/i,
  /\bupdate-rc\.d\b.*\bdefaults\b/
]

export const persistenceAutorun: SignatureRule = {
  name: 'persistence_autorun',
  description: 'Installs itself to run automatically at boot or log-on',
  severity: 3,
  categories: ['persistence'],
  ttp: ['T1547', 'T1053', 'T1543'],
  run(report, mark) {
    const keys = new Set([...summary(report, 'regkey_written'), ...summary(report, 'regkey_created')])
    for (const k of keys) {
      if (!AUTORUN_KEYS.some((re) => re.test(k))) continue
      mark.ioc('registry', k)
      mark.technique('T1112')
      // A Run key (not a service or a debugger): the sub-technique names it.
      if (AUTORUN_KEYS[0]!.test(k)) mark.technique('T1547.001')
    }
    for (const p of writtenPaths(report)) {
      if (!AUTORUN_FILES.some((re) => re.test(p))) continue
      mark.ioc('file', p)
      if (AUTORUN_FILES[0]!.test(p)) mark.technique('T1547.001')
    }
    for (const { cmd } of commandLines(report)) if (AUTORUN_COMMANDS.some((re) => re.test(cmd))) mark.ioc('cmdline', cmd)
  }
}
