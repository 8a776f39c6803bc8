// Placeholder page until the real UI: shows where the API is and the service's status.
import { useEffect, useState, type JSX } from 'react'
import { resolveApiBaseUrl } from './api-base'

type State =
  | { kind: 'loading'; api: string | null }
  | { kind: 'error'; api: string | null; message: string }
  | { kind: 'ready'; api: string; status: unknown }

export function App(): JSX.Element {
  const [state, setState] = useState<State>({ kind: 'loading', api: null })

  useEffect(() => {
    const controller = new AbortController()
    let api: string | null = null
    ;(async () => {
      api = await resolveApiBaseUrl()
      setState({ kind: 'loading', api })
      const res = await fetch(`${api}/cuckoo/status`, { signal: controller.signal, headers: { Accept: 'application/json' } })
      if (!res.ok) throw new Error(`GET /cuckoo/status: HTTP ${res.status}`)
      setState({ kind: 'ready', api, status: await res.json() })
    })().catch((err: unknown) => {
      if (controller.signal.aborted) return
      setState({ kind: 'error', api, message: err instanceof Error ? err.message : String(err) })
    })
    return () => controller.abort()
  }, [])

  return (
    <main>
      <h1>Aviary</h1>
      <p>
        API base URL: <code>{state.api ?? '…'}</code>
      </p>
      {state.kind === 'loading' && <p role="status">Loading service status…</p>}
      {state.kind === 'error' && (
        <p role="alert" className="error">
          Could not read the service status: {state.message}
        </p>
      )}
      {state.kind === 'ready' && <pre>{JSON.stringify(state.status, null, 2)}</pre>}
    </main>
  )
}
