// Fires when an Office document's VBA macros run by themselves: a module defines one of the
// procedures Word, Excel or PowerPoint call when the document is opened or closed (AutoOpen,
// Document_Open, Workbook_Open, …). Read from static.office.macros (processing/static/vba.ts), so
// it fires even when the guest had no Office to run the document. A macro that also starts
// programs or fetches files says so in a second mark.
import type { SignatureRule } from '../signature'
import { obj, objs, str } from '../../../reporting/report-view'

/** Procedures Office runs by itself: Word's Auto macros, and the document and workbook events. */
const AUTO_EXEC = /^[ \t]*(?:(?:Public|Private)[ \t]+)?Sub[ \t]+(Auto_?Open|AutoExec|AutoNew|Auto_?Close|Document_(?:Open|Close|New)|Workbook_(?:Open|Activate|BeforeClose))[ \t]*\(/gim
/** What an auto-running macro does next that matters: start a program, fetch or write a file. */
const ACTIONS = /\b(Shell|WScript\.Shell|Shell\.Application|URLDownloadToFile\w*|MSXML2\.(?:Server)?XMLHTTP|WinHttp\.WinHttpRequest|ADODB\.Stream|Win32_Process|powershell|CreateProcess\w*)\b/gi

export const officeMacroAutoexec: SignatureRule = {
  name: 'office_macro_autoexec',
  description: 'An Office document carries VBA macros that run when it is opened or closed',
  severity: 2,
  categories: ['office', 'execution'],
  ttp: ['T1204.002', 'T1059.005'],
  run(report, mark) {
    for (const m of objs(obj(report, 'static'), 'office', 'macros')) {
      const code = str(m, 'deobf') || str(m, 'orig_code')
      const entries = new Set([...code.matchAll(AUTO_EXEC)].map((x) => x[1]!))
      if (entries.size === 0) continue
      const module = str(m, 'filename')
      mark.ioc('macro', `${module}: ${[...entries].join(', ')}`, 'runs when the document is opened or closed')
      const actions = new Set([...code.matchAll(ACTIONS)].map((x) => x[1]!))
      if (actions.size > 0) mark.ioc('macro', `${module}: ${[...actions].slice(0, 10).join(', ')}`, 'starts programs or fetches files')
    }
  }
}
