// Linux persistence, one rule per mechanism so that each names its own ATT&CK technique: a crontab
// entry (cron), a systemd unit (systemd), a shell start-up file (shell_rc). Seen as written paths
// (the analyzer's file monitor, and the calls: openat for writing, rename into place) or as the
// command lines that make them (crontab, systemctl enable).
import type { SignatureRule } from '../signature'
import { commandLines, writtenPaths } from '../../../reporting/report-view'

type CommandTest = RegExp | ((cmd: string) => boolean)

function byPathOrCommand(paths: RegExp[], commands: CommandTest[]): SignatureRule['run'] {
  return (report, mark) => {
    for (const p of writtenPaths(report)) if (paths.some((re) => re.test(p))) mark.ioc('file', p)
    for (const { cmd } of commandLines(report)) {
      if (commands.some((t) => (typeof t === 'function' ? t(cmd) : t.test(cmd)))) mark.ioc('cmdline', cmd)
    }
  }
}

/**
 * `crontab` run as a program (first word of a command, or after ; & | in a shell line) to install a
 * table: `crontab FILE`, `crontab -` or `crontab -u USER FILE`; not -l (list), -r (remove), -e (edit).
 */
export function installsCrontab(cmd: string): boolean {
  for (const part of cmd.split(/[;&|]+/)) {
    const words = part.trim().replace(/^["']|["']$/g, '').split(/\s+/)
    if (!/(^|\/)crontab$/.test(words[0] ?? '')) continue
    const args = words.slice(1)
    if (args.some((a) => /^-[lre]$/.test(a))) continue
    const rest = args[0] === '-u' ? args.slice(2) : args
    if (rest.length === 0 || rest[0] === '-' || !rest[0]!.startsWith('-')) return true
  }
  return false
}

export const persistenceCron: SignatureRule = {
  name: 'persistence_cron',
  description: 'Adds a cron job, to run again on a schedule',
  severity: 3,
  categories: ['persistence'],
  ttp: ['T1053.003'],
  run: byPathOrCommand(
    [/^\/etc\/(crontab|anacrontab)$/, /^\/etc\/cron\.(d|hourly|daily|weekly|monthly)\//, /^\/var\/spool\/cron\//],
    [installsCrontab]
  )
}

export const persistenceSystemd: SignatureRule = {
  name: 'persistence_systemd',
  description: 'Installs a systemd service or timer, to run at boot or on a schedule',
  severity: 3,
  categories: ['persistence'],
  ttp: ['T1543.002'],
  run: byPathOrCommand(
    [/^\/(etc|lib|usr\/lib|run)\/systemd\/(system|user)\/[^/]+\.(service|timer|socket|path)(\.d\/|$)/, /\/\.config\/systemd\/user\/[^/]+\.(service|timer)$/],
    [/\bsystemctl\s+(--user\s+)?(--now\s+)?enable\b/]
  )
}

export const persistenceShellRc: SignatureRule = {
  name: 'persistence_shell_rc',
  description: 'Changes a shell start-up file, to run whenever a shell starts',
  severity: 3,
  categories: ['persistence'],
  ttp: ['T1546.004'],
  run: byPathOrCommand(
    [/\/\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv|zlogin)$/, /^\/etc\/(profile|bash\.bashrc|zsh\/zshrc|zshrc)$/, /^\/etc\/profile\.d\//],
    []
  )
}
