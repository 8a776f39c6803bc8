// Signing the page in to a local service started with an API token. The page never keeps the
// token: POST /aviary/session trades it for an HttpOnly cookie, which the browser then sends with
// every call, event stream, image and download to this origin (none of which could carry an
// Authorization header set by the page). The service keeps the session in memory; a restart or a
// sign-out ends it, and the next 401 brings the form back.
import { create } from 'zustand'
import { HttpError, localApiBase, onUnauthorized, type ConnectionId } from '../api/http'
import { AnswerShape, decodeAnswer } from '../../../shared/api/client'
import { SessionState } from '../../../shared/api/ui-schemas'

interface AuthState {
  /** The sign-in form is shown. */
  prompt: boolean
  /** This browser holds a valid session cookie (so "Sign out" means something). */
  signedIn: boolean
  /** Bumped at each sign-in: what was refused before (the event stream) starts again. */
  epoch: number
}

export const useAuth = create<AuthState>()(() => ({ prompt: false, signedIn: false, epoch: 0 }))

const sessionUrl = async (): Promise<string> => `${await localApiBase()}/aviary/session`

async function failure(res: Response): Promise<HttpError> {
  const body = (await res.json().catch(() => ({}))) as { message?: unknown }
  return new HttpError(res.status, typeof body.message === 'string' ? body.message : `HTTP ${res.status}`)
}

/** Asks the local service whether a token is needed and whether this browser is signed in. */
export async function refreshSession(): Promise<SessionState> {
  const res = await fetch(await sessionUrl(), { headers: { Accept: 'application/json' } })
  if (!res.ok) throw await failure(res)
  // Not fetchJson: its 401 listeners call this very function.
  const state = decodeAnswer('GET /aviary/session', res.status, await res.text(), new AnswerShape(SessionState), Infinity)
  useAuth.setState({ signedIn: state.signed_in, ...(state.token_required && !state.signed_in ? { prompt: true } : {}) })
  return state
}

/** Trades the token for a session cookie; a wrong token throws HttpError (401) with the server's words. */
export async function signIn(token: string): Promise<void> {
  const res = await fetch(await sessionUrl(), {
    method: 'POST', body: JSON.stringify({ token }), headers: { 'Content-Type': 'application/json', Accept: 'application/json' }
  })
  if (!res.ok) throw await failure(res)
  useAuth.setState((s) => ({ prompt: false, signedIn: true, epoch: s.epoch + 1 }))
}

/** Ends the session on the service and in the browser; the form comes back if a token is required. */
export async function signOut(): Promise<void> {
  const res = await fetch(await sessionUrl(), { method: 'DELETE' })
  if (!res.ok) throw await failure(res)
  useAuth.setState({ signedIn: false })
  await refreshSession()
}

/**
 * A 401 from the local service means this page must sign in. Through a remote connection's proxy
 * it may instead be the remote refusing its saved token (the Connections page says so), so the
 * local service is asked first.
 */
function unauthorized(connection: ConnectionId): void {
  if (connection === null) useAuth.setState({ prompt: true })
  else void refreshSession().catch(() => undefined)
}

let installed: (() => void) | null = null
/** Listens for 401 answers (idempotent; the sign-in overlay installs it when it mounts). */
export function watchUnauthorized(): void {
  installed ??= onUnauthorized(unauthorized)
}
