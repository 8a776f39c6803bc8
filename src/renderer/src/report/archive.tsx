// What ran from an archive. A task runs one member of an archive when:
// - it came from Cuckoo's or Aviary's create/submit, which gives each member its own task with
//   category `archive` and option `filename=<member path>` (Cuckoo keeps the archive as the target
//   and its report says target.archive, target.filename and target.human; Aviary stores the member
//   itself, so its report has the member as target.file, and the path and the archive's name in
//   info.options: filename=<member path>, archive=<archive name>);
// - or its sample is an archive run with an archive package (zip, archive: the member named by
//   option `file` or `filename`, else the first file), where static.archive lists the members.
// Options come as Cuckoo's "k=v,k2=v2" string or, from newer Cuckoo servers, as an object.
import type { JSX } from 'react'
import { isObj, num, obj, objs, str } from './model'
import { DataTable, Mono, Section } from './common'

export interface ArchiveMember { name: string; size: number | null; directory: boolean }

export interface ArchiveOrigin {
  /** The member that ran (its path inside the archive), '' when nothing says which. */
  member: string
  /** How the member was chosen: named by the task's options, or the first file by default. */
  chosen: 'named' | 'first'
  /** The archive's name, '' when the report does not say. */
  archive: string
  /** The members static.archive lists (at most the first 1,000), [] when it lists none. */
  members: ArchiveMember[]
  /** Members in the archive (more than `members` when the listing was cut). */
  count: number
}

const ARCHIVE_PACKAGES = new Set(['zip', 'archive', '7z', 'rar'])

/** Task options, as a "k=v,k2=v2" string (Cuckoo's parsing: split on ",", then at the first "=") or an object. */
export function optionsOf(options: unknown): Map<string, string> {
  const out = new Map<string, string>()
  if (typeof options === 'string') {
    for (const piece of options.slice(0, 100_000).split(',')) {
      const eq = piece.indexOf('=')
      if (eq > 0) out.set(piece.slice(0, eq).trim(), piece.slice(eq + 1).trim())
    }
  } else if (isObj(options)) {
    for (const [k, v] of Object.entries(options)) if (typeof v === 'string' || typeof v === 'number') out.set(k, String(v))
  }
  return out
}

function listing(report: unknown): { members: ArchiveMember[]; count: number } {
  const a = obj(report, 'static', 'archive')
  const members = objs(a, 'entries').slice(0, 1000).map((e) => ({ name: str(e, 'name'), size: num(e, 'size'), directory: e.directory === true }))
  return { members, count: Math.max(num(a, 'count') ?? 0, members.length) }
}

/** The archive a task's member came from (option archive=, Aviary's create/submit), '' when none is named. */
export function taskArchiveName(task: { category?: unknown; options?: unknown }): string {
  return task.category === 'archive' ? optionsOf(task.options).get('archive') ?? '' : ''
}

/** What a task (as tasks/view gives it) says it ran from an archive, before or without a report. */
export function taskArchiveMember(task: { category?: unknown; options?: unknown }): string {
  if (task.category !== 'archive') return ''
  return optionsOf(task.options).get('filename') ?? ''
}

/** What the report says ran from an archive, or null when the task did not run from one. */
export function reportArchiveOrigin(report: unknown): ArchiveOrigin | null {
  const info = obj(report, 'info')
  const target = obj(report, 'target')
  const options = optionsOf(info.options)
  const category = str(target, 'category') || str(info, 'category')
  const { members, count } = listing(report)
  const archivePackage = ARCHIVE_PACKAGES.has(str(info, 'package').toLowerCase())
  const cuckooArchive = obj(target, 'archive')
  if (category !== 'archive' && !archivePackage && Object.keys(cuckooArchive).length === 0) return null
  const named = str(target, 'filename') || options.get('filename') || (archivePackage ? options.get('file') : undefined) || ''
  const first = members.find((m) => !m.directory && m.name !== '')?.name ?? ''
  const archive = str(cuckooArchive, 'name') || (category === 'archive' ? options.get('archive') ?? '' : '') || (members.length > 0 ? str(obj(target, 'file'), 'name') : '')
  return { member: named || first, chosen: named !== '' ? 'named' : 'first', archive, members, count }
}

/** "member (named by the task)" with the archive's name when known: a line of the summary. */
export function ArchiveFact({ origin }: { origin: ArchiveOrigin }): JSX.Element {
  return (
    <span data-testid="archive-member">
      {origin.member !== '' ? <Mono value={origin.member} /> : <span className="text-zinc-500">a member the report does not name</span>}
      {origin.archive !== '' && <> <span className="text-zinc-500">from</span> <Mono value={origin.archive} /></>}
      {origin.member !== '' && origin.chosen === 'first' && <span className="text-zinc-500"> (the first file: the task named none)</span>}
    </span>
  )
}

/** The archive's members, the one that ran marked. */
export function ArchiveMembers({ origin }: { origin: ArchiveOrigin }): JSX.Element | null {
  if (origin.members.length === 0) return null
  return (
    <Section title="Archive members" count={origin.count}>
      <DataTable<ArchiveMember> rows={origin.members} label="archive members" columns={[
        { title: 'member', cell: (m) => <><Mono value={m.name} />{m.name === origin.member && <b className="ml-2 text-xs text-emerald-700 dark:text-emerald-400" data-ran="true">ran</b>}</>, sort: (m) => m.name },
        { title: 'size', cell: (m) => (m.directory ? 'folder' : m.size ?? ''), sort: (m) => m.size ?? -1 }
      ]} />
      {origin.count > origin.members.length && <p className="text-xs text-zinc-500">The first {origin.members.length} of {origin.count} members are listed.</p>}
    </Section>
  )
}
