// A retention rule being written: every condition the service takes, a dry run of the draft
// ("Preview") before it is saved, and the service's refusal shown with the field it names.
import { useId, useState, type JSX, type ReactNode } from 'react'
import { RETENTION_STATUSES } from '../../../shared/api/retention'
import type { Rule, RuleFields } from './api'

interface Draft {
  name: string
  enabled: boolean
  older: string
  ageOf: 'completed' | 'added'
  statuses: string[]
  below: string
  above: string
  tags: string
  larger: string
  freeUntil: string
  keepSamples: boolean
}

const fromRule = (r: Rule | null): Draft => ({
  name: r?.name ?? '',
  enabled: r?.enabled ?? true,
  older: r?.older_than_days?.toString() ?? '',
  ageOf: r?.age_of === 'added' ? 'added' : 'completed',
  statuses: r?.statuses ?? [],
  below: r?.score_below?.toString() ?? '',
  above: r?.score_above?.toString() ?? '',
  tags: r?.tags?.join(', ') ?? '',
  larger: r?.larger_than_mb?.toString() ?? '',
  freeUntil: r?.free_until_gb?.toString() ?? '',
  keepSamples: r?.keep_samples ?? true
})

/** The fields as the service takes them; an empty box is a condition not given. The service checks the rest. */
function toFields(d: Draft): RuleFields {
  const num = (s: string): number | undefined => (s.trim() === '' ? undefined : Number(s.trim()))
  const tags = d.tags.split(',').map((t) => t.trim()).filter(Boolean)
  const f: RuleFields = { name: d.name.trim(), enabled: d.enabled, age_of: d.ageOf, keep_samples: d.keepSamples }
  const put = <K extends keyof RuleFields>(k: K, v: RuleFields[K] | undefined) => { if (v !== undefined) f[k] = v }
  put('older_than_days', num(d.older))
  put('statuses', d.statuses.length ? (d.statuses as RuleFields['statuses']) : undefined)
  put('score_below', num(d.below))
  put('score_above', num(d.above))
  put('tags', tags.length ? tags : undefined)
  put('larger_than_mb', num(d.larger))
  put('free_until_gb', num(d.freeUntil))
  return f
}

/** The field a refusal names ("score_below: a number…"). */
const fieldOf = (message: string | null): string | null => /^([a-z_]+)(?:\.\d+)?:/.exec(message ?? '')?.[1] ?? null

export interface RuleFormProps {
  rule: Rule | null
  busy: boolean
  /** The service's refusal of the last save or preview, if any. */
  error: string | null
  onPreview(fields: RuleFields): void
  onSave(fields: RuleFields): void
  onCancel(): void
}

