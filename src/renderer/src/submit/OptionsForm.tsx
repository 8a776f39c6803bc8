// Every submission option of the API. Empty fields are not sent: the server's defaults apply.
import { useEffect, useId, type JSX, type ReactNode } from 'react'
import { useQuery } from '@tanstack/react-query'
import type { Machine } from '../../../shared/api/schemas'
import type { ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { keys } from '../api/live'
import type { SubmitOptions } from './options'
import { NETWORK_KEYS, networkChoice, replacedKeys, useNetworkOffer, type NetworkOffer } from './network'
import { useCurrentConnection } from '../components/ConnectionPicker'
import { DistNodes, entries, getEither } from '../connections/dist-api'
import { useIsAviary } from '../api/server-kind'
import { listMachines, loadDoctor, type Machine as ListedMachine } from '../machines/api'
import { blockedRoutes, memoryDumpBlocked } from './capabilities'

// Cuckoo 2's Windows analysis packages, as suggestions (any name the server knows works).
const PACKAGES = ['exe', 'dll', 'msi', 'doc', 'xls', 'ppt', 'pdf', 'js', 'jar', 'vbs', 'ps1', 'hta', 'wsf', 'zip', 'html', 'ie', 'ff', 'generic', 'python']
const input = 'w-full rounded border border-zinc-300 bg-transparent px-2 py-1 text-sm dark:border-zinc-700'

function Field({ label, hint, children }: { label: string; hint?: string; children: ReactNode }): JSX.Element {
  return (
    <label className="flex flex-col gap-0.5 text-sm">
      <span className="font-medium">{label}{hint ? <span className="ml-1 font-normal text-zinc-500">{hint}</span> : null}</span>
      {children}
    </label>
  )
}

export function OptionsForm({ connection, value, onChange }: { connection: ConnectionId; value: SubmitOptions; onChange(v: SubmitOptions): void }): JSX.Element {
  // A dispatcher has no /machines/list: its nodes' machines are the ones a task can ask for.
  const dispatcher = useCurrentConnection()?.kind === 'dispatcher'
  // An Aviary lists each machine with its driver's capabilities (what memory=1 needs).
  const aviary = useIsAviary(connection) === true
  const machines = useQuery({
    queryKey: [...keys.machines(connection), dispatcher ? 'dist' : aviary ? 'aviary' : 'list'],
    queryFn: ({ signal }): Promise<(Pick<Machine, 'name' | 'platform'> & Partial<ListedMachine>)[]> => (dispatcher
      ? getEither(connection, '/node', DistNodes, signal)
        .then((r) => entries(r.nodes).flatMap(([, n]) => (Array.isArray(n?.machines) ? n.machines : [])).map((m) => ({ name: m.name, platform: m.platform }) as Pick<Machine, 'name' | 'platform'>))
      : aviary ? listMachines(connection, signal)
        : clientOf(connection).then((client) => client.machines({ signal })).then((r) => r.machines))
  })
  const memoryBlocked = dispatcher || !aviary ? null : memoryDumpBlocked(machines.data as ListedMachine[] | undefined, value.machine)
  // A memory dump asked for before the machine was picked is not sent where it cannot be made.
  useEffect(() => {
    if (memoryBlocked !== null && value.memory) onChange({ ...value, memory: false })
  }, [memoryBlocked, value, onChange])
  const set = <K extends keyof SubmitOptions>(k: K, v: SubmitOptions[K]) => onChange({ ...value, [k]: v })
  const text = (k: 'package' | 'options' | 'platform' | 'tags' | 'custom' | 'owner') => ({
    value: value[k], onChange: (e: { target: { value: string } }) => set(k, e.target.value), className: input
  })
  // The fleet's own platforms (a suggestion of "windows" on a Linux-only fleet would make tasks no machine can run).
  const platforms = [...new Set((machines.data ?? []).map((m) => m.platform).filter((p) => typeof p === 'string' && p !== ''))].sort()
  const offer = useNetworkOffer(connection).data ?? null
  const replaced = offer ? replacedKeys(value.options, NETWORK_KEYS) : []

  return (
    <fieldset className="grid grid-cols-[repeat(auto-fill,minmax(13rem,1fr))] gap-3 rounded border border-zinc-200 p-3 dark:border-zinc-800">
      <legend className="px-1 text-sm font-semibold">Options</legend>
      <Field label="Package" hint="(auto when empty)">
        <input list="aviary-packages" {...text('package')} />
        <datalist id="aviary-packages">{PACKAGES.map((p) => <option key={p} value={p} />)}</datalist>
      </Field>
      <Field label="Timeout" hint="seconds, 0 = default">
        <input type="number" min={0} max={86400} value={value.timeout} onChange={(e) => set('timeout', e.target.value)} className={input} />
      </Field>
      <Field label="Priority">
        <select value={value.priority} onChange={(e) => set('priority', e.target.value)} className={input}>
          <option value="1">1 — low</option><option value="2">2 — medium</option><option value="3">3 — high</option>
        </select>
      </Field>
      <Field label="Machine" hint={machines.error ? `(${machines.error.message})` : undefined}>
        <select value={value.machine} onChange={(e) => set('machine', e.target.value)} className={input}>
          <option value="">any available</option>
          {(machines.data ?? []).map((m) => <option key={m.name} value={m.name}>{m.name} ({m.platform})</option>)}
        </select>
      </Field>
      <Field label="Platform">
        <input list="aviary-platforms" {...text('platform')} placeholder={platforms.length > 0 ? platforms.join(' or ') : 'any'} />
        <datalist id="aviary-platforms">{platforms.map((p) => <option key={p} value={p} />)}</datalist>
      </Field>
      {offer ? <NetworkFields offer={offer} value={value} onChange={onChange} local={connection === null} /> : null}
      <Field label="Tags" hint="comma-separated"><input {...text('tags')} /></Field>
      <Field label="Package options" hint="key=value,…">
        <input {...text('options')} />
        {replaced.length > 0 ? (
          <span className="text-xs text-amber-700 dark:text-amber-400">{replaced.map((k) => `${k}=`).join(' and ')} here {replaced.length === 1 ? 'is' : 'are'} replaced by the network fields</span>
        ) : null}
      </Field>
      <Field label="Custom"><input {...text('custom')} /></Field>
      <Field label="Owner"><input {...text('owner')} /></Field>
      <Field label="Guest clock" hint="(host time when empty)">
        <input type="datetime-local" step={1} value={value.clock} onChange={(e) => set('clock', e.target.value)} className={input} />
      </Field>
      <div className="flex flex-col justify-end gap-1 text-sm">
        <label className={`flex items-center gap-2 ${memoryBlocked ? 'text-zinc-500 dark:text-zinc-400' : ''}`} title={memoryBlocked ?? undefined}>
          <input type="checkbox" checked={value.memory && memoryBlocked === null} disabled={memoryBlocked !== null}
            aria-describedby={memoryBlocked ? 'submit-memory-blocked' : undefined} onChange={(e) => set('memory', e.target.checked)} /> Full memory dump
        </label>
        {memoryBlocked && <span id="submit-memory-blocked" data-testid="memory-blocked" className="text-xs text-zinc-600 dark:text-zinc-400">{memoryBlocked}</span>}
        <label className="flex items-center gap-2"><input type="checkbox" checked={value.enforce_timeout} onChange={(e) => set('enforce_timeout', e.target.checked)} /> Enforce timeout</label>
        <label className="flex items-center gap-2" title="Keeps the machine running until the timeout or Finish now, even when the sample ends earlier, so you can act in it from the task's Live tab (option interactive=1)">
          <input type="checkbox" checked={value.interactive} onChange={(e) => set('interactive', e.target.checked)} /> Interactive (keep the machine)
        </label>
        <label className="flex items-center gap-2" title="files only: refuse a sample submitted before"><input type="checkbox" checked={value.unique} onChange={(e) => set('unique', e.target.checked)} /> Unique (skip known files)</label>
      </div>
    </fieldset>
  )
}

/**
 * The route the guest's traffic takes and whether its HTTPS is decrypted, as the connection offers
 * them (network.ts). Shown only when the server has routes to choose from.
 */
function NetworkFields({ offer, value, onChange, local }: { offer: NetworkOffer; value: SubmitOptions; onChange(v: SubmitOptions): void; local: boolean }): JSX.Element {
  const c = networkChoice(value, offer)
  const ids = useId()
  // The doctor says whether the rooter answers and each route works (the local service's only).
  const doctor = useQuery({ queryKey: ['c', null, 'doctor'], queryFn: ({ signal }) => loadDoctor(false, signal), enabled: local, staleTime: 30_000, retry: false })
  const blocked = blockedRoutes(offer.routes, doctor.data)
  const chosenBlocked = blocked.get(c.route.name)
  return (
    <>
      <div className="flex flex-col gap-0.5 text-sm sm:col-span-2">
        <label htmlFor={`${ids}-route`} className="font-medium">Network route</label>
        <select id={`${ids}-route`} value={c.route.name} onChange={(e) => onChange({ ...value, route: e.target.value })} className={input}
          aria-describedby={`${ids}-route-note`}>
          {offer.routes.map((r) => (
            <option key={r.name} value={r.name} disabled={blocked.has(r.name) && r.name !== c.route.name}>
              {r.name}{r.name === offer.default ? ' (default)' : ''}{blocked.has(r.name) ? ` — unavailable: ${blocked.get(r.name)}` : r.description ? ` — ${r.description}` : ''}
            </option>
          ))}
        </select>
        <span id={`${ids}-route-note`} data-testid="route-note" className={`text-xs ${chosenBlocked ? 'text-amber-800 dark:text-amber-300' : 'text-zinc-500 dark:text-zinc-400'}`}>
          {chosenBlocked ? `This route cannot be used now (${chosenBlocked}): pick another.` : c.route.description}
        </span>
      </div>
      {c.mitmOffered ? (
        <div className="flex flex-col justify-end gap-1 text-sm">
          <label className={`flex items-center gap-2 ${c.mitmBlocked ? 'text-zinc-400 dark:text-zinc-500' : ''}`}
            title={c.mitmBlocked ?? 'A proxy decrypts the guest\'s HTTPS with Aviary\'s own CA; the requests and answers go into the report'}>
            <input type="checkbox" checked={c.mitm} disabled={c.mitmBlocked !== null} title={c.mitmBlocked ?? undefined}
              onChange={(e) => onChange({ ...value, mitm: e.target.checked })} />
            Decrypt HTTPS (mitm)
          </label>
        </div>
      ) : null}
    </>
  )
}
