// A task's console recordings as the API lists them (GET /aviary/tasks/<id>/console/recordings),
// each with its loader; none from a server without the route (a Cuckoo server: 404).
import { useQuery } from '@tanstack/react-query'
import { apiUrl, fetchJson, HttpError, pageFetch, type ConnectionId } from '../api/http'
import { RecordingList } from '../../../shared/api/console'
import type { RecordingSource } from './RecordingPlayer'

export function useTaskRecordings(connection: ConnectionId, id: number, enabled: boolean, refetchMs: number | false = false) {
  return useQuery({
    queryKey: ['console', 'recordings', connection, id],
    enabled,
    refetchInterval: refetchMs,
    retry: false,
    queryFn: async ({ signal }): Promise<RecordingSource[]> => {
      let list: RecordingList
      try {
        list = await fetchJson(connection, `/aviary/tasks/${id}/console/recordings`, RecordingList, {}, signal)
      } catch (err) {
        if (err instanceof HttpError && err.status === 404) return []
        throw err
      }
      const recordings = Array.isArray(list.recordings) ? list.recordings : []
      return recordings.filter((r) => typeof r.name === 'string' && /^\d{4,6}\.vncrec$/.test(r.name)).map((r) => ({
        name: r.name,
        bytes: typeof r.bytes === 'number' ? r.bytes : 0,
        load: async () => {
          const res = await pageFetch(connection)(await apiUrl(connection, `/aviary/tasks/${id}/console/recordings/${r.name}`))
          if (!res.ok) throw new Error(`HTTP ${res.status}`)
          return res.arrayBuffer()
        }
      }))
    }
  })
}