export function RuleForm({ rule, busy, error, onPreview, onSave, onCancel }: RuleFormProps): JSX.Element {
  const [d, setD] = useState<Draft>(() => fromRule(rule))
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setD((x) => ({ ...x, [k]: v }))
  const bad = fieldOf(error)
  const box = (field: string) => `w-24 rounded border bg-transparent px-1 ${bad === field ? 'border-red-600' : 'border-zinc-400 dark:border-zinc-600'}`
  return (
    <form aria-label={rule ? `Edit rule ${rule.name}` : 'New rule'} className="flex flex-col gap-3 rounded border border-zinc-300 p-3 text-sm dark:border-zinc-700"
      onSubmit={(e) => { e.preventDefault(); onSave(toFields(d)) }}>
      <h3 className="font-semibold">{rule ? `Edit rule #${rule.id}` : 'New rule'}</h3>
      <Row label="Name" field="name" bad={bad}>
        {(id) => <input id={id} value={d.name} onChange={(e) => set('name', e.target.value)} maxLength={100} aria-invalid={bad === 'name'}
          className={`w-72 rounded border bg-transparent px-1 ${bad === 'name' ? 'border-red-600' : 'border-zinc-400 dark:border-zinc-600'}`} />}
      </Row>
      <Row label="Older than (days)" field="older_than_days" bad={bad}>
        {(id) => (
          <span className="flex items-center gap-2">
            <input id={id} type="number" min={0} step="any" value={d.older} onChange={(e) => set('older', e.target.value)} aria-invalid={bad === 'older_than_days'} className={box('older_than_days')} />
            <label className="flex items-center gap-1">counted from
              <select value={d.ageOf} onChange={(e) => set('ageOf', e.target.value as Draft['ageOf'])} className="rounded border border-zinc-400 bg-transparent dark:border-zinc-600">
                <option value="completed">when it finished</option>
                <option value="added">when it was added</option>
              </select>
            </label>
          </span>
        )}
      </Row>
      <fieldset className="flex flex-wrap items-center gap-3" aria-invalid={bad === 'statuses'}>
        <legend className="mb-1 font-medium">Statuses <span className="font-normal text-zinc-600 dark:text-zinc-400">(none ticked: any finished status; pending, running and completed tasks are never deleted)</span></legend>
        {RETENTION_STATUSES.map((s) => (
          <label key={s} className="flex items-center gap-1">
            <input type="checkbox" checked={d.statuses.includes(s)}
              onChange={(e) => set('statuses', e.target.checked ? [...d.statuses, s] : d.statuses.filter((x) => x !== s))} />
            {s.replace('_', ' ')}
          </label>
        ))}
      </fieldset>
      <div className="flex flex-wrap gap-4">
        <Row label="Score below" field="score_below" bad={bad}>
          {(id) => <input id={id} type="number" min={0} step="any" value={d.below} onChange={(e) => set('below', e.target.value)} aria-invalid={bad === 'score_below'} className={box('score_below')} />}
        </Row>
        <Row label="Score above" field="score_above" bad={bad}>
          {(id) => <input id={id} type="number" min={0} step="any" value={d.above} onChange={(e) => set('above', e.target.value)} aria-invalid={bad === 'score_above'} className={box('score_above')} />}
        </Row>
      </div>
      <Row label="Tags (any of, comma-separated)" field="tags" bad={bad}>
        {(id) => <input id={id} value={d.tags} onChange={(e) => set('tags', e.target.value)} aria-invalid={bad === 'tags'}
          className={`w-72 rounded border bg-transparent px-1 ${bad === 'tags' ? 'border-red-600' : 'border-zinc-400 dark:border-zinc-600'}`} />}
      </Row>
      <div className="flex flex-wrap gap-4">
        <Row label="Analysis larger than (MiB)" field="larger_than_mb" bad={bad}>
          {(id) => <input id={id} type="number" min={0} step="any" value={d.larger} onChange={(e) => set('larger', e.target.value)} aria-invalid={bad === 'larger_than_mb'} className={box('larger_than_mb')} />}
        </Row>
        <Row label="Largest first until free (GiB)" field="free_until_gb" bad={bad}>
          {(id) => <input id={id} type="number" min={0} step="any" value={d.freeUntil} onChange={(e) => set('freeUntil', e.target.value)} aria-invalid={bad === 'free_until_gb'} className={box('free_until_gb')} />}
        </Row>
      </div>
      <label className="flex items-center gap-2">
        <input type="checkbox" checked={d.keepSamples} onChange={(e) => set('keepSamples', e.target.checked)} />
        Keep samples <span className="text-zinc-600 dark:text-zinc-400">(unticked: a stored sample no remaining task uses is removed too)</span>
      </label>
      <label className="flex items-center gap-2">
        <input type="checkbox" checked={d.enabled} onChange={(e) => set('enabled', e.target.checked)} />
        Enabled <span className="text-zinc-600 dark:text-zinc-400">(part of the scheduled run and of "all enabled rules")</span>
      </label>
      {error && <p role="alert" className="rounded border border-red-300 bg-red-50 px-2 py-1 text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100">{error}</p>}
      <div className="flex gap-2">
        <button type="button" disabled={busy} onClick={() => onPreview(toFields(d))}
          className="rounded border border-zinc-400 px-3 py-1 disabled:opacity-50 dark:border-zinc-600">Preview</button>
        <button type="submit" disabled={busy} className="rounded bg-sky-700 px-3 py-1 font-medium text-white disabled:opacity-50">Save rule</button>
        <button type="button" onClick={onCancel} className="rounded px-3 py-1 hover:bg-zinc-100 dark:hover:bg-zinc-800">Cancel</button>
      </div>
    </form>
  )
}

function Row({ label, field, bad, children }: { label: string; field: string; bad: string | null; children: (id: string) => ReactNode }): JSX.Element {
  const id = useId()
  return (
    <div className="flex items-center gap-2" data-field={field} data-invalid={bad === field || undefined}>
      <label htmlFor={id} className="font-medium">{label}</label>
      {children(id)}
    </div>
  )
}
