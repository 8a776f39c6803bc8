// MITRE ATT&CK techniques of a signature (its `ttp`), in either shape a report may hold: Cuckoo
// 2.0.7's `{"T1105": {"short": "Ingress Tool Transfer", "long": "..."}}` or older Aviary reports'
// `{"T1105": "Ingress Tool Transfer"}` (and a plain list of ids). Each id links to its page on
// attack.mitre.org (a sub-technique T1547.001 to /techniques/T1547/001/); the link is built from
// the id only when the id has ATT&CK's form, never from the report's text.
import type { JSX } from 'react'
import { SafeText } from '../components/text'
import { hasInvisible } from '../format'
import { isObj, objs } from './model'

export interface Technique {
  id: string
  /** The technique's name (`short`), '' when the report gives none. */
  name: string
  /** One sentence on it (`long`), '' when the report gives none. */
  description: string
}

const ID = /^T(\d{4})(?:\.(\d{3}))?$/
const MAX_PER_SIGNATURE = 50
const MAX_TEXT = 1000

export function techniqueUrl(id: string): string | null {
  const m = ID.exec(id)
  if (m === null) return null
  return `https://attack.mitre.org/techniques/T${m[1]}/${m[2] !== undefined ? `${m[2]}/` : ''}`
}

const text = (v: unknown): string => (typeof v === 'string' ? v.slice(0, MAX_TEXT) : '')

/** A signature's techniques, in the report's order, from any of the shapes above. */
export function techniques(ttp: unknown): Technique[] {
  const out: Technique[] = []
  if (Array.isArray(ttp)) {
    for (const id of ttp.slice(0, MAX_PER_SIGNATURE)) if (typeof id === 'string' && id !== '') out.push({ id: text(id), name: '', description: '' })
    return out
  }
  if (!isObj(ttp)) return out
  for (const [id, v] of Object.entries(ttp).slice(0, MAX_PER_SIGNATURE)) {
    if (typeof v === 'string') out.push({ id: text(id), name: text(v), description: '' })
    else if (isObj(v)) out.push({ id: text(id), name: text(v.short), description: text(v.long) })
    else out.push({ id: text(id), name: '', description: '' })
  }
  return out
}

/** Every technique of the report's signatures, once each (the first name given), in id order. */
export function reportTechniques(report: unknown): Technique[] {
  const seen = new Map<string, Technique>()
  for (const s of objs(report, 'signatures').slice(0, 1000)) {
    for (const t of techniques(s.ttp)) {
      const known = seen.get(t.id)
      if (known === undefined) seen.set(t.id, t)
      else if (known.name === '' && t.name !== '') seen.set(t.id, t)
    }
  }
  // ATT&CK's ids first, in order; whatever else a report calls a technique after them.
  const rank = (t: Technique) => (ID.test(t.id) ? 0 : 1)
  return [...seen.values()].sort((a, b) => rank(a) - rank(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

export function TechniqueLink({ t }: { t: Technique }): JSX.Element {
  const url = techniqueUrl(t.id)
  // The description goes in a tooltip only when it has nothing invisible to hide there.
  const title = t.description !== '' && !hasInvisible(t.description) ? t.description : undefined
  return (
    <span className="inline-flex items-baseline gap-1 rounded border border-zinc-300 px-1 text-xs dark:border-zinc-700" data-technique={t.id}>
      {url !== null
        ? <a href={url} target="_blank" rel="noopener noreferrer" className="font-mono text-sky-700 underline dark:text-sky-400">{t.id}</a>
        : <span className="font-mono"><SafeText value={t.id} /></span>}
      {t.name !== '' && <span title={title}><SafeText value={t.name} /></span>}
    </span>
  )
}

export function Techniques({ list, label }: { list: readonly Technique[]; label: string }): JSX.Element | null {
  if (list.length === 0) return null
  return (
    <ul aria-label={label} className="flex flex-wrap gap-1">
      {list.map((t, i) => <li key={`${i}-${t.id}`}><TechniqueLink t={t} /></li>)}
    </ul>
  )
}
