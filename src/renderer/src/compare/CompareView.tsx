// Two analyses side by side, from their digests: the overview (score first), signatures with their
// ATT&CK techniques, processes (by name, by command line, and where they sat in the tree), the
// network (domains, IP addresses, HTTP requests of the capture and the proxy), dropped files by
// hash, what the behavior summary says the run touched (files by path and by name, command lines,
// mutexes, registry keys), and the static facts. Every row says whether it is only in A, only in B, in both, or in
// both but different; "only differences" hides what the two share. Every string is the sample's
// or a server's: all of it goes through SafeText.
import { useMemo, type JSX } from 'react'
import { SafeText, Bytes } from '../components/text'
import { ScoreBadge } from '../components/status'
import { Mono, Tags } from '../report/common'
import { TechniqueLink } from '../report/attack'
import { compareFacts, type Row } from './diff'
import type { ReportFacts, Touched } from './facts'
import { DiffSection, DiffTable, SideCell } from './DiffTable'
import { counted } from '../format'

const SEVERITY = ['', 'info', 'warning', 'danger']

/** A cell of side A or B of a row: its value there, or a dash. */
function side<T>(r: Row<T>, which: 'a' | 'b', show: (x: T) => JSX.Element | string | number | null): JSX.Element {
  const x = r[which]
  return <SideCell present={x !== undefined}>{x !== undefined ? show(x) : null}</SideCell>
}

const times = (n: number) => `${n.toLocaleString('en-US')} ×`

function ScoreHeader({ a, b }: { a: ReportFacts; b: ReportFacts }): JSX.Element {
  const delta = a.score !== null && b.score !== null ? b.score - a.score : null
  return (
    <div className="mb-4 flex flex-wrap items-center gap-4 text-sm" data-testid="score-compare">
      <span className="flex items-center gap-1">A <ScoreBadge score={a.score} /></span>
      <span className="flex items-center gap-1">B <ScoreBadge score={b.score} /></span>
      {delta !== null && <span className="text-zinc-700 dark:text-zinc-300">{delta === 0 ? 'same score' : `B is ${Math.abs(delta).toFixed(1)} ${delta > 0 ? 'higher' : 'lower'}`}</span>}
    </div>
  )
}

