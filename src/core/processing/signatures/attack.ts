// The MITRE ATT&CK techniques Aviary's signatures name, with the two texts Cuckoo 2.0.7 writes for
// each id in a signature's `ttp` (`{"T1105": {"short": ..., "long": ...}}`, from its
// ttp_descriptions.json): the technique's name, and one sentence on what it is. Report consumers
// read `short` (MISP's cuckooimport tags events with "<short> - <id>"). A rule names ids only; a test
// checks every id a rule names is here. The sentences are Aviary's own summaries of ATT&CK's
// technique pages (https://attack.mitre.org/techniques/<id>/).

export interface AttackTechnique {
  short: string
  long: string
}

export const ATTACK: Readonly<Record<string, AttackTechnique>> = {
  'T1003.002': { short: 'Security Account Manager', long: 'Adversaries read the SAM database (the registry hive or its file) to extract the hashes of local accounts.' },
  'T1003.004': { short: 'LSA Secrets', long: 'Adversaries read the SECURITY hive, where the Local Security Authority keeps service account passwords and other secrets.' },
  'T1003.008': { short: '/etc/passwd and /etc/shadow', long: 'Adversaries read /etc/passwd and /etc/shadow to obtain password hashes for offline cracking.' },
  T1027: { short: 'Obfuscated Files or Information', long: 'Adversaries make files or information hard to discover or analyse by encrypting, encoding or otherwise hiding their contents.' },
  'T1027.002': { short: 'Software Packing', long: 'Adversaries compress or encrypt an executable with a packer, so that its code is only unpacked in memory at run time and its file hides its signature.' },
  T1036: { short: 'Masquerading', long: 'Adversaries make a file, process or task look legitimate, for instance by giving it the name or location of a system program.' },
  'T1037.004': { short: 'RC Scripts', long: 'Adversaries add commands to the scripts a Unix-like system runs at boot (rc.local, the init scripts), so that their code starts with it.' },
  T1053: { short: 'Scheduled Task/Job', long: 'Adversaries use the system\'s task scheduling to run their code at start-up, on a schedule or as another account.' },
  'T1053.003': { short: 'Cron', long: 'Adversaries add crontab entries (user crontabs, /etc/crontab, /etc/cron.d) so that Unix-like systems run their code on a schedule.' },
  'T1053.005': { short: 'Scheduled Task', long: 'Adversaries create Windows scheduled tasks (schtasks, the Task Scheduler) to run their code at start-up, log-on or on a schedule.' },
  T1055: { short: 'Process Injection', long: 'Adversaries run code in the address space of another live process, to evade defences and take on that process\'s privileges.' },
  T1059: { short: 'Command and Scripting Interpreter', long: 'Adversaries run commands, scripts or binaries through an interpreter such as a shell, PowerShell, Python or JavaScript.' },
  'T1059.001': { short: 'PowerShell', long: 'Adversaries run commands and scripts through PowerShell.' },
  'T1059.003': { short: 'Windows Command Shell', long: 'Adversaries run commands and batch files through cmd.exe, the Windows command shell.' },
  'T1059.004': { short: 'Unix Shell', long: 'Adversaries run commands and scripts through a Unix shell such as sh or bash.' },
  'T1059.005': { short: 'Visual Basic', long: 'Adversaries run Visual Basic code: VBA macros in Office documents, VBScript, or Visual Basic programs.' },
  'T1059.007': { short: 'JavaScript', long: 'Adversaries run JavaScript (or JScript, through the Windows Script Host) to carry out their actions.' },
  T1070: { short: 'Indicator Removal', long: 'Adversaries delete or change what their intrusion leaves on a system (files, logs, history) to hide it.' },
  'T1070.004': { short: 'File Deletion', long: 'Adversaries delete the files they dropped or ran, the malware itself included, to leave less behind.' },
  T1071: { short: 'Application Layer Protocol', long: 'Adversaries talk to their infrastructure over an application protocol such as HTTP, DNS or SMTP, blending with ordinary traffic.' },
  'T1071.001': { short: 'Web Protocols', long: 'Adversaries use HTTP or HTTPS to communicate with their infrastructure, blending with ordinary web traffic.' },
  T1105: { short: 'Ingress Tool Transfer', long: 'Adversaries bring tools or further payloads onto the system from outside, by downloading or writing them.' },
  T1106: { short: 'Native API', long: 'Adversaries call the operating system\'s application programming interface directly to run their actions.' },
  T1112: { short: 'Modify Registry', long: 'Adversaries change the Windows registry to hide configuration, persist, or weaken defences.' },
  T1204: { short: 'User Execution', long: 'Adversaries rely on a user running a malicious file or opening a link.' },
  'T1204.002': { short: 'Malicious File', long: 'Adversaries rely on a user opening or running a malicious file, such as an executable or a document with macros.' },
  'T1218.005': { short: 'Mshta', long: 'Adversaries run HTML applications and scripts through mshta.exe, a signed Windows program, to evade defences.' },
  'T1218.011': { short: 'Rundll32', long: 'Adversaries run their code from a DLL through rundll32.exe, a signed Windows program, to evade defences.' },
  'T1497.001': { short: 'System Checks', long: 'Adversaries check the system for signs of a virtual machine or sandbox and change their behaviour when they find them.' },
  T1539: { short: 'Steal Web Session Cookie', long: 'Adversaries read the session cookies browsers keep, to use web services as the logged-on user.' },
  T1543: { short: 'Create or Modify System Process', long: 'Adversaries create or change system services or daemons so that their code runs at boot or repeatedly.' },
  'T1543.002': { short: 'Systemd Service', long: 'Adversaries create or change systemd unit files so that Linux starts their code as a service.' },
  'T1543.003': { short: 'Windows Service', long: 'Adversaries create or change Windows services so that the service manager starts their code, often with system privileges.' },
  T1546: { short: 'Event Triggered Execution', long: 'Adversaries have their code run when a system event happens, such as a user logging on or a shell starting.' },
  'T1546.004': { short: 'Unix Shell Configuration Modification', long: 'Adversaries add commands to shell start-up files such as .bashrc, .profile or /etc/profile, which run whenever a shell starts.' },
  'T1546.010': { short: 'AppInit DLLs', long: 'Adversaries list their library in the AppInit_DLLs registry value, so that every program loading user32.dll loads it too.' },
  'T1546.012': { short: 'Image File Execution Options Injection', long: 'Adversaries set a Debugger under a program\'s Image File Execution Options key, so that their code runs whenever that program is started.' },
  T1547: { short: 'Boot or Logon Autostart Execution', long: 'Adversaries configure the system to run their code automatically at boot or when a user logs on.' },
  'T1547.001': { short: 'Registry Run Keys / Startup Folder', long: 'Adversaries add a program to a registry Run key or to the Startup folder, so that Windows runs it when a user logs on.' },
  'T1547.004': { short: 'Winlogon Helper DLL', long: 'Adversaries change the Winlogon registry values (Userinit, Shell) so that their code runs when a user logs on.' },
  'T1547.013': { short: 'XDG Autostart Entries', long: 'Adversaries add a .desktop entry to an XDG autostart folder, so that the desktop environment runs their program when a user logs on.' },
  'T1552.001': { short: 'Credentials In Files', long: 'Adversaries search files on the system for stored credentials, such as password files, keys and configuration files.' },
  'T1552.004': { short: 'Private Keys', long: 'Adversaries search the system for private key files (SSH, GnuPG, certificates) to authenticate as their owner or decrypt data.' },
  'T1555.003': { short: 'Credentials from Web Browsers', long: 'Adversaries read the files where web browsers keep saved user names and passwords.' },
  T1568: { short: 'Dynamic Resolution', long: 'Adversaries compute or rotate the addresses of their infrastructure (for instance with a domain generation algorithm) so that it is hard to block.' },
  'T1574.006': { short: 'Dynamic Linker Hijacking', long: 'Adversaries make the dynamic linker load their library first (LD_PRELOAD, /etc/ld.so.preload), so that it runs inside other programs.' },
  T1622: { short: 'Debugger Evasion', long: 'Adversaries detect a debugger (for instance by trying to trace themselves) and change their behaviour to avoid being analysed.' }
}

/** Cuckoo 2.0.7's `ttp` of a signature for the technique ids a rule names (unknown ids keep their id as name). */
export function ttpOf(ids: readonly string[]): Record<string, AttackTechnique> {
  return Object.fromEntries(ids.map((id) => [id, ATTACK[id] ?? { short: id, long: '' }]))
}
