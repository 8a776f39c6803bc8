// @vitest-environment jsdom
// The sign-in form against a real service started with an API token: it appears when the page is
// refused, says so when the token is wrong, lets the refused query through once signed in, and
// "Sign out" ends the session on the service.
import type { JSX } from 'react'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider, useQuery } from '@tanstack/react-query'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { fetchJson, setLocalApiBase } from '../api/http'
import { SignInOverlay, SignOutButton } from './SignIn'
import { TaskList } from '../../../shared/api/responses'

const TOKEN = 'ui-sign-in-token'
let h: Harness
const realFetch = globalThis.fetch
/** The browser's cookie jar for the one origin under test: Node's fetch keeps no cookies. */
const jar = new Map<string, string>()

beforeAll(async () => {
  h = await startHarness({ apiToken: TOKEN })
  await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com/' }), { authorization: `Bearer ${TOKEN}` })
  setLocalApiBase(h.url)
  globalThis.fetch = async (input, init = {}) => {
    const headers = new Headers(init.headers)
    if (jar.size) headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '))
    const res = await realFetch(input, { ...init, headers })
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';')
      const name = pair.slice(0, pair.indexOf('='))
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) jar.delete(name)
      else jar.set(name, pair.slice(pair.indexOf('=') + 1))
    }
    return res
  }
})
afterAll(async () => {
  cleanup()
  globalThis.fetch = realFetch
  await h.stop()
})

function TaskCount(): JSX.Element {
  const q = useQuery({
    queryKey: ['c', null, 'tasks'],
    queryFn: ({ signal }) => fetchJson(null, '/tasks/list', TaskList, {}, signal),
    retry: false
  })
  return <p data-testid="count">{q.data ? `${q.data.tasks.length} task(s)` : q.error ? `error: ${q.error.message}` : 'loading'}</p>
}

describe('signing in to a service with an API token', () => {
  it('shows the form on 401, refuses a wrong token, retries the queries once signed in, and signs out', async () => {
    const user = userEvent.setup()
    const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
    render(<QueryClientProvider client={qc}><SignInOverlay /><SignOutButton /><TaskCount /></QueryClientProvider>)

    const dialog = await screen.findByRole('dialog', { name: 'Sign in' })
    await waitFor(() => expect(screen.getByTestId('count').textContent).toMatch(/^error: .*Bearer/))
    expect(screen.queryByRole('button', { name: 'Sign out' })).toBeNull()

    const field = screen.getByLabelText('API token')
    expect(field.getAttribute('type')).toBe('password')
    await user.type(field, 'not-the-token')
    await user.click(screen.getByRole('button', { name: 'Sign in' }))
    expect((await screen.findByRole('alert')).textContent).toBe('token: not the API token of this service')
    expect(jar.size).toBe(0)

    await user.clear(field)
    await user.type(field, TOKEN)
    await user.click(screen.getByRole('button', { name: 'Sign in' }))
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull())
    expect(dialog.isConnected).toBe(false)
    // The query that was refused ran again, with the cookie, and the token itself is kept nowhere.
    await waitFor(() => expect(screen.getByTestId('count').textContent).toBe('1 task(s)'))
    const session = jar.get('aviary_session')!
    expect(session).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(session).not.toContain(TOKEN)
    expect(JSON.stringify(localStorage)).not.toContain(TOKEN)

    await user.click(screen.getByRole('button', { name: 'Sign out' }))
    expect(await screen.findByRole('dialog', { name: 'Sign in' })).toBeTruthy()
    expect(jar.has('aviary_session')).toBe(false)
    expect(screen.queryByRole('button', { name: 'Sign out' })).toBeNull()
    // The service ended the session: the old cookie no longer opens anything.
    expect((await realFetch(`${h.url}/tasks/list`, { headers: { cookie: `aviary_session=${session}` } })).status).toBe(401)
  })
})
