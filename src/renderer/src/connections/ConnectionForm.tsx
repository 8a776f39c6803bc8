// Adds a connection, or edits one (name, address, token). The server checks that the address
// answers; its 400 message is shown under the field it names.
import { useId, useState, type FormEvent, type JSX } from 'react'
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { SafeText } from '../components/text'
import { CONNECTIONS_KEY, createConnection, fieldOfError, updateConnection, type ConnectionInput, type FormField, type SavedConnection } from './api'

const input = 'w-full rounded border border-zinc-300 bg-transparent px-2 py-1 text-sm aria-[invalid=true]:border-red-500 dark:border-zinc-700'

function Field({ label, name, error, children }: { label: string; name: FormField; error: string | null; children: (p: { id: string; 'aria-invalid': boolean; 'aria-describedby'?: string }) => JSX.Element }): JSX.Element {
  const id = useId()
  const errId = `${id}-err`
  return (
    <div className="flex min-w-0 flex-1 flex-col gap-0.5" data-field={name}>
      <label htmlFor={id} className="text-xs font-medium text-zinc-600 dark:text-zinc-300">{label}</label>
      {children({ id, 'aria-invalid': error !== null, ...(error ? { 'aria-describedby': errId } : {}) })}
      {error && <span id={errId} role="alert" className="text-xs text-red-700 dark:text-red-400"><SafeText value={error} /></span>}
    </div>
  )
}

export function ConnectionForm({ editing, onDone }: { editing?: SavedConnection; onDone?(c: SavedConnection): void }): JSX.Element {
  const qc = useQueryClient()
  const [name, setName] = useState(editing?.name ?? '')
  const [url, setUrl] = useState(editing?.url ?? '')
  const [token, setToken] = useState('')
  const [clearToken, setClearToken] = useState(false)
  const save = useMutation({
    mutationFn: (body: ConnectionInput) => (editing ? updateConnection(editing.id, body) : createConnection(body)),
    onSuccess: (r) => {
      void qc.invalidateQueries({ queryKey: CONNECTIONS_KEY })
      if (!editing) { setName(''); setUrl(''); setToken('') }
      onDone?.(r.connection)
    }
  })
  const field = fieldOfError(save.error)
  const errorFor = (f: FormField): string | null => (field === f && save.error ? save.error.message : null)

  const submit = (e: FormEvent): void => {
    e.preventDefault()
    const body: ConnectionInput = { name: name.trim(), url: url.trim() }
    // An empty token field keeps the saved token when editing; "remove" sends null.
    if (token !== '') body.token = token
    else if (editing && clearToken) body.token = null
    save.mutate(body)
  }

  return (
    <form onSubmit={submit} aria-label={editing ? `Edit connection ${editing.name}` : 'Add a connection'} className="flex flex-col gap-2" noValidate>
      <div className="flex flex-wrap items-start gap-2">
        <Field label="Name" name="name" error={errorFor('name')}>
          {(p) => <input {...p} className={input} value={name} onChange={(e) => setName(e.target.value)} placeholder="lab server" autoComplete="off" />}
        </Field>
        <Field label="URL" name="url" error={errorFor('url')}>
          {(p) => <input {...p} className={input} value={url} onChange={(e) => setUrl(e.target.value)} placeholder="http://10.0.0.5:8090" inputMode="url" autoComplete="off" />}
        </Field>
        <Field label={editing?.has_token ? 'Token (empty: keep the saved one)' : 'Token (optional)'} name="token" error={errorFor('token')}>
          {(p) => <input {...p} className={input} type="password" value={token} onChange={(e) => setToken(e.target.value)} autoComplete="off" />}
        </Field>
      </div>
      <div className="flex flex-wrap items-center gap-3">
        <button type="submit" disabled={save.isPending}
          className="rounded bg-sky-700 px-3 py-1 text-sm font-medium text-white hover:bg-sky-800 disabled:opacity-50">
          {save.isPending ? 'Checking the server…' : editing ? 'Save' : 'Add'}
        </button>
        {editing && onDone && <button type="button" onClick={() => onDone(editing)} className="rounded px-2 py-1 text-sm hover:bg-zinc-100 dark:hover:bg-zinc-800">Cancel</button>}
        {editing?.has_token && (
          <label className="flex items-center gap-1 text-sm">
            <input type="checkbox" checked={clearToken} onChange={(e) => setClearToken(e.target.checked)} /> remove the saved token
          </label>
        )}
        {save.isError && field === null && (
          <span role="alert" className="text-sm text-red-700 dark:text-red-400"><SafeText value={save.error.message} /></span>
        )}
      </div>
    </form>
  )
}
