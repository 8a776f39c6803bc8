// Two report digests (facts.ts) side by side: every list joined by its key, each row saying where
// it is (only in A, only in B, in both) and, for rows in both, whether what they hold differs (a
// signature's severity, a fact's value, how many processes have a name). Rows are in key order,
// so what the two share lines up and what differs stands between.
import type { Technique } from '../report/attack'
import type { Address, DroppedFile, Domain, Fact, FileName, HttpRequest, IdsAlert, ProcessLine, ProcessName, ProcessPath, ReportFacts, SetItem, Signature, Touched } from './facts'

export type Where = 'a' | 'b' | 'both'

export interface Row<T> {
  key: string
  a?: T
  b?: T
  where: Where
  /** In both, but not the same (compared by the list's own rule). */
  changed: boolean
}

export interface Tally { a: number; b: number; both: number; changed: number }

export type TechniqueItem = Technique & { key: string }

export interface Comparison {
  overview: Row<Fact>[]
  signatures: Row<Signature>[]
  techniques: Row<TechniqueItem>[]
  processNames: Row<ProcessName>[]
  processLines: Row<ProcessLine>[]
  processPaths: Row<ProcessPath>[]
  domains: Row<Domain>[]
  addresses: Row<Address>[]
  http: Row<HttpRequest>[]
  idsAlerts: Row<IdsAlert>[]
  dropped: Row<DroppedFile>[]
  files: Row<Touched>[]
  /** In both but at other paths: changed. */
  fileNames: Row<FileName>[]
  commands: Row<Touched>[]
  mutexes: Row<Touched>[]
  registryKeys: Row<Touched>[]
  staticFacts: Row<Fact>[]
  staticSets: { title: string; rows: Row<SetItem>[] }[]
}

const byKey = (x: { key: string }, y: { key: string }): number => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0)

/**
 * The rows of two lists joined by key, in key order (`keepOrder`: A's order, then what only B has).
 * A key repeated within one list counts once (its first entry).
 */
export function diffBy<T extends { key: string }>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean = () => true, keepOrder = false): Row<T>[] {
  const inB = new Map<string, T>()
  for (const y of b) if (!inB.has(y.key)) inB.set(y.key, y)
  const rows: Row<T>[] = []
  const seen = new Set<string>()
  for (const x of a) {
    if (seen.has(x.key)) continue
    seen.add(x.key)
    const y = inB.get(x.key)
    rows.push(y === undefined ? { key: x.key, a: x, where: 'a', changed: false } : { key: x.key, a: x, b: y, where: 'both', changed: !same(x, y) })
  }
  for (const [key, y] of inB) if (!seen.has(key)) rows.push({ key, b: y, where: 'b', changed: false })
  return keepOrder ? rows : rows.sort(byKey)
}

export function tally(rows: readonly Row<unknown>[]): Tally {
  const t: Tally = { a: 0, b: 0, both: 0, changed: 0 }
  for (const r of rows) {
    t[r.where]++
    if (r.changed) t.changed++
  }
  return t
}

/** Rows that differ: on one side only, or in both but not the same. */
export const differs = (r: Row<unknown>): boolean => r.where !== 'both' || r.changed

const sameList = (x: readonly string[], y: readonly string[]): boolean => x.length === y.length && x.every((v) => y.includes(v))

export function compareFacts(a: ReportFacts, b: ReportFacts): Comparison {
  const setTitles = [...new Set([...a.staticSets.map((s) => s.title), ...b.staticSets.map((s) => s.title)])]
  const items = (f: ReportFacts, title: string) => f.staticSets.find((s) => s.title === title)?.items ?? []
  const tech = (f: ReportFacts): TechniqueItem[] => f.techniques.map((t) => ({ ...t, key: t.id }))
  return {
    overview: diffBy(a.overview, b.overview, (x, y) => x.value === y.value, true),
    signatures: diffBy(a.signatures, b.signatures, (x, y) => x.severity === y.severity),
    techniques: diffBy(tech(a), tech(b)),
    processNames: diffBy(a.processNames, b.processNames, (x, y) => x.count === y.count),
    processLines: diffBy(a.processLines, b.processLines, (x, y) => x.count === y.count),
    processPaths: diffBy(a.processPaths, b.processPaths, (x, y) => x.count === y.count),
    domains: diffBy(a.domains, b.domains, (x, y) => sameList(x.ips, y.ips)),
    addresses: diffBy(a.addresses, b.addresses, (x, y) => sameList(x.ports, y.ports)),
    http: diffBy(a.http, b.http, (x, y) => sameList(x.statuses, y.statuses)),
    idsAlerts: diffBy(a.idsAlerts, b.idsAlerts, (x, y) => x.count === y.count),
    dropped: diffBy(a.dropped, b.dropped, (x, y) => sameList(x.paths, y.paths)),
    files: diffBy(a.files, b.files),
    fileNames: diffBy(a.fileNames, b.fileNames, (x, y) => sameList(x.paths, y.paths)),
    commands: diffBy(a.commands, b.commands),
    mutexes: diffBy(a.mutexes, b.mutexes),
    registryKeys: diffBy(a.registryKeys, b.registryKeys),
    staticFacts: diffBy(a.staticFacts, b.staticFacts, (x, y) => x.value === y.value, true),
    staticSets: setTitles.map((title) => ({ title, rows: diffBy(items(a, title), items(b, title), (x, y) => x.detail === y.detail) }))
  }
}
