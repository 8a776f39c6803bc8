// The page's only stylesheet, inlined in a <style> element (the CSP allows inline styles and
// nothing else): system fonts, no external assets, readable on screen and when printed. Every text
// colour passes WCAG AA contrast on its background (axe-core checks the page in the UI's e2e), and
// the score's levels are the app's (src/shared/score.ts): none grey, low yellow, medium orange,
// high red, never green.
export const STYLE = `
:root { --fg: #1d2330; --muted: #5d6677; --line: #d9dee7; --bg: #ffffff; --soft: #f4f6f9;
  --info: #2f6fb3; --warn: #975a16; --danger: #c53030; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { padding: 20px 28px; background: var(--soft); border-bottom: 1px solid var(--line); display: flex; gap: 24px; align-items: flex-start; }
header h1 { margin: 0 0 6px; font-size: 20px; word-break: break-all; }
main { padding: 8px 28px 40px; max-width: 1400px; }
section { margin-top: 22px; }
h2 { font-size: 17px; border-bottom: 2px solid var(--line); padding-bottom: 4px; margin: 0 0 10px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
table { border-collapse: collapse; width: 100%; margin: 4px 0 10px; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid var(--line); }
th { background: var(--soft); font-weight: 600; white-space: nowrap; }
td { word-break: break-all; }
table.kv th { width: 160px; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.more { color: var(--muted); font-style: italic; }
.score { min-width: 92px; text-align: center; padding: 10px 14px; border-radius: 10px; }
.score b { display: block; font-size: 30px; line-height: 1; }
.score.s-none { background: #e2e8f0; color: var(--fg); } .score.s-low { background: #fefcbf; color: #744210; }
.score.s-medium { background: #feebc8; color: #7b341e; } .score.s-high { background: var(--danger); color: #fff; }
.sig { border-left: 5px solid var(--info); background: var(--soft); padding: 8px 12px; margin: 8px 0; border-radius: 4px; }
.sig.sev-2 { border-color: var(--warn); } .sig.sev-3 { border-color: var(--danger); }
.sev { display: inline-block; font-size: 11px; font-weight: 700; text-transform: uppercase; padding: 1px 6px; border-radius: 3px; color: #fff; background: var(--info); margin-right: 6px; }
.sev-2 .sev { background: var(--warn); } .sev-3 .sev { background: var(--danger); }
.sig ul { margin: 6px 0 0; padding-left: 20px; }
ul.tree, ul.tree ul { list-style: none; padding-left: 18px; margin: 0; }
ul.tree { padding-left: 0; }
ul.tree li { padding: 2px 0; border-left: 1px dotted var(--line); padding-left: 8px; }
.shots { display: flex; flex-wrap: wrap; gap: 10px; }
.shots figure { margin: 0; text-align: center; font-size: 12px; color: var(--muted); }
.shots img { display: block; max-width: 320px; max-height: 320px; border: 1px solid var(--line); }
.tag { display: inline-block; background: #e6ebf2; border-radius: 3px; padding: 0 5px; margin: 1px 2px; font-size: 12px; }
details > summary { cursor: pointer; color: var(--muted); }
@media print { header { background: none; } .sig { break-inside: avoid; } }
`