export function CompareView({ a, b, onlyDiff }: { a: ReportFacts; b: ReportFacts; onlyDiff: boolean }): JSX.Element {
  const c = useMemo(() => compareFacts(a, b), [a, b])
  return (
    <div>
      <ScoreHeader a={a} b={b} />
      <DiffSection title="Overview" rows={c.overview}>
        <DiffTable rows={c.overview} label="overview facts" onlyDiff={onlyDiff} columns={[
          { title: 'fact', cell: (r) => r.key, sort: (r) => r.key, className: 'whitespace-nowrap' },
          { title: 'A', cell: (r) => side(r, 'a', (x) => <SafeText value={x.value} />) },
          { title: 'B', cell: (r) => side(r, 'b', (x) => <SafeText value={x.value} />) }
        ]} />
      </DiffSection>

      <DiffSection title="Signatures" rows={c.signatures}>
        <DiffTable rows={c.signatures} label="signatures" onlyDiff={onlyDiff} columns={[
          { title: 'signature', sort: (r) => r.key, className: 'break-words', cell: (r) => { const s = r.a ?? r.b; return s ? <div><Mono value={s.name} /> <SafeText value={s.description} className="text-zinc-700 dark:text-zinc-300" /></div> : null } },
          { title: 'ATT&CK', className: 'min-w-[16rem]', cell: (r) => <ul className="flex flex-wrap gap-1">{(r.a ?? r.b)?.ttps.slice(0, 20).map((t) => <li key={t.id}><TechniqueLink t={t} /></li>)}</ul> },
          { title: 'severity A', cell: (r) => side(r, 'a', (x) => SEVERITY[x.severity] ?? ''), sort: (r) => r.a?.severity ?? 0 },
          { title: 'severity B', cell: (r) => side(r, 'b', (x) => SEVERITY[x.severity] ?? ''), sort: (r) => r.b?.severity ?? 0 }
        ]} />
        <DiffSection title="ATT&CK techniques" rows={c.techniques} level={3}>
          <DiffTable rows={c.techniques} label="ATT&CK techniques" onlyDiff={onlyDiff} columns={[
            { title: 'technique', cell: (r) => <TechniqueLink t={(r.a ?? r.b)!} />, sort: (r) => r.key }
          ]} />
        </DiffSection>
      </DiffSection>

      <DiffSection title="Processes">
        <p className="mb-2 text-sm text-zinc-700 dark:text-zinc-300">A: {counted(a.processCount, 'process', 'processes')} · B: {counted(b.processCount, 'process', 'processes')}</p>
        <DiffSection title="By name" rows={c.processNames} level={3}>
          <DiffTable rows={c.processNames} label="process names" onlyDiff={onlyDiff} columns={[
            { title: 'name', cell: (r) => <Mono value={r.key} />, sort: (r) => r.key },
            { title: 'A', cell: (r) => side(r, 'a', (x) => times(x.count)), sort: (r) => r.a?.count ?? 0 },
            { title: 'B', cell: (r) => side(r, 'b', (x) => times(x.count)), sort: (r) => r.b?.count ?? 0 }
          ]} />
        </DiffSection>
        <DiffSection title="By command line" rows={c.processLines} level={3}>
          <DiffTable rows={c.processLines} label="command lines" onlyDiff={onlyDiff} columns={[
            { title: 'name', cell: (r) => <Mono value={(r.a ?? r.b)?.name} />, sort: (r) => r.key },
            { title: 'command line', cell: (r) => <Mono value={(r.a ?? r.b)?.commandLine} /> },
            { title: 'A', cell: (r) => side(r, 'a', (x) => <span title={`pid ${x.pids.join(', ')}`}>{times(x.count)}</span>), sort: (r) => r.a?.count ?? 0 },
            { title: 'B', cell: (r) => side(r, 'b', (x) => <span title={`pid ${x.pids.join(', ')}`}>{times(x.count)}</span>), sort: (r) => r.b?.count ?? 0 }
          ]} />
        </DiffSection>
        <DiffSection title="In the tree" rows={c.processPaths} level={3}>
          <DiffTable rows={c.processPaths} label="process tree paths" onlyDiff={onlyDiff} empty="Neither report has a process tree." columns={[
            { title: 'ancestry', cell: (r) => <TreePath names={(r.a ?? r.b)?.names ?? []} />, sort: (r) => r.key },
            { title: 'A', cell: (r) => side(r, 'a', (x) => times(x.count)), sort: (r) => r.a?.count ?? 0 },
            { title: 'B', cell: (r) => side(r, 'b', (x) => times(x.count)), sort: (r) => r.b?.count ?? 0 }
          ]} />
        </DiffSection>
      </DiffSection>

      <DiffSection title="Network">
        <DiffSection title="Domains" rows={c.domains} level={3}>
          <DiffTable rows={c.domains} label="domains" onlyDiff={onlyDiff} columns={[
            { title: 'domain', cell: (r) => <Mono value={r.key} />, sort: (r) => r.key },
            { title: 'resolved in A', cell: (r) => side(r, 'a', (x) => <Tags values={x.ips} max={10} />) },
            { title: 'resolved in B', cell: (r) => side(r, 'b', (x) => <Tags values={x.ips} max={10} />) }
          ]} />
        </DiffSection>
        <DiffSection title="IP addresses" rows={c.addresses} level={3}>
          <DiffTable rows={c.addresses} label="IP addresses" onlyDiff={onlyDiff} columns={[
            { title: 'address', cell: (r) => <Mono value={r.key} />, sort: (r) => r.key },
            { title: 'ports in A', cell: (r) => side(r, 'a', (x) => <Tags values={x.ports} max={10} />) },
            { title: 'ports in B', cell: (r) => side(r, 'b', (x) => <Tags values={x.ports} max={10} />) }
          ]} />
        </DiffSection>
        <DiffSection title="HTTP requests" rows={c.http} level={3}>
          <DiffTable rows={c.http} label="HTTP requests" onlyDiff={onlyDiff} columns={[
            { title: 'method', cell: (r) => <SafeText value={(r.a ?? r.b)?.method} />, sort: (r) => (r.a ?? r.b)?.method ?? '' },
            { title: 'URL', cell: (r) => <Mono value={(r.a ?? r.b)?.url} />, sort: (r) => (r.a ?? r.b)?.url ?? '' },
            { title: 'status in A', cell: (r) => side(r, 'a', (x) => <SafeText value={x.statuses.join(', ') || 'no answer'} />) },
            { title: 'status in B', cell: (r) => side(r, 'b', (x) => <SafeText value={x.statuses.join(', ') || 'no answer'} />) },
            { title: 'seen by', cell: (r) => <SafeText value={[...new Set([...(r.a?.sources ?? []), ...(r.b?.sources ?? [])])].join(', ')} /> }
          ]} />
        </DiffSection>
        <DiffSection title="IDS alerts" rows={c.idsAlerts} level={3}>
          <DiffTable rows={c.idsAlerts} label="IDS alerts" onlyDiff={onlyDiff} columns={[
            { title: 'sid', cell: (r) => <Mono value={r.key} />, sort: (r) => (r.a ?? r.b)?.sid ?? 0 },
            { title: 'signature', cell: (r) => <SafeText value={(r.a ?? r.b)?.signature} />, sort: (r) => (r.a ?? r.b)?.signature ?? '' },
            { title: 'severity', cell: (r) => (r.a ?? r.b)?.severity, sort: (r) => (r.a ?? r.b)?.severity ?? 9 },
            { title: 'in A', cell: (r) => side(r, 'a', (x) => <span>{x.count}× <Tags values={x.destinations} max={5} /></span>) },
            { title: 'in B', cell: (r) => side(r, 'b', (x) => <span>{x.count}× <Tags values={x.destinations} max={5} /></span>) }
          ]} />
        </DiffSection>
      </DiffSection>

      <DiffSection title="Dropped files" rows={c.dropped}>
        <DiffTable rows={c.dropped} label="dropped files" onlyDiff={onlyDiff} columns={[
          { title: 'SHA256', cell: (r) => <Mono value={r.key} />, sort: (r) => r.key, className: 'break-all max-w-[16rem]' },
          { title: 'in A', className: 'min-w-[11rem] break-all', cell: (r) => side(r, 'a', (x) => <DroppedDetail names={x.names} paths={x.paths} count={x.count} />) },
          { title: 'in B', className: 'min-w-[11rem] break-all', cell: (r) => side(r, 'b', (x) => <DroppedDetail names={x.names} paths={x.paths} count={x.count} />) },
          { title: 'size', className: 'whitespace-nowrap', cell: (r) => <Bytes value={(r.a ?? r.b)?.size} />, sort: (r) => (r.a ?? r.b)?.size ?? -1 },
          { title: 'type', className: 'max-w-[18rem] break-words text-xs', cell: (r) => <SafeText value={(r.a ?? r.b)?.type} /> }
        ]} />
      </DiffSection>

      <DiffSection title="Touched by the run">
        <DiffSection title="Files" rows={c.files} level={3}>
          <TouchedTable rows={c.files} label="file paths" title="path" onlyDiff={onlyDiff} />
        </DiffSection>
        <DiffSection title="File names" rows={c.fileNames} level={3}>
          <DiffTable rows={c.fileNames} label="file names" onlyDiff={onlyDiff} columns={[
            { title: 'name', cell: (r) => <Mono value={r.key} />, sort: (r) => r.key },
            { title: 'paths in A', className: 'break-all text-xs', cell: (r) => side(r, 'a', (x) => <Paths paths={x.paths} />) },
            { title: 'paths in B', className: 'break-all text-xs', cell: (r) => side(r, 'b', (x) => <Paths paths={x.paths} />) }
          ]} />
        </DiffSection>
        <DiffSection title="Command lines run" rows={c.commands} level={3}>
          <TouchedTable rows={c.commands} label="command lines run" title="command line" onlyDiff={onlyDiff} />
        </DiffSection>
        <DiffSection title="Mutexes" rows={c.mutexes} level={3}>
          <TouchedTable rows={c.mutexes} label="mutexes" title="mutex" onlyDiff={onlyDiff} />
        </DiffSection>
        <DiffSection title="Registry keys" rows={c.registryKeys} level={3}>
          <TouchedTable rows={c.registryKeys} label="registry keys" title="key" onlyDiff={onlyDiff} />
        </DiffSection>
      </DiffSection>

      <DiffSection title="Static analysis" rows={c.staticFacts}>
        <DiffTable rows={c.staticFacts} label="static facts" onlyDiff={onlyDiff} columns={[
          { title: 'fact', cell: (r) => <SafeText value={r.key} />, sort: (r) => r.key, className: 'whitespace-nowrap' },
          { title: 'A', cell: (r) => side(r, 'a', (x) => <Mono value={x.value} />) },
          { title: 'B', cell: (r) => side(r, 'b', (x) => <Mono value={x.value} />) }
        ]} />
        {c.staticSets.map((s) => (
          <DiffSection key={s.title} title={s.title} rows={s.rows} level={3}>
            <DiffTable rows={s.rows} label={s.title} onlyDiff={onlyDiff} columns={[
              { title: 'entry', cell: (r) => <Mono value={r.key} />, sort: (r) => r.key },
              { title: 'A', cell: (r) => side(r, 'a', (x) => <SafeText value={x.detail || 'yes'} />) },
              { title: 'B', cell: (r) => side(r, 'b', (x) => <SafeText value={x.detail || 'yes'} />) }
            ]} />
          </DiffSection>
        ))}
      </DiffSection>

      {(a.capped.length > 0 || b.capped.length > 0) && (
        <DiffSection title="Left out">
          <ul className="text-sm text-zinc-700 dark:text-zinc-300" aria-label="Left out of the comparison">
            {a.capped.map((n, i) => <li key={`a${i}`}>A: <SafeText value={n} /></li>)}
            {b.capped.map((n, i) => <li key={`b${i}`}>B: <SafeText value={n} /></li>)}
          </ul>
        </DiffSection>
      )}
    </div>
  )
}

