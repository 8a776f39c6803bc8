// Analysis packages: how to start the sample. A package is chosen by the `package` option/field,
// else from the libmagic file type and the file extension (as Cuckoo's choose_package does), and
// turns into one command line. Windows packages are here for completeness; they cannot be run in
// this repository's tests (no Windows guest), so they stay one line each.
import { chmodSync } from 'node:fs'
import { extname } from 'node:path'
import { splitCommand, which } from '../exec.js'

export interface Launch {
  package: string
  file: string
  args: string[]
  /** Windows cmd.exe: pass args as written (already quoted), since cmd does its own parsing. */
  verbatim?: boolean
}

const q = (s: string): string => `"${s}"`

type Platform = 'linux' | 'windows'

const BY_EXTENSION: Record<Platform, Record<string, string>> = {
  linux: { '.sh': 'sh', '.bash': 'sh', '.py': 'python', '.js': 'node', '.cjs': 'node', '.mjs': 'node', '.elf': 'elf', '.so': 'elf' },
  windows: {
    '.exe': 'exe', '.scr': 'exe', '.com': 'exe', '.dll': 'dll', '.cpl': 'dll', '.ocx': 'dll', '.ps1': 'ps1', '.bat': 'bat',
    '.cmd': 'bat', '.js': 'js', '.jse': 'js', '.vbs': 'vbs', '.vbe': 'vbs', '.wsf': 'js', '.hta': 'hta', '.msi': 'msi',
    '.doc': 'doc', '.docx': 'doc', '.docm': 'doc', '.rtf': 'doc', '.xls': 'doc', '.xlsx': 'doc', '.xlsm': 'doc',
    '.ppt': 'doc', '.pptx': 'doc', '.pdf': 'doc', '.lnk': 'doc', '.html': 'doc', '.htm': 'doc'
  }
}

export function choosePackage(platform: Platform, fileName: string, fileType: string): string {
  const type = fileType.toLowerCase()
  if (platform === 'windows') {
    if (type.includes('pe32') && type.includes('dll')) return 'dll'
    if (type.includes('pe32')) return 'exe'
  } else {
    if (type.includes('elf')) return 'elf'
    if (type.includes('shell script')) return 'sh'
    if (type.includes('python')) return 'python'
    if (type.includes('node') || type.includes('javascript')) return 'node'
  }
  return BY_EXTENSION[platform][extname(fileName).toLowerCase()] ?? (platform === 'windows' ? 'doc' : 'generic')
}

function linuxBrowser(url: string): Launch {
  const gui = which(['chromium', 'chromium-browser', 'google-chrome', 'firefox'])
  if (gui !== null && process.env.DISPLAY !== undefined) return { package: 'browser', file: gui, args: [url] }
  const wget = which(['wget'])
  if (wget !== null) return { package: 'browser', file: wget, args: ['-q', '-O', '/dev/null', url] }
  return { package: 'browser', file: which(['curl']) ?? 'curl', args: ['-s', '-o', '/dev/null', url] }
}

/** The command that starts `target` (a path, or a URL for category url) with package `pkg`. */
export function launchFor(platform: Platform, pkg: string, target: string, options: Map<string, string>): Launch {
  const extra = splitCommand(options.get('arguments') ?? '')
  if (platform === 'linux') {
    switch (pkg) {
      case 'browser':
      case 'url':
      case 'wget':
        return linuxBrowser(target)
      case 'sh':
      case 'bash':
        return { package: pkg, file: which([pkg]) ?? '/bin/sh', args: [target, ...extra] }
      case 'python':
        return { package: pkg, file: which(['python3', 'python']) ?? 'python3', args: [target, ...extra] }
      case 'node':
        return { package: pkg, file: which(['node', 'nodejs']) ?? process.execPath, args: [target, ...extra] }
      default:
        // elf and generic: make it executable and run it directly (shebang scripts included).
        try {
          chmodSync(target, 0o755)
        } catch {
          // read-only target: try anyway
        }
        return { package: pkg === '' ? 'generic' : pkg, file: target, args: extra }
    }
  }
  const sys = process.env.SystemRoot ?? 'C:\\Windows'
  switch (pkg) {
    case 'ie':
    case 'browser':
    case 'url':
      return { package: pkg, file: 'cmd.exe', args: ['/c', 'start', '""', q(target)], verbatim: true }
    case 'exe':
      return { package: pkg, file: target, args: extra }
    case 'dll':
      return { package: pkg, file: `${sys}\\System32\\rundll32.exe`, args: [`${target},${options.get('function') ?? '#1'}`, ...extra] }
    case 'ps1':
      return { package: pkg, file: 'powershell.exe', args: ['-NoProfile', '-ExecutionPolicy', 'Bypass', '-File', target, ...extra] }
    case 'bat':
      return { package: pkg, file: 'cmd.exe', args: ['/c', q(target), ...extra.map(q)], verbatim: true }
    case 'js':
    case 'vbs':
      return { package: pkg, file: `${sys}\\System32\\wscript.exe`, args: [target, ...extra] }
    case 'hta':
      return { package: pkg, file: `${sys}\\System32\\mshta.exe`, args: [target] }
    case 'msi':
      return { package: pkg, file: 'msiexec.exe', args: ['/I', target, '/qn'] }
    case 'node':
      return { package: pkg, file: which(['node']) ?? process.execPath, args: [target, ...extra] }
    default:
      return { package: pkg === '' ? 'doc' : pkg, file: 'cmd.exe', args: ['/c', 'start', '""', q(target)], verbatim: true }
  }
}
