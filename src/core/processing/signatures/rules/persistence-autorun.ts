// Fires when the sample sets itself up to run again after a reboot or log-on: Windows Run/RunOnce
// keys, Winlogon and service keys, the Startup folder, scheduled tasks; on Linux cron, systemd units,
// shell start-up files, rc.local/init.d and XDG autostart. Seen as written files or registry keys,
// or as the command lines that create them (schtasks, reg add, crontab, systemctl enable).
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
  /^\/etc\/(crontab|cron\.(d|hourly|daily|weekly|monthly)\/|anacrontab)/,
  /^\/var\/spool\/cron\//,
  /^\/(etc|lib|usr\/lib|run)\/systemd\/(system|user)\//,
  /\/\.config\/systemd\/user\//,
  /\/\.config\/autostart\/[^/]+\.desktop$/,
  /^\/etc\/xdg\/autostart\//,
  /\/\.(bashrc|bash_profile|bash_login|profile|zshrc|zprofile)$/,
  /^\/etc\/(profile|bash\.bashrc|rc\.local|profile\.d\/|init\.d\/|ld\.so\.preload)/
]

const AUTORUN_COMMANDS = [
  /\bschtasks(\.exe)?\s.*\/create\b/i,
  /\breg(\.exe)?\s+add\s.*\\currentversion\\run/i,
  /\bsc(\.exe)?\s+create\b/i,
  /\bcrontab\b(?!\s+-l\b)/,
  /\bsystemctl\s+(--user\s+)?enable\b/,
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