/** A list of things compared by themselves: each row is in A, in B, or in both. */
function TouchedTable({ rows, label, title, onlyDiff }: { rows: Row<Touched>[]; label: string; title: string; onlyDiff: boolean }): JSX.Element {
  return (
    <DiffTable rows={rows} label={label} onlyDiff={onlyDiff} columns={[
      { title, className: 'break-all', cell: (r) => <Mono value={r.key} />, sort: (r) => r.key },
      { title: 'A', cell: (r) => side(r, 'a', () => 'yes') },
      { title: 'B', cell: (r) => side(r, 'b', () => 'yes') }
    ]} />
  )
}

function Paths({ paths }: { paths: string[] }): JSX.Element {
  return <div>{paths.map((p, i) => <div key={i}><Mono value={p} /></div>)}</div>
}

function TreePath({ names }: { names: string[] }): JSX.Element {
  return (
    <span className="font-mono text-[0.85em]">
      {names.map((n, i) => <span key={i}>{i > 0 && <span aria-hidden className="px-1 text-zinc-500">›</span>}<SafeText value={n} /></span>)}
    </span>
  )
}

function DroppedDetail({ names, paths, count }: { names: string[]; paths: string[]; count: number }): JSX.Element {
  return (
    <div className="text-xs">
      {count > 1 && <div className="text-zinc-700 dark:text-zinc-300">dropped {count} times</div>}
      {names.map((n, i) => <div key={`n${i}`}><SafeText value={n} /></div>)}
      {paths.map((p, i) => <div key={`p${i}`} className="text-zinc-600 dark:text-zinc-400"><Mono value={p} /></div>)}
    </div>
  )
}
