// Files the run produced: dropped files (hashes, type, YARA, download), process memory dumps (list
// with sizes, download) and the machine's full dump. Downloads come from the sources the page
// gives (API URLs online, blob: URLs of an archive offline).
import type { JSX } from 'react'
import { SafeText, Bytes } from '../components/text'
import { baseName, num, obj, objs, str, type Obj, type ReportSources } from './model'
import { DataTable, Download, Empty, Mono, Section, Tags } from './common'

export function DroppedView({ report, sources }: { report: unknown; sources: ReportSources }): JSX.Element {
  const dropped = objs(report, 'dropped')
  const all = sources.droppedArchive()
  return (
    <Section title="Dropped files" count={dropped.length}>
      {all !== null && dropped.length > 0 && <p className="mb-2 text-sm"><Download href={all}>Download every dropped file (archive)</Download></p>}
      <DataTable rows={dropped} label="dropped files" columns={[
        { title: 'name', cell: (d) => { const href = sources.droppedFile(d); return href ? <Download href={href} name={baseName(str(d, 'name')) || 'dropped.bin'}><SafeText value={str(d, 'name')} /></Download> : <SafeText value={str(d, 'name')} /> }, sort: (d) => str(d, 'name') },
        { title: 'path in guest', cell: (d) => <Mono value={str(d, 'filepath')} />, sort: (d) => str(d, 'filepath') },
        { title: 'size', cell: (d) => <Bytes value={num(d, 'size')} />, sort: (d) => num(d, 'size') ?? -1 },
        { title: 'type', cell: (d) => <SafeText value={str(d, 'type')} />, sort: (d) => str(d, 'type') },
        { title: 'hashes', cell: (d) => <div className="text-xs"><div>MD5 <Mono value={str(d, 'md5')} /></div><div>SHA256 <Mono value={str(d, 'sha256')} /></div></div> },
        { title: 'YARA', cell: (d) => <Tags values={objs(d, 'yara').map((y) => str(y, 'name')).filter((n) => n !== '')} max={10} />, sort: (d) => objs(d, 'yara').length }
      ]} />
    </Section>
  )
}

interface Dump { name: string; pid: number | null; size: number | null; yara: string[]; urls: string[] }

export function memoryDumps(report: unknown, sources: ReportSources): Dump[] {
  const fromReport = new Map<string, Obj>()
  for (const p of objs(report, 'procmemory')) {
    const name = baseName(str(p, 'file') || str(p, 'path'))
    if (name) fromReport.set(name, p)
  }
  const known = sources.memoryNames?.()
  const names = known && known.length > 0 ? known : [...fromReport.keys()].map((name) => ({ name, size: null }))
  return names.map(({ name, size }) => {
    const p = fromReport.get(name) ?? {}
    const pid = num(p, 'pid') ?? (/^(\d+)-/.exec(name) ? Number(/^(\d+)-/.exec(name)?.[1]) : null)
    const urls = Array.isArray(p.urls) ? p.urls.filter((u): u is string => typeof u === 'string') : []
    return { name, pid, size: size ?? num(p, 'size'), yara: objs(p, 'yara').map((y) => str(y, 'name')).filter((n) => n !== ''), urls }
  })
}

export function MemoryView({ report, sources }: { report: unknown; sources: ReportSources }): JSX.Element {
  const dumps = memoryDumps(report, sources)
  const full = obj(report, 'memory')
  return (
    <>
      <Section title="Process memory dumps" count={dumps.length}>
        <DataTable rows={dumps} label="memory dumps" empty="No process memory dumps." columns={[
          { title: 'file', cell: (d) => <Download href={sources.memoryDump(d.name)} name={d.name}><SafeText value={d.name} /></Download>, sort: (d) => d.name },
          { title: 'pid', cell: (d) => d.pid, sort: (d) => d.pid ?? -1 },
          { title: 'size', cell: (d) => <Bytes value={d.size} />, sort: (d) => d.size ?? -1 },
          { title: 'YARA', cell: (d) => <Tags values={d.yara} max={10} /> },
          { title: 'URLs in memory', cell: (d) => <div className="text-xs">{d.urls.slice(0, 20).map((u, i) => <div key={i}><Mono value={u} /></div>)}{d.urls.length > 20 && <div>… {d.urls.length - 20} more in the report</div>}</div>, sort: (d) => d.urls.length }
        ]} />
      </Section>
      {Object.keys(full).length > 0 && (
        <Section title="Machine memory">
          <p className="text-sm">Full dump of the machine: <Bytes value={num(full, 'size')} /> {sources.memoryDump('memory.dmp') === null && '(not served by the API; in the analysis folder as memory.dmp)'}
            {sources.memoryDump('memory.dmp') !== null && <Download href={sources.memoryDump('memory.dmp')} name="memory.dmp">download memory.dmp</Download>}</p>
        </Section>
      )}
      {dumps.length === 0 && Object.keys(full).length === 0 && <Empty>The analysis made no memory dump.</Empty>}
    </>
  )
}
