// The rule set: every rule of this folder, in the order they run. Adding a rule: a file next to
// this one, a line here, its techniques in attack.ts and its case in signatures.test.ts (README.md).
import type { SignatureRule } from '../signature'
import { contactsBareIp } from './contacts-bare-ip'
import { deletesSelf } from './deletes-self'
import { dropsAndRunsExecutable } from './drops-and-runs-executable'
import { dropsExecutable } from './drops-executable'
import { packedSection } from './packed-section'
import { persistenceAutorun } from './persistence-autorun'
import { processInjection } from './process-injection'
import { resolvesManyDomains } from './resolves-many-domains'
import { runsFromTemp } from './runs-from-temp'
import { startsShell } from './starts-shell'
import { suspiciousHttp } from './suspicious-http'
import { vmDetectionStrings } from './vm-detection-strings'
import { yaraMatch } from './yara-match'
import { persistenceCron, persistenceShellRc, persistenceSystemd } from './linux-persistence'
import { ldPreload } from './ld-preload'
import { antidebugPtrace } from './antidebug-ptrace'
import { readsCredentials } from './reads-credentials'
import { officeMacroAutoexec } from './office-macro-autoexec'
import { lnkStartsInterpreter } from './lnk-starts-interpreter'
import { suricataAlert, suricataAlertHigh } from './suricata-alert'

export const RULES: readonly SignatureRule[] = [
  dropsExecutable,
  dropsAndRunsExecutable,
  startsShell,
  contactsBareIp,
  resolvesManyDomains,
  deletesSelf,
  yaraMatch,
  suspiciousHttp,
  persistenceAutorun,
  packedSection,
  runsFromTemp,
  vmDetectionStrings,
  processInjection,
  persistenceCron,
  persistenceSystemd,
  persistenceShellRc,
  ldPreload,
  antidebugPtrace,
  readsCredentials,
  officeMacroAutoexec,
  lnkStartsInterpreter,
  suricataAlertHigh,
  suricataAlert
]
