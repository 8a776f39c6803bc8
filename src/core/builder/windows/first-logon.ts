// The first-logon script of the answer medium and the command that finds it. Windows runs
// Autounattend.xml's FirstLogonCommands once, elevated, when the auto-logon user first reaches the
// desktop; that command looks for this script on every drive letter (the answer medium's letter
// depends on the machine's disks) and calls it. The script installs the agent under a neutral
// name, quiets what would disturb analyses, registers the agent to start at every logon with
// administrator rights, and starts it now.
//
// Nothing the user typed is written into the script: its only variable part is the agent's port,
// a checked integer. Names in it say nothing of Aviary (docs/engine.md, "What the sample can see").

/** The files of the answer medium, in its root. */
export const MEDIUM_FILES = {
  unattend: 'Autounattend.xml',
  agent: 'guestd.exe',
  script: 'guestsetup.cmd'
} as const

/** Where the agent is installed in the guest (README step 3's suggestion). */
export const AGENT_DIR = 'C:\\Program Files\\Guest Tools'
export const AGENT_PATH = `${AGENT_DIR}\\guestd.exe`
/** The scheduled task that starts the agent at logon. */
export const AGENT_TASK = 'GuestTools'
/** The script's log in the guest: what each step did, for a person looking into a failed build. */
export const SETUP_LOG = 'C:\\Windows\\Temp\\guestsetup.log'

// C: is the system disk; the medium is a CD, at D: or later depending on the other drives.
const LETTERS = 'DEFGHIJKLMNOPQRSTUVWXYZ'.split('').join(' ')

/**
 * The FirstLogonCommands command line. Outside a batch file a `for` variable is written `%d`
 * (`%%d` inside one). Both files must be there, so another disc with a script of that name is not
 * taken for the medium.
 */
export function firstLogonCommand(): string {
  return `cmd.exe /d /c for %d in (${LETTERS}) do @if exist %d:\\${MEDIUM_FILES.script} if exist %d:\\${MEDIUM_FILES.agent} call %d:\\${MEDIUM_FILES.script}`
}

/** guestsetup.cmd, with CRLF line ends (cmd.exe mis-reads labels in LF-only batch files). */
export function firstLogonScript(o: { agentPort: number }): string {
  if (!Number.isInteger(o.agentPort) || o.agentPort < 1 || o.agentPort > 65535) throw new Error(`agent port must be 1-65535, got ${o.agentPort}`)
  const lines = [
    '@echo off',
    'rem Runs once, at the first logon of the auto-logon user, with administrator rights',
    'rem (FirstLogonCommands of Autounattend.xml). Each step is logged with its result; only the',
    'rem agent\'s copy must succeed, the rest is done as far as this Windows allows.',
    'setlocal EnableExtensions',
    `set "LOG=${SETUP_LOG}"`,
    `set "DEST=${AGENT_DIR}"`,
    `set "AGENT=${AGENT_PATH}"`,
    `set "PORT=${o.agentPort}"`,
    '>"%LOG%" echo started %DATE% %TIME% from %~dp0',
    'if not exist "%DEST%\\" mkdir "%DEST%"',
    `copy /y "%~dp0${MEDIUM_FILES.agent}" "%AGENT%" >>"%LOG%" 2>&1`,
    'if errorlevel 1 (',
    '  >>"%LOG%" echo agent copy: failed',
    '  exit /b 1',
    ')',
    '>>"%LOG%" echo agent copy: ok',
    '',
    'rem The firewall would drop the agent\'s port and the samples\' traffic; the routes of the host',
    'rem decide what the guest may reach (docs/network.md).',
    'netsh advfirewall set allprofiles state off >>"%LOG%" 2>&1',
    'call :result firewall off',
    '',
    'rem Updates would change the guest between snapshot and analysis, and download in the middle of one.',
    'reg add "HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate\\AU" /v NoAutoUpdate /t REG_DWORD /d 1 /f >>"%LOG%" 2>&1',
    'call :result update policy',
    'sc config wuauserv start= disabled >>"%LOG%" 2>&1',
    'call :result update service disabled',
    'sc stop wuauserv >>"%LOG%" 2>&1',
    'call :result update service stopped',
    '',
    'rem Defender would remove the samples and send them to Microsoft. The policies of the specialize',
    'rem pass cover older builds; on newer ones tamper protection leaves only these preferences.',
    'powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command "Set-MpPreference -DisableRealtimeMonitoring $true -DisableBehaviorMonitoring $true -DisableIOAVProtection $true -DisableScriptScanning $true -MAPSReporting 0 -SubmitSamplesConsent 2" >>"%LOG%" 2>&1',
    'call :result defender preferences',
    '',
    'rem A sleeping or blanked guest gives black screenshots and stalls timers.',
    'powercfg.exe /hibernate off >>"%LOG%" 2>&1',
    'call :result hibernation off',
    'powercfg.exe /change standby-timeout-ac 0 >>"%LOG%" 2>&1',
    'call :result standby off',
    'powercfg.exe /change monitor-timeout-ac 0 >>"%LOG%" 2>&1',
    'call :result screen always on',
    '',
    'rem The answer file holds the password; Windows keeps a copy of it.',
    'del /f /q "%SystemRoot%\\Panther\\unattend.xml" "%SystemRoot%\\Panther\\Autounattend.xml" >>"%LOG%" 2>&1',
    '',
    'rem The agent starts at every logon, with administrator rights, as this user: analyses see',
    'rem the desktop the user sees.',
    `schtasks.exe /Create /F /TN "${AGENT_TASK}" /SC ONLOGON /RL HIGHEST /TR "\\"%AGENT%\\" -H 0.0.0.0 -p %PORT%" >>"%LOG%" 2>&1`,
    'call :result logon task',
    'if errorlevel 1 goto direct',
    `schtasks.exe /Run /TN "${AGENT_TASK}" >>"%LOG%" 2>&1`,
    'call :result agent started by the task',
    'if not errorlevel 1 goto done',
    ':direct',
    'rem Without the task (refused, or a Windows without a scheduler), the agent is started from here.',
    'start "" /b "%AGENT%" -H 0.0.0.0 -p %PORT%',
    'call :result agent started directly',
    ':done',
    '>>"%LOG%" echo finished %DATE% %TIME%',
    'exit /b 0',
    '',
    ':result',
    'rem The redirection comes first so that a message ending in a digit is not read as a handle.',
    'if errorlevel 1 (>>"%LOG%" echo %*: failed, exit code %ERRORLEVEL%) else (>>"%LOG%" echo %*: ok)',
    'exit /b %ERRORLEVEL%'
  ]
  return lines.join('\r\n') + '\r\n'
}
