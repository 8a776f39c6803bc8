// Submit: files and folders dropped anywhere on the window or picked, URLs and hashes pasted one
// a line, and every option of the API. Uploads show their progress, then their task and hashes.
import { useEffect, useRef, useState, type JSX } from 'react'
import { useUi } from '../state/ui'
import { SafeText } from '../components/text'
import { useCurrentConnection } from '../components/ConnectionPicker'
import { entriesOf, pickedFiles, walkEntries } from '../submit/collect'
import { DEFAULT_OPTIONS, parseTargets, type SubmitOptions } from '../submit/options'
import { OptionsForm } from '../submit/OptionsForm'
import { UploadList } from '../submit/UploadList'
import { useQueue } from '../submit/queue'
import { applyNetwork, useNetworkOffer } from '../submit/network'

const button = 'rounded border border-zinc-300 px-3 py-1 text-sm hover:bg-zinc-100 focus-visible:outline-2 focus-visible:outline-sky-500 dark:border-zinc-700 dark:hover:bg-zinc-800'

const isFileDrag = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes('Files')

/** Drops of files and folders anywhere on the window while the page is shown. */
function useWindowDrop(onFiles: (p: Promise<import('../submit/collect').PickedFile[]>) => void): boolean {
  const [over, setOver] = useState(false)
  const onFilesRef = useRef(onFiles)
  onFilesRef.current = onFiles
  useEffect(() => {
    let depth = 0 // dragenter/dragleave fire for every child element crossed
    const enter = (e: DragEvent) => { if (isFileDrag(e)) { depth++; setOver(true) } }
    const leave = (e: DragEvent) => { if (isFileDrag(e) && --depth <= 0) { depth = 0; setOver(false) } }
    const overHandler = (e: DragEvent) => { if (isFileDrag(e)) { e.preventDefault(); if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy' } }
    const drop = (e: DragEvent) => {
      if (!e.dataTransfer || !isFileDrag(e)) return
      e.preventDefault()
      depth = 0
      setOver(false)
      const { entries, files } = entriesOf(e.dataTransfer) // now: the items die with the event
      onFilesRef.current(walkEntries(entries).then((walked) => [...walked, ...files.map((file) => ({ file, path: file.name }))]))
    }
    window.addEventListener('dragenter', enter)
    window.addEventListener('dragleave', leave)
    window.addEventListener('dragover', overHandler)
    window.addEventListener('drop', drop)
    return () => {
      window.removeEventListener('dragenter', enter)
      window.removeEventListener('dragleave', leave)
      window.removeEventListener('dragover', overHandler)
      window.removeEventListener('drop', drop)
    }
  }, [])
  return over
}

export function SubmitPage(): JSX.Element {
  const connection = useUi((s) => s.connection)
  const add = useQueue((s) => s.add)
  const submit = useQueue((s) => s.submit)
  const clearFinished = useQueue((s) => s.clearFinished)
  const queued = useQueue((s) => s.items.filter((i) => i.state === 'queued').length)
  const finished = useQueue((s) => s.items.some((i) => i.state === 'done' || i.state === 'error' || i.state === 'cancelled'))
  const [targets, setTargets] = useState('')
  const [options, setOptions] = useState<SubmitOptions>(DEFAULT_OPTIONS)
  const offer = useNetworkOffer(connection).data
  const dispatcher = useCurrentConnection()?.kind === 'dispatcher'
  const [readError, setReadError] = useState<string | null>(null)
  const fileInput = useRef<HTMLInputElement>(null)
  const folderInput = useRef<HTMLInputElement>(null)

  const over = useWindowDrop((p) => {
    setReadError(null)
    p.then(add, (err: Error) => setReadError(`Cannot read the dropped items: ${err.message}`))
  })

  const { urls, hashes, invalid } = parseTargets(targets)
  const count = queued + urls.length + hashes.length
  const send = () => {
    if (count === 0) return
    // The route and decryption shown go into the options string (the server's default when none is offered).
    void submit(connection, applyNetwork(options, offer), targets, dispatcher)
    // What was neither a URL nor a hash stays, to be fixed.
    setTargets(invalid.join('\n'))
  }

  return (
    <div className="flex max-w-5xl flex-col gap-4" onKeyDown={(e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); send() } }}>
      <h1 className="text-xl font-semibold">Submit</h1>
      {dispatcher && <p data-testid="submit-to-dispatcher" className="-mt-2 text-sm text-zinc-700 dark:text-zinc-300">To a dispatcher: it gives each file or URL to one of its nodes. It keeps no samples, so hashes cannot be sent.</p>}
      {/* While files are dragged, the drop zone lights up; nothing covers the form (a drop anywhere still works). */}
      <section aria-label="Files" data-dragging={over}
        className={`flex flex-col items-start gap-2 rounded border-2 border-dashed p-4 ${over ? 'border-sky-600 bg-sky-50 dark:border-sky-400 dark:bg-sky-950' : 'border-zinc-300 dark:border-zinc-700'}`}>
        {over
          ? <p aria-live="polite" className="text-base font-semibold text-sky-900 dark:text-sky-100">Drop files or folders to queue them</p>
          : <p className="text-sm text-zinc-600 dark:text-zinc-400">Drop files or folders anywhere on this window, or pick them:</p>}
        <div className="flex gap-2">
          <button type="button" className={button} onClick={() => fileInput.current?.click()}>Choose files…</button>
          <button type="button" className={button} onClick={() => folderInput.current?.click()}>Choose a folder…</button>
        </div>
        <input ref={fileInput} type="file" multiple hidden aria-label="Files to submit" data-testid="file-input"
          onChange={(e) => { add(pickedFiles(e.target.files)); e.target.value = '' }} />
        {/* webkitdirectory is not in React's types: set as a plain attribute. */}
        <input ref={folderInput} type="file" multiple hidden aria-label="Folder to submit" {...{ webkitdirectory: '' }}
          onChange={(e) => { add(pickedFiles(e.target.files)); e.target.value = '' }} />
        {readError ? <p role="alert" className="text-sm text-red-700 dark:text-red-400">{readError}</p> : null}
      </section>
      <label className="flex flex-col gap-1 text-sm">
        <span className="font-medium">URLs and hashes <span className="font-normal text-zinc-500">one a line; md5, sha1, sha256 or sha512 of a sample the server has</span></span>
        <textarea value={targets} onChange={(e) => setTargets(e.target.value)} rows={4} spellCheck={false}
          aria-invalid={invalid.length > 0} aria-describedby={invalid.length > 0 ? 'targets-invalid' : undefined}
          className="rounded border border-zinc-300 bg-transparent px-2 py-1 font-mono text-xs aria-[invalid=true]:border-amber-600 dark:border-zinc-700" />
      </label>
      {invalid.length > 0 && (
        <p id="targets-invalid" role="alert" className="-mt-3 text-xs text-amber-800 dark:text-amber-300">
          Neither a URL nor a hash, left out: <SafeText value={invalid.slice(0, 5).join(', ')} />{invalid.length > 5 ? ` and ${invalid.length - 5} more` : ''}
        </p>
      )}
      <OptionsForm connection={connection} value={options} onChange={setOptions} />
      <div className="flex items-center gap-3">
        <button type="button" onClick={send} disabled={count === 0} title="Ctrl+Enter"
          className="rounded bg-sky-700 px-4 py-1.5 text-sm font-medium text-white hover:bg-sky-800 disabled:opacity-40 focus-visible:outline-2 focus-visible:outline-sky-400">
          Submit {count === 0 ? '' : [queued && `${queued} file${queued === 1 ? '' : 's'}`, urls.length && `${urls.length} URL${urls.length === 1 ? '' : 's'}`, hashes.length && `${hashes.length} hash${hashes.length === 1 ? '' : 'es'}`].filter(Boolean).join(', ')}
        </button>
        {finished ? <button type="button" className={button} onClick={clearFinished}>Clear finished</button> : null}
      </div>
      <UploadList />
    </div>
  )
}
