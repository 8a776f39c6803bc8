// Fires when the sample sets itself up to run again after a reboot or log-on: Windows Run/RunOnce
// keys, Winlogon and service keys, the Startup folder, scheduled tasks; on Linux rc.local/init.d
// and XDG autostart (cron, systemd and shell start-up files have rules of their own,
// linux-persistence.ts). Seen as written files or registry keys, or as the command lines that
// create them (schtasks, reg add, sc create, update-rc.d).
import type { SignatureRule } from '../signature'
import { commandLines, summary, writtenPaths } from '../../../reporting/report-view'

/** Each autostart place and the ATT&CK technique it is; registry ones are also T1112 (Modify Registry). */
const AUTORUN_KEYS: [RegExp, string][] = [
  [/\\software\\(wow6432node\\)?microsoft\\windows\\currentversion\\(run|runonce|runonceex|runservices|runservicesonce|policies\\explorer\\run)(\\|$)/i, 'T1547.001'],
  // Windows NT\CurrentVersion\Windows\Load and \Run start programs at log-on as the Run keys do.
  [/\\software\\(wow6432node\\)?microsoft\\windows nt\\currentversion\\windows\\(load|run)$/i, 'T1547.001'],
  [/\\software\\(wow6432node\\)?microsoft\\windows nt\\currentversion\\winlogon\\(userinit|shell)$/i, 'T1547.004'],
  [/\\software\\(wow6432node\\)?microsoft\\windows nt\\currentversion\\windows\\appinit_dlls$/i, 'T1546.010'],
  [/\\system\\(currentcontrolset|controlset\d{3})\\services\\[^\\]+\\(imagepath|servicedll)$/i, 'T1543.003'],
  [/\\software\\(wow6432node\\)?microsoft\\windows nt\\currentversion\\image file execution options\\[^\\]+\\debugger$/i, 'T1546.012']
]

const AUTORUN_FILES: [RegExp, string][] = [
  [/\\start menu\\programs\\startup\\/i, 'T1547.001'],
  [/\\windows\\system32\\tasks\\/i, 'T1053.005'],
  [/\/\.config\/autostart\/[^/]+\.desktop$/, 'T1547.013'],
  [/^\/etc\/xdg\/autostart\//, 'T1547.013'],
  // rc.local and the SysV init scripts rc runs at boot: RC scripts.
  [/^\/etc\/(rc\.local|init\.d\/)/, 'T1037.004']
]

const AUTORUN_COMMANDS: [RegExp, string[]][] = [
  [/\bschtasks(\.exe)?\s.*\/create\b/i, ['T1053.005']],
  [/\breg(\.exe)?\s+add\s.*\\currentversion\\run/i, ['T1547.001', 'T1112']],
  [/\bsc(\.exe)?\s+create\b/i, ['T1543.003']],
  [/\bupdate-rc\.d\b.*\bdefaults\b/, ['T1037.004']]
]

export const persistenceAutorun: SignatureRule = {
  name: 'persistence_autorun',
  description: 'Installs itself to run automatically at boot or log-on',
  severity: 3,
  categories: ['persistence'],
  // Each place is its own technique (a Run key is not a scheduled task): every mark adds its own.
  ttp: [],
  techniques: ['T1547.001', 'T1547.004', 'T1547.013', 'T1546.010', 'T1546.012', 'T1543.003', 'T1053.005', 'T1037.004', 'T1112'],
  run(report, mark) {
    const keys = new Set([...summary(report, 'regkey_written'), ...summary(report, 'regkey_created')])
    for (const k of keys) {
      const hit = AUTORUN_KEYS.find(([re]) => re.test(k))
      if (hit === undefined) continue
      mark.ioc('registry', k)
      mark.technique(hit[1])
      mark.technique('T1112')
    }
    for (const p of writtenPaths(report)) {
      const hit = AUTORUN_FILES.find(([re]) => re.test(p))
      if (hit === undefined) continue
      mark.ioc('file', p)
      mark.technique(hit[1])
    }
    for (const { cmd } of commandLines(report)) {
      const hit = AUTORUN_COMMANDS.find(([re]) => re.test(cmd))
      if (hit === undefined) continue
      mark.ioc('cmdline', cmd)
      for (const t of hit[1]) mark.technique(t)
    }
  }
}
