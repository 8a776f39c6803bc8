// Offline: open an analysis archive (the `all` archive of Aviary or any Cuckoo-compatible server:
// tar, tar.gz, tar.bz2, or a zip) or an analysis folder, by drag and drop or a picker, and browse
// it with the same report views as the Task page. Nothing leaves the page: no server is called.
import { useCallback, useEffect, useRef, useState, type DragEvent, type JSX } from 'react'
import { SafeText } from '../components/text'
import { counted, formatBytes } from '../format'
import { ReportViews } from '../report/ReportViews'
import { reportTitle } from '../report/SummaryView'
import { MAX_ARCHIVE_BYTES, readArchive } from '../offline/archive'
import { fromDataTransfer, fromFileList, openAnalysis, type OfflineAnalysis } from '../offline/analysis'
import { RecordingPlayer, type RecordingSource } from '../console/RecordingPlayer'
import { isRecordingName, RECORDING_FOLDER } from '../../../shared/console-recording'

/** The console sessions in an analysis folder (console/NNNN.vncrec), played from the archive. */
function offlineRecordings(files: Map<string, Blob>): RecordingSource[] {
  return [...files.entries()].filter(([p]) => p.startsWith(`${RECORDING_FOLDER}/`) && isRecordingName(p.slice(RECORDING_FOLDER.length + 1)))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([p, blob]) => ({ name: p.slice(RECORDING_FOLDER.length + 1), bytes: blob.size, load: () => blob.arrayBuffer() }))
}

type State =
  | { kind: 'idle' }
  | { kind: 'reading'; what: string; phase: string; bytes: number }
  | { kind: 'open'; name: string; analysis: OfflineAnalysis; reportUrl: string | null }
  | { kind: 'error'; message: string }

export function OfflinePage(): JSX.Element {
  const [state, setState] = useState<State>({ kind: 'idle' })
  const [over, setOver] = useState(false)
  const current = useRef<OfflineAnalysis | null>(null)
  const archiveInput = useRef<HTMLInputElement>(null)
  const folderInput = useRef<HTMLInputElement>(null)

  const show = useCallback(async (name: string, load: () => Promise<{ name: string; blob: Blob }[]>) => {
    setState({ kind: 'reading', what: name, phase: 'reading', bytes: 0 })
    try {
      const analysis = await openAnalysis(await load())
      current.current?.close()
      current.current = analysis
      const report = analysis.files.get('reports/report.json')
      setState({ kind: 'open', name, analysis, reportUrl: report ? URL.createObjectURL(report) : null })
    } catch (err) {
      setState({ kind: 'error', message: err instanceof Error ? err.message : String(err) })
    }
  }, [])

  const openArchive = useCallback((file: File) => {
    void show(file.name, () => readArchive(file, (phase, bytes) => setState({ kind: 'reading', what: file.name, phase, bytes })))
  }, [show])

  useEffect(() => () => current.current?.close(), [])
  useEffect(() => {
    // webkitdirectory is not in React's attribute types; set it on the element.
    folderInput.current?.setAttribute('webkitdirectory', '')
  }, [])
  useEffect(() => {
    if (state.kind !== 'open' || state.reportUrl === null) return undefined
    const u = state.reportUrl
    return () => URL.revokeObjectURL(u)
  }, [state])

  const onDrop = (e: DragEvent) => {
    e.preventDefault()
    setOver(false)
    const items = e.dataTransfer.items
    void fromDataTransfer(items).then(({ files, single }) => {
      if (files.length > 0) void show(files[0]?.name.split('/')[0] ?? 'folder', () => Promise.resolve(files))
      else if (single) openArchive(single)
    })
  }

  return (
    <div>
      <h1 className="mb-3 text-xl font-semibold">Offline</h1>
      <div onDragOver={(e) => { e.preventDefault(); setOver(true) }} onDragLeave={() => setOver(false)} onDrop={onDrop}
        data-testid="offline-drop"
        className={`mb-4 rounded border-2 border-dashed p-4 text-sm ${over ? 'border-sky-500 bg-sky-50 dark:bg-sky-950' : 'border-zinc-300 dark:border-zinc-700'}`}>
        <p className="mb-2">Drop an analysis archive (tar, tar.gz, tar.bz2 or zip: the <code>all</code> archive of Aviary or Cuckoo) or an analysis folder here, or pick one. It is read in this page only; nothing is sent anywhere.</p>
        <div className="flex flex-wrap gap-3">
          <button type="button" onClick={() => archiveInput.current?.click()} className="rounded bg-sky-700 px-3 py-1 text-white hover:bg-sky-800">Open archive…</button>
          <button type="button" onClick={() => folderInput.current?.click()} className="rounded border border-zinc-300 px-3 py-1 dark:border-zinc-700">Open folder…</button>
          <input ref={archiveInput} type="file" aria-label="Analysis archive" className="sr-only" tabIndex={-1}
            accept=".tar,.gz,.tgz,.bz2,.tbz2,.zip,application/x-tar,application/gzip,application/x-bzip2,application/zip"
            onChange={(e) => { const f = e.target.files?.[0]; if (f) openArchive(f); e.target.value = '' }} />
          <input ref={folderInput} type="file" multiple aria-label="Analysis folder" className="sr-only" tabIndex={-1}
            onChange={(e) => { const list = e.target.files; if (list && list.length > 0) { const files = fromFileList(list); void show(list[0]?.webkitRelativePath.split('/')[0] || 'folder', () => Promise.resolve(files)) } e.target.value = '' }} />
        </div>
        <p className="mt-2 text-xs text-zinc-500">Archives up to {formatBytes(MAX_ARCHIVE_BYTES)} are unpacked in memory (in a background worker; a bzip2 archive of several hundred MB takes a minute). Bigger analyses: unpack them and open the folder, whose files are read only when shown.</p>
      </div>
      {state.kind === 'reading' && <p role="status" className="text-sm">Reading <SafeText value={state.what} />: {state.phase}{state.bytes > 0 ? ` (${formatBytes(state.bytes)})` : ''}…</p>}
      {state.kind === 'error' && <p role="alert" className="text-sm text-red-700 dark:text-red-400"><SafeText value={state.message} /></p>}
      {state.kind === 'open' && (
        <div>
          <p className="mb-3 text-sm text-zinc-500">
            <SafeText value={state.name} />{state.analysis.root && <> · folder <SafeText value={state.analysis.root} /></>} · {counted(state.analysis.files.size, 'file')}
            {state.reportUrl === null && ' · no reports/report.json: only the files are shown'}
            {' · '}<span className="sr-only">Report of </span><SafeText value={reportTitle(state.analysis.report)} className="font-medium text-zinc-800 dark:text-zinc-200" />
          </p>
          <ReportViews report={state.analysis.report} sources={state.analysis.sources} rawDownload={state.reportUrl}
            extra={offlineRecordings(state.analysis.files).length > 0 ? [{ id: 'console', label: 'Console', render: () => <RecordingPlayer recordings={offlineRecordings(state.analysis.files)} /> }] : []} />
        </div>
      )}
    </div>
  )
}
