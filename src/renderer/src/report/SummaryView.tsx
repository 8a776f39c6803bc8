// The top of a report: what was analysed (file or URL, type, size, hashes; for an archive, the
// member that ran and the others in it), its score and the ATT&CK techniques of its signatures,
// when and on which machine it ran, how long, and the downloads that exist (pcap).
import type { JSX, ReactNode } from 'react'
import { SafeText, Bytes, When } from '../components/text'
import { ScoreBadge } from '../components/status'
import { formatDuration } from '../format'
import { isObj, num, obj, str, objs, type Obj, type ReportSources } from './model'
import { Download, KeyValues, Mono, Section, Tags } from './common'
import { reportTechniques, Techniques } from './attack'
import { ArchiveFact, ArchiveMembers, reportArchiveOrigin } from './archive'

function machineName(info: Obj): string {
  const m = info.machine
  if (typeof m === 'string') return m
  if (!isObj(m)) return ''
  const name = str(m, 'name')
  const label = str(m, 'label')
  return [name, label && label !== name ? `(${label})` : '', str(m, 'manager')].filter((p) => p !== '').join(' ')
}

export function reportTitle(report: unknown): string {
  const target = obj(report, 'target')
  return str(obj(target, 'file'), 'name') || str(target, 'human') || str(target, 'url') || `Task ${num(obj(report, 'info'), 'id') ?? ''}`.trim()
}

export function SummaryView({ report, sources }: { report: unknown; sources: ReportSources }): JSX.Element {
  const info = obj(report, 'info')
  const target = obj(report, 'target')
  const file = obj(target, 'file')
  const isUrl = str(target, 'category') === 'url' || (str(target, 'url') !== '' && str(file, 'name') === '')
  const duration = num(info, 'duration')
  const yara = objs(file, 'yara').map((y) => str(y, 'name')).filter((n) => n !== '')
  const pcap = sources.pcap()
  const sigs = objs(report, 'signatures').length
  const ttps = reportTechniques(report)
  const archive = reportArchiveOrigin(report)
  return (
    <>
    <Section title="Summary">
      <div className="flex items-start gap-4">
        <div className="flex flex-col items-center gap-1 rounded border border-zinc-200 p-3 dark:border-zinc-800">
          <span className="text-xs text-zinc-500">score</span>
          <ScoreBadge score={num(info, 'score')} />
          <span className="text-xs text-zinc-500">{sigs} signature{sigs === 1 ? '' : 's'}</span>
        </div>
        <div className="min-w-0 flex-1">
          <h3 className="mb-2 text-lg font-semibold break-all"><SafeText value={reportTitle(report)} /></h3>
          <KeyValues rows={([
            ['URL', isUrl && <Mono value={str(target, 'url')} />],
            ['Ran from archive', archive !== null && <ArchiveFact origin={archive} />],
            ['Type', str(file, 'type') && <SafeText value={str(file, 'type')} />],
            ['Size', num(file, 'size') !== null && <Bytes value={num(file, 'size')} />],
            ['MD5', str(file, 'md5') && <Mono value={str(file, 'md5')} />],
            ['SHA1', str(file, 'sha1') && <Mono value={str(file, 'sha1')} />],
            ['SHA256', str(file, 'sha256') && <Mono value={str(file, 'sha256')} />],
            ['SHA512', str(file, 'sha512') && <Mono value={str(file, 'sha512')} />],
            ['ssdeep', str(file, 'ssdeep') && <Mono value={str(file, 'ssdeep')} />],
            ['YARA', yara.length > 0 && <Tags values={yara} />],
            ['ATT&CK', ttps.length > 0 && <Techniques list={ttps} label="ATT&CK techniques" />],
            ['Task', num(info, 'id')],
            ['Category', str(target, 'category') && <SafeText value={str(target, 'category')} />],
            ['Package', str(info, 'package') && <SafeText value={str(info, 'package')} />],
            ['Platform', str(info, 'platform') && <SafeText value={str(info, 'platform')} />],
            ['Machine', machineName(info) && <SafeText value={machineName(info)} />],
            ['Started', info.started !== undefined && info.started !== null && <When value={info.started} absolute />],
            ['Ended', info.ended !== undefined && info.ended !== null && <When value={info.ended} absolute />],
            ['Duration', duration !== null && formatDuration(duration)],
            ['Capture', <Download key="p" href={pcap} name="dump.pcap">{pcap ? 'download dump.pcap' : 'no pcap'}</Download>]
          ] satisfies [string, ReactNode][])} />
        </div>
      </div>
    </Section>
    {archive !== null && <ArchiveMembers origin={archive} />}
    </>
  )
}
