// The page's client of an analysis service: the shared one (src/shared/api/client.ts), whose paths
// are the routes' and whose answers are typed with the routes' response schemas, checked (only what
// the page reads, so a Cuckoo server's answers pass) and capped, which matters here: a saved
// connection is a remote server, maybe a hostile one. Over the page's transport: the local
// service's address, or a connection's proxy; the session cookie instead of a token; a 401 tells
// the sign-in listeners (http.ts).
import { AnalysisClient } from '../../../shared/api/client'
import { apiBase, pageFetch, type ConnectionId } from './http'

export async function clientOf(connection: ConnectionId): Promise<AnalysisClient> {
  return new AnalysisClient(await apiBase(connection), { fetch: pageFetch(connection) })
}
