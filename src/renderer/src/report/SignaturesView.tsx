// The signatures that fired, most severe first (report.json keeps Cuckoo's ascending order), each
// with its description, severity, its ATT&CK techniques (linked to attack.mitre.org) and the marks
// (IOCs, calls) that made it fire.
import { useState, type JSX } from 'react'
import { SafeText } from '../components/text'
import { num, obj, objs, str, textOf, type Obj } from './model'
import { Empty, Mono, Section } from './common'
import { Techniques, techniques } from './attack'
import { counted } from '../format'

const SEVERITY: Record<number, { word: string; tone: string }> = {
  1: { word: 'info', tone: 'border-sky-500' },
  2: { word: 'warning', tone: 'border-amber-500' },
  3: { word: 'danger', tone: 'border-red-600' }
}
const MAX_MARKS = 50

function severityOf(s: Obj): number {
  return Math.min(3, Math.max(1, Math.round(num(s, 'severity') ?? 1)))
}

function Mark({ m }: { m: Obj }): JSX.Element {
  const type = str(m, 'type')
  if (type === 'ioc') {
    return <><span className="mr-1 text-xs text-zinc-500"><SafeText value={str(m, 'category') || 'ioc'} /></span><Mono value={textOf(m.ioc, 1000)} />
      {str(m, 'description') && <span className="ml-1 text-zinc-500"><SafeText value={str(m, 'description')} /></span>}</>
  }
  if (type === 'call') {
    const call = obj(m, 'call')
    const args = Object.entries(obj(call, 'arguments')).map(([k, v]) => `${k}=${textOf(v, 200)}`).join(', ')
    return <><span className="mr-1 text-xs text-zinc-500">call, pid {textOf(m.pid)}</span><Mono value={`${str(call, 'api')}(${args})`} /></>
  }
  const fields = Object.entries(m).filter(([k]) => k !== 'type')
  return <><span className="mr-1 text-xs text-zinc-500"><SafeText value={type || 'mark'} /></span>
    {fields.map(([k, v]) => <span key={k} className="mr-2"><SafeText value={k} className="text-zinc-500" />: <Mono value={textOf(v, 600)} /></span>)}</>
}

function Signature({ s }: { s: Obj }): JSX.Element {
  const [all, setAll] = useState(false)
  const sev = severityOf(s)
  const marks = objs(s, 'marks')
  const shown = all ? marks : marks.slice(0, MAX_MARKS)
  const ttps = techniques(s.ttp)
  const families = Array.isArray(s.families) ? s.families.map((f) => textOf(f, 100)) : []
  return (
    <li className={`border-l-4 ${SEVERITY[sev]?.tone ?? ''} mb-2 pl-3`} data-severity={sev}>
      <div className="flex flex-wrap items-baseline gap-2">
        <span className="text-xs font-semibold uppercase">{SEVERITY[sev]?.word}</span>
        <b><SafeText value={str(s, 'description') || str(s, 'name') || '(no description)'} /></b>
        <Mono value={str(s, 'name')} />
        {families.map((f, i) => <span key={i} className="rounded bg-zinc-100 px-1 text-xs dark:bg-zinc-800"><SafeText value={f} /></span>)}
      </div>
      {ttps.length > 0 && <div className="mt-1"><Techniques list={ttps} label={`ATT&CK techniques of ${str(s, 'name') || 'the signature'}`} /></div>}
      {marks.length > 0 && (
        <ul className="mt-1 text-sm">
          {shown.map((m, i) => <li key={i} className="break-all"><Mark m={m} /></li>)}
        </ul>
      )}
      {marks.length > shown.length && (
        <button type="button" className="text-xs text-sky-700 underline dark:text-sky-400" onClick={() => setAll(true)}>show {counted(marks.length - shown.length, 'more mark', 'more marks')}</button>
      )}
    </li>
  )
}

export function SignaturesView({ report }: { report: unknown }): JSX.Element {
  const sigs = [...objs(report, 'signatures')].sort((a, b) => severityOf(b) - severityOf(a))
  return (
    <Section title="Signatures" count={sigs.length}>
      {sigs.length === 0 ? <Empty>No signature fired.</Empty> : <ul>{sigs.slice(0, 1000).map((s, i) => <Signature key={i} s={s} />)}</ul>}
    </Section>
  )
}
