// The report views' sources for a task of a connection: the API's own URLs (through the local
// proxy for a remote connection), so images and downloads come straight from the service.
import type { ReportSources } from '../report/model'

export function apiSources(base: string, id: number): ReportSources {
  const enc = encodeURIComponent
  return {
    // /tasks/screenshots/<id>/<NNNN> and <NNNN>_small (Cuckoo's thumbnail name).
    screenshot: (name, small) => {
      const m = /^(\d+)\./.exec(name)
      return m ? `${base}/tasks/screenshots/${id}/${m[1]}${small ? '_small' : ''}` : null
    },
    // The machine's full dump is not served by the API; process dumps are, by name without .dmp.
    memoryDump: (name) => (name === 'memory.dmp' ? null : `${base}/memory/get/${id}/${enc(name.replace(/\.dmp$/, ''))}`),
    pcap: () => `${base}/pcap/get/${id}`,
    // Aviary's: the proxy's flows of a task that ran with mitm=1 (404 otherwise, and on Cuckoo).
    flows: () => `${base}/aviary/tasks/${id}/flows`,
    // Aviary's /aviary/tasks/<id>/dropped/<folder>/<name>, by the entry's relpath (Aviary's reports
    // have one; a Cuckoo report has none, and Cuckoo serves dropped files only as the archive).
    droppedFile: (d) => {
      const m = typeof d.relpath === 'string' ? /^(files|package_files)\/([^/\\]{1,255})$/.exec(d.relpath) : null
      return m && m[2] !== '.' && m[2] !== '..' ? `${base}/aviary/tasks/${id}/dropped/${m[1]}/${enc(m[2] as string)}` : null
    },
    droppedArchive: () => `${base}/tasks/report/${id}/dropped`
  }
}
