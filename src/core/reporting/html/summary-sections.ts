// The top of report.html: what was analysed (file or URL, type, hashes), the score, when and where
// it ran, then the signatures that fired, most severe first, with the marks that made them fire.
import { size, text, when } from './escape'
import { kv, moreLine, type Obj } from './blocks'
import type { PageWriter } from './page-writer'
import { isObj, num, obj, objs, str } from '../report-view'
import { scoreLevel, scoreWords } from '../../../shared/score'

const SEVERITY: Record<number, string> = { 1: 'info', 2: 'warning', 3: 'danger' }


function machineName(info: Obj): string {
  const m = info.machine
  if (typeof m === 'string') return text(m)
  if (!isObj(m)) return ''
  const parts = [str(m, 'name'), str(m, 'label') && str(m, 'label') !== str(m, 'name') ? `(${str(m, 'label')})` : '', str(m, 'manager')]
  return text(parts.filter((p) => p !== '').join(' '))
}

export function title(report: Obj): string {
  const target = obj(report, 'target')
  return str(obj(target, 'file'), 'name') || str(target, 'url') || `Task ${num(obj(report, 'info'), 'id') ?? ''}`
}

export function header(report: Obj): string {
  const info = obj(report, 'info')
  const target = obj(report, 'target')
  const file = obj(target, 'file')
  const score = num(info, 'score') ?? 0
  const isUrl = str(target, 'category') === 'url' || (str(target, 'url') !== '' && str(file, 'name') === '')
  const facts: [string, string][] = isUrl
    ? [['URL', `<code>${text(str(target, 'url'))}</code>`]]
    : [
        ['Type', text(str(file, 'type'))],
        ['Size', size(file.size)],
        ['MD5', `<code>${text(str(file, 'md5'))}</code>`],
        ['SHA1', `<code>${text(str(file, 'sha1'))}</code>`],
        ['SHA256', `<code>${text(str(file, 'sha256'))}</code>`],
        ['SHA512', str(file, 'sha512') ? `<code>${text(str(file, 'sha512'))}</code>` : ''],
        ['ssdeep', str(file, 'ssdeep') ? `<code>${text(str(file, 'ssdeep'))}</code>` : '']
      ]
  facts.push(
    ['Task', text(num(info, 'id') ?? '')],
    ['Category', text(str(target, 'category'))],
    ['Package', text(str(info, 'package'))],
    ['Platform', text(str(info, 'platform'))],
    ['Machine', machineName(info)],
    ['Started', when(info.started)],
    ['Ended', when(info.ended)],
    ['Duration', num(info, 'duration') !== null ? `${text(num(info, 'duration'))} s` : '']
  )
  return `<header><div class="score s-${scoreLevel(score)}" title="score ${text(score)} of 10: ${scoreWords(score)}"><b>${text(score)}</b>score</div>` +
    `<div><h1>${text(title(report), 500)}</h1>${kv(facts)}</div></header>`
}

function markHtml(m: Obj): string {
  switch (str(m, 'type')) {
    case 'ioc': {
      const d = str(m, 'description')
      return `<span class="tag">${text(str(m, 'category'))}</span><code>${text(m.ioc, 1000)}</code>${d ? ` <span class="muted">${text(d, 300)}</span>` : ''}`
    }
    case 'call': {
      const call = obj(m, 'call')
      const args = Object.entries(obj(call, 'arguments')).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')
      return `<span class="tag">call</span>pid ${text(m.pid)} · <code>${text(str(call, 'api'))}(${text(args, 600)})</code>`
    }
    default: {
      const fields = Object.entries(m).filter(([k]) => k !== 'type')
      return `<span class="tag">${text(str(m, 'type') || 'mark')}</span>` +
        fields.map(([k, v]) => `<span class="muted">${text(k, 100)}:</span> <code>${text(v, 600)}</code>`).join(' ')
    }
  }
}

export async function signaturesSection(w: PageWriter, report: Obj): Promise<void> {
  const sigs = objs(report, 'signatures')
  w.put(`<section id="signatures"><h2>Signatures (${sigs.length})</h2>`)
  if (sigs.length === 0) w.put('<p class="muted">No signature fired.</p>')
  const ordered = [...sigs].sort((a, b) => (num(b, 'severity') ?? 0) - (num(a, 'severity') ?? 0))
  for (const s of ordered.slice(0, 500)) {
    const sev = Math.min(3, Math.max(1, Math.round(num(s, 'severity') ?? 1)))
    const marks = objs(s, 'marks')
    const count = num(s, 'markcount') ?? marks.length
    // Cuckoo 2.0.7 writes {id: {short, long}}; older Aviary reports wrote {id: name}.
    const ttp = Object.entries(obj(s, 'ttp')).map(([id, t]) => {
      const name = typeof t === 'string' ? t : isObj(t) ? str(t, 'short') : ''
      return `<span class="tag" title="${text(isObj(t) ? str(t, 'long') : '', 500)}">${text(id, 40)} ${text(name, 100)}</span>`
    }).join('')
    const families = Array.isArray(s.families) ? s.families.map((f) => `<span class="tag">${text(f, 100)}</span>`).join('') : ''
    w.put(`<div class="sig sev-${sev}"><span class="sev">${SEVERITY[sev]}</span><b>${text(str(s, 'description'), 500)}</b> ` +
      `<span class="muted mono">${text(str(s, 'name'), 200)}</span> ${families}${ttp}`)
    if (marks.length > 0) {
      const shown = Math.min(marks.length, 100)
      w.put('<ul>' + marks.slice(0, shown).map((m) => `<li>${markHtml(m)}</li>`).join('') + '</ul>')
      w.put(moreLine(count, shown, 'marks'))
    }
    w.put('</div>')
    await w.tick()
  }
  w.put(moreLine(sigs.length, Math.min(sigs.length, 500), 'signatures') + '</section>')
}
