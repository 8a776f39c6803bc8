// Reads Cuckoo's *.conf files the way Python 2's ConfigParser (which Cuckoo 2 uses) reads them.
// Written by hand: the only INI parser in node_modules is `ini` 1.3 (pulled in by
// prebuild-install, not ours to depend on), and it reads another dialect: no `key: value`, no
// indented continuation lines, no ` ;` inline comments, and it turns `a.b` section names into
// nested objects and "true" into a boolean. The rules below are ConfigParser's (RawConfigParser._read):
//   - blank lines and lines starting with `#` or `;` are comments;
//   - `[section]` starts a section (text after `]` is ignored); a section named twice is merged;
//   - `key = value` or `key: value`; keys are lower-cased and trimmed, values trimmed;
//   - ` ;` (a semicolon after whitespace) starts an inline comment; `""` is the empty string;
//   - a line starting with whitespace continues the previous value (joined with a newline).
// `%(name)s` interpolation is not performed: no Cuckoo default file uses it for what we import.

export type IniSections = Map<string, Map<string, string>>

export class IniError extends Error {}

const SECTION = /^\[([^\]]+)\]/
const OPTION = /^([^:=\s][^:=]*?)\s*([:=])\s*(.*)$/

export function parseIni(text: string, file = 'config'): IniSections {
  const sections: IniSections = new Map()
  let current: Map<string, string> | null = null
  let lastKey: string | null = null
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  lines.forEach((line, i) => {
    const where = `${file}:${i + 1}`
    if (line.trim() === '' || line[0] === '#' || line[0] === ';') return
    if (/^\s/.test(line)) {
      if (current && lastKey !== null) {
        const prev = current.get(lastKey) ?? ''
        current.set(lastKey, `${prev}\n${line.trim()}`)
        return
      }
      throw new IniError(`${where}: an indented line continues no option`)
    }
    const header = SECTION.exec(line)
    if (header) {
      const name = header[1] ?? ''
      current = sections.get(name) ?? new Map()
      sections.set(name, current)
      lastKey = null
      return
    }
    if (!current) throw new IniError(`${where}: an option before any [section]`)
    const opt = OPTION.exec(line)
    if (!opt) throw new IniError(`${where}: expected 'key = value', found '${line.slice(0, 60)}'`)
    let value = opt[3] ?? ''
    const semi = value.search(/\s;/)
    if (semi !== -1) value = value.slice(0, semi)
    value = value.trim()
    if (value === '""') value = ''
    lastKey = (opt[1] ?? '').trim().toLowerCase()
    current.set(lastKey, value)
  })
  return sections
}
