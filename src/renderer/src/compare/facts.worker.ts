// Fetches, parses and digests one report off the page's thread (see fetch-facts.ts); only the
// digest comes back.
import { fetchFacts, FetchError, type FactsReply, type FactsRequest } from './fetch-facts'

const post = (m: FactsReply) => (self as unknown as { postMessage(m: FactsReply): void }).postMessage(m)

self.onmessage = (e: MessageEvent<FactsRequest>) => {
  fetchFacts(e.data)
    .then((answer) => post({ kind: 'done', answer }))
    .catch((err: unknown) => post({ kind: 'error', status: err instanceof FetchError ? err.status : 0, message: err instanceof Error ? err.message : String(err) }))
}
