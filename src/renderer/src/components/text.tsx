// Shows untrusted text (file names, command lines, domains from a sample) with its invisible
// characters made visible: a right-to-left override in `invoice\u202Egpj.exe` is drawn as a
// marked "RLO", never applied. Sizes and dates read easily, with the exact value on hover.
import { Fragment, type JSX } from 'react'
import { exactBytes, formatBytes, formatExact, formatRelative, parseDate, splitInvisible } from '../format'

export function SafeText({ value, className }: { value: unknown; className?: string }): JSX.Element {
  const text = value === null || value === undefined ? '' : String(value)
  const parts = splitInvisible(text)
  return (
    <span className={className} dir="ltr" style={{ unicodeBidi: 'isolate' }}>
      {parts.map((p, i) =>
        'text' in p ? (
          <span key={i}>{p.text}</span>
        ) : (
          <abbr key={i} title={`U+${p.code.toString(16).toUpperCase().padStart(4, '0')} (invisible character, shown, not applied)`}
            className="mx-px rounded bg-amber-200 px-0.5 text-[0.7em] font-semibold text-amber-900 no-underline dark:bg-amber-800 dark:text-amber-100"
            data-control={p.control}>
            {p.control}
          </abbr>
        )
      )}
    </span>
  )
}

/**
 * Untrusted text of several lines (HTTP headers, a body's printable start): line breaks and tabs
 * are kept as layout (in a `<pre>` or a whitespace-pre box), every other invisible character is
 * shown as SafeText shows it. Text past `max` characters is cut, saying how much was left out.
 */
export function SafeLines({ value, max = 65_536 }: { value: unknown; max?: number }): JSX.Element {
  const text = value === null || value === undefined ? '' : String(value)
  const shown = text.length > max ? text.slice(0, max) : text
  return (
    <span dir="ltr" style={{ unicodeBidi: 'isolate' }}>
      {shown.split(/\r\n|\r|\n/).map((line, i) => (
        <Fragment key={i}>
          {i > 0 ? '\n' : null}
          {line.split('\t').map((part, j) => <Fragment key={j}>{j > 0 ? '\t' : null}<SafeText value={part} /></Fragment>)}
        </Fragment>
      ))}
      {text.length > max ? <span className="text-zinc-500">{` … (${text.length - max} more characters)`}</span> : null}
    </span>
  )
}

export function Bytes({ value }: { value: number | null | undefined }): JSX.Element {
  return <span title={exactBytes(value)}>{formatBytes(value)}</span>
}

/**
 * A date: relative ("3 min ago") with the exact time on hover, or with `absolute` the exact time
 * with the relative form on hover (pages about one task, where the exact time matters).
 */
export function When({ value, now, absolute = false }: { value: unknown; now?: Date; absolute?: boolean }): JSX.Element {
  const date = parseDate(value)
  if (!date) return <span>—</span>
  const exact = formatExact(date)
  const relative = formatRelative(date, now)
  return (
    <time dateTime={date.toISOString()} title={absolute ? relative : exact}>
      {absolute ? exact : relative}
    </time>
  )
}
