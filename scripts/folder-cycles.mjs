#!/usr/bin/env node
// Lists cycles between folders of src/ (ARCHITECTURE.md, "Layers and what each may import"): a
// node is a top folder (src/shared, src/rooter…), or a folder of src/core or src/dispatcher (core/db,
// core/scheduler…), or a file at their top (core/engine.ts). Type-only imports count: a folder
// that needs another's types belongs above it. Tests and their helpers (*test*, *suite*, *fixture*)
// are left out. Exits 1 when there is a cycle. Usage: node scripts/folder-cycles.mjs [src]
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const root = resolve(process.argv[2] ?? 'src')
const files = []
const walk = (d) => {
  for (const n of readdirSync(d)) {
    const p = join(d, n)
    if (statSync(p).isDirectory()) { if (n !== 'node_modules') walk(p) } else if (/\.tsx?$/.test(n) && !/test|suite|fixture|\.d\.ts$/.test(n)) files.push(p)
  }
}
walk(root)
const node = (f) => {
  const r = relative(root, f).replace(/\.(tsx?|js)$/, '').split('/')
  return r.length <= 2 ? r.join('/') : r.slice(0, 2).join('/')
}
const edges = new Map()
for (const f of files) {
  for (const m of readFileSync(f, 'utf8').matchAll(/(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
    const a = node(f)
    const b = node(resolve(dirname(f), m[1] ?? m[2]))
    if (a === b) continue
    if (!edges.has(a)) edges.set(a, new Map())
    edges.get(a).set(b, [...(edges.get(a).get(b) ?? []), `${relative(root, f)} -> ${m[1] ?? m[2]}`])
  }
}
// Strongly connected components (Tarjan): each with more than one node is a cycle.
let index = 0
const stack = []; const on = new Set(); const ix = new Map(); const low = new Map(); const cycles = []
const visit = (v) => {
  ix.set(v, index); low.set(v, index++); stack.push(v); on.add(v)
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!ix.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))) } else if (on.has(w)) low.set(v, Math.min(low.get(v), ix.get(w)))
  }
  if (low.get(v) === ix.get(v)) {
    const c = []
    let w
    do { w = stack.pop(); on.delete(w); c.push(w) } while (w !== v)
    if (c.length > 1) cycles.push(c)
  }
}
for (const v of edges.keys()) if (!ix.has(v)) visit(v)
for (const c of cycles) {
  console.log(`cycle: ${c.join(', ')}`)
  for (const a of c) for (const [b, why] of edges.get(a) ?? []) if (c.includes(b)) for (const w of why) console.log(`  ${w}`)
}
if (cycles.length === 0) console.log(`no cycle between the folders of ${relative(process.cwd(), root) || '.'}`)
process.exitCode = cycles.length > 0 ? 1 : 0
