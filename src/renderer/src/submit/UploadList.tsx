// What was queued and sent: a progress bar per upload, then the task link and the sample's hashes.
import type { JSX } from 'react'
import { Link } from 'react-router'
import { Bytes, SafeText } from '../components/text'
import { useQueue, type QueueItem } from './queue'

const STATE_TEXT: Record<QueueItem['state'], string> = {
  queued: 'queued', uploading: 'sending', hashing: 'reading hashes', done: 'done', error: 'failed', cancelled: 'cancelled'
}

function Progress({ item }: { item: QueueItem }): JSX.Element | null {
  if (item.kind !== 'file' || item.state === 'queued') return null
  // Once the server answered, every byte arrived: browsers need not fire a last progress event.
  const sent = item.state === 'hashing' || item.state === 'done'
  const pct = sent ? 100 : item.total > 0 ? Math.min(100, Math.round((item.loaded / item.total) * 100)) : 0
  return (
    <div role="progressbar" aria-label="upload progress" aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct}
      className="h-1.5 w-full overflow-hidden rounded bg-zinc-200 dark:bg-zinc-800">
      <div className={`h-full ${item.state === 'error' ? 'bg-red-500' : 'bg-sky-500'} transition-[width]`} style={{ width: `${pct}%` }} />
    </div>
  )
}

export function UploadList(): JSX.Element | null {
  const items = useQueue((s) => s.items)
  const remove = useQueue((s) => s.remove)
  const cancel = useQueue((s) => s.cancel)
  if (!items.length) return null
  return (
    <ul aria-label="Submissions" className="divide-y divide-zinc-200 rounded border border-zinc-200 text-sm dark:divide-zinc-800 dark:border-zinc-800">
      {items.map((item) => (
        <li key={item.key} data-state={item.state} className="flex flex-col gap-1 px-3 py-2">
          <div className="flex items-center gap-3">
            <span className="w-10 shrink-0 text-xs uppercase text-zinc-500">{item.kind}</span>
            <span className="min-w-0 flex-1 truncate font-mono text-xs" data-testid="item-name"><SafeText value={item.name} /></span>
            {item.size !== undefined ? <span className="text-xs text-zinc-500"><Bytes value={item.size} /></span> : null}
            <span className={`text-xs ${item.state === 'error' ? 'text-red-700 dark:text-red-400' : 'text-zinc-600 dark:text-zinc-400'}`}>{STATE_TEXT[item.state]}</span>
            {item.taskId !== undefined ? <Link to={`/tasks/${item.taskId}`} className="text-sky-700 underline dark:text-sky-400">task {item.taskId}</Link> : null}
            {item.state === 'uploading' && item.kind === 'file' ? <button type="button" onClick={() => cancel(item.key)} className="text-xs underline">Cancel</button> : null}
            {item.state === 'queued' ? <button type="button" aria-label={`Remove ${item.name}`} onClick={() => remove(item.key)} className="text-xs underline">Remove</button> : null}
          </div>
          <Progress item={item} />
          {item.error ? <p role="alert" className="text-xs text-red-700 dark:text-red-400">{item.error}</p> : null}
          {item.md5 || item.sha256 ? (
            <dl className="grid grid-cols-[4rem_1fr] gap-x-2 font-mono text-xs text-zinc-600 dark:text-zinc-400">
              <dt>md5</dt><dd className="select-all break-all" data-hash="md5">{item.md5}</dd>
              <dt>sha256</dt><dd className="select-all break-all" data-hash="sha256">{item.sha256}</dd>
            </dl>
          ) : null}
        </li>
      ))}
    </ul>
  )
}
