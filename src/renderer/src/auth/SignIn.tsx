// The sign-in form shown over the page when the local service answers 401, and the "Sign out"
// button of the Layout. After signing in, every query runs again (they failed with 401).
import { useEffect, useState, type FormEvent, type JSX } from 'react'
import { useQueryClient } from '@tanstack/react-query'
import { refreshSession, signIn, signOut, useAuth, watchUnauthorized } from './session'

export function SignInOverlay(): JSX.Element | null {
  const prompt = useAuth((s) => s.prompt)
  const qc = useQueryClient()
  const [token, setToken] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  useEffect(() => {
    watchUnauthorized()
    // After a reload: is this browser still signed in (the cookie is HttpOnly, the page cannot tell)?
    refreshSession().catch(() => undefined)
  }, [])

  if (!prompt) return null

  const submit = async (e: FormEvent): Promise<void> => {
    // No native submission: the page's CSP has form-action 'none', and the token stays out of URLs.
    e.preventDefault()
    if (!token) { setError('Enter the API token'); return }
    setBusy(true)
    setError(null)
    try {
      await signIn(token)
      setToken('')
      await qc.invalidateQueries()
    } catch (err) {
      setError((err as Error).message)
    } finally {
      setBusy(false)
    }
  }

  return (
    <div className="fixed inset-0 z-50 flex items-center justify-center bg-zinc-900/60">
      <form role="dialog" aria-modal="true" aria-labelledby="sign-in-title" onSubmit={(e) => void submit(e)}
        className="flex w-80 flex-col gap-3 rounded-lg bg-white p-5 shadow-xl dark:bg-zinc-900">
        <h2 id="sign-in-title" className="text-lg font-semibold">Sign in</h2>
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          This Aviary service requires its API token (<code>--api-token</code> or <code>AVIARY_API_TOKEN</code>).
        </p>
        <label className="flex flex-col gap-1 text-sm">
          API token
          <input type="password" autoComplete="current-password" autoFocus value={token} onChange={(e) => setToken(e.target.value)}
            className="rounded border border-zinc-300 bg-transparent px-2 py-1 dark:border-zinc-700" />
        </label>
        {error && <p role="alert" className="text-sm text-red-600 dark:text-red-400">{error}</p>}
        <button type="submit" disabled={busy} className="rounded bg-sky-700 px-3 py-1 font-medium text-white hover:bg-sky-800 disabled:opacity-50">
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </div>
  )
}

/** Shown only while this browser holds a session. */
export function SignOutButton(): JSX.Element | null {
  const signedIn = useAuth((s) => s.signedIn)
  const qc = useQueryClient()
  if (!signedIn) return null
  const out = async (): Promise<void> => {
    await signOut().catch(() => undefined)
    // What the pages show came with the session: it goes with it.
    qc.removeQueries()
  }
  return (
    <button type="button" onClick={() => void out()} className="rounded border border-zinc-300 px-2 py-1 text-left hover:bg-zinc-100 dark:border-zinc-700 dark:hover:bg-zinc-800">
      Sign out
    </button>
  )
}
