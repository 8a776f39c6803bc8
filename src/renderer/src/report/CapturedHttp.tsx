// The HTTP requests seen in the capture (`network.http[]`, Cuckoo's shape: the request's head as
// printable text in `data`, its body in `body`, the answer's status when the capture paired one):
// a sortable table whose rows open to the request's headers and body. All of it is the sample's
// doing: shown through SafeText and SafeLines, never applied.
import { useId, useState, type JSX } from 'react'
import { SafeLines, SafeText } from '../components/text'
import { num, str, textOf, type Obj } from './model'
import { DataTable, Mono } from './common'

const uriOf = (h: Obj): string => str(h, 'uri') || str(h, 'path')

export function CapturedHttp({ rows }: { rows: Obj[] }): JSX.Element {
  const [open, setOpen] = useState<Obj | null>(null)
  const id = useId()
  const n = open === null ? 0 : rows.indexOf(open) + 1
  return (
    <>
      <DataTable rows={rows} label="HTTP requests" columns={[
        { title: 'method', cell: (h) => <SafeText value={str(h, 'method')} />, sort: (h) => str(h, 'method') },
        { title: 'host', cell: (h) => <Mono value={`${str(h, 'host')}${num(h, 'port') !== null && num(h, 'port') !== 80 ? `:${num(h, 'port')}` : ''}`} />, sort: (h) => str(h, 'host') },
        { title: 'uri', cell: (h) => <Mono value={textOf(uriOf(h), 1000)} />, sort: (h) => uriOf(h) },
        { title: 'user agent', cell: (h) => <Mono value={textOf(h['user-agent'], 300)} /> },
        { title: 'status', cell: (h) => textOf(h.status), sort: (h) => num(h, 'status') ?? -1 },
        {
          title: 'details', className: 'whitespace-nowrap',
          cell: (h) => (
            // The name starts with the words shown (WCAG 2.5.3, label in name): "show headers and
            // body of GET …", so a voice-control user says what they see.
            <button type="button" aria-expanded={open === h} aria-controls={open === h ? id : undefined}
              onClick={() => setOpen((o) => (o === h ? null : h))}
              className="rounded px-1 text-sky-800 underline hover:bg-zinc-100 dark:text-sky-300 dark:hover:bg-zinc-800">
              {open === h ? 'hide' : 'show'}<span className="sr-only"> headers and body of {textOf(str(h, 'method'), 20)} {textOf(uriOf(h), 300)}</span>
            </button>
          )
        }
      ]} />
      {open !== null && <CapturedRequest id={id} h={open} n={n} />}
    </>
  )
}

function CapturedRequest({ id, h, n }: { id: string; h: Obj; n: number }): JSX.Element {
  const lines = str(h, 'data').split(/\r\n|\n/)
  const first = lines[0] ?? ''
  const headers = lines.slice(1).join('\n').trim()
  const body = str(h, 'body')
  const status = num(h, 'status')
  const count = num(h, 'count')
  return (
    <div id={id} role="region" aria-label={`Captured request ${n}`}
      className="mt-1 flex flex-col gap-1 rounded border border-zinc-200 bg-zinc-50 px-3 py-2 text-sm dark:border-zinc-800 dark:bg-zinc-900/50">
      {first !== '' && <p className="break-all"><Mono value={textOf(first, 2000)} /></p>}
      {headers !== ''
        ? <pre className="font-mono text-xs whitespace-pre-wrap break-all"><SafeLines value={headers} /></pre>
        : <p className="text-xs text-zinc-600 dark:text-zinc-400">No headers were captured.</p>}
      {body !== '' ? (
        <pre role="region" aria-label={`Request body, request ${n}`} tabIndex={0}
          className="max-h-64 overflow-auto rounded border border-zinc-200 bg-white p-2 font-mono text-xs whitespace-pre-wrap break-all focus-visible:outline-2 focus-visible:outline-sky-500 dark:border-zinc-800 dark:bg-zinc-950">
          <SafeLines value={body} />
        </pre>
      ) : <p className="text-xs text-zinc-600 dark:text-zinc-400">No request body.</p>}
      <p className="text-xs text-zinc-600 dark:text-zinc-400">
        {status !== null ? `Answered ${status}` : 'No answer was paired with it in the capture'}
        {count !== null && count > 1 ? ` · sent ${count} times` : ''}
        {' · the answer\'s headers and body are in the capture (dump.pcap); a run with mitm=1 lists them under Decrypted HTTP(S)'}
      </p>
    </div>
  )
}
