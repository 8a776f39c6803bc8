// The Machines page's calls: the fleet (/machines/list, any Cuckoo-compatible server), and for
// the local service its machine controls, live screenshot and `aviary doctor` findings.
import { useEffect, useState } from 'react'
import { apiUrl, fetchJson, HttpError, sendJson, type ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { Type, type Static } from 'typebox'
import { DoctorAnswer, MachineAnswer, Finding as SharedFinding } from '../../../shared/api/ui-schemas'
import { ControlledMachines, type ControlledMachine } from '../../../shared/api/machine-controls'
import {
  BuildAnswer, BuildsAnswer, DeleteAnswer, DiskUseAnswer, LeftoversAnswer, PrepareAnswer, PreparingAnswer, RemovedLeftoversAnswer
} from '../../../shared/api/machine-builds'

/** A machine as listed; `capabilities` and `controls` only from a server with /aviary/machines (Aviary's). */
export type Machine = BaseMachine & { capabilities?: ControlledMachine['capabilities']; controls?: ControlledMachine['controls'] }
type BaseMachine = import('../../../shared/api/schemas').Machine
export type MachineAction = 'start' | 'stop' | 'revert'

// doctor.ts's shape (GET /aviary/doctor), plus an optional `level` should the engine ever grade
// a finding as a warning rather than a failure; `routes` may be absent (an older service).
const GradedFinding = Type.Object({ ...SharedFinding.properties, level: Type.Optional(Type.Union([Type.Literal('ok'), Type.Literal('warn'), Type.Literal('fail')])) })
const DoctorReport = Type.Object({
  ...DoctorAnswer.properties,
  config: GradedFinding,
  routes: Type.Optional(Type.Array(GradedFinding)),
  machines: Type.Array(Type.Object({ name: Type.String(), driver: Type.String(), findings: Type.Array(GradedFinding) })),
  leftovers: Type.Optional(GradedFinding)
})
export type Finding = Static<typeof GradedFinding>
export type DoctorReport = Static<typeof DoctorReport>

/**
 * The fleet: Aviary's /aviary/machines (each machine with what may be done to it and why not), else
 * (a Cuckoo server, an older Aviary: 404) Cuckoo's /machines/list.
 */
export async function listMachines(c: ConnectionId, signal?: AbortSignal): Promise<Machine[]> {
  try {
    return (await fetchJson(c, '/aviary/machines', ControlledMachines, {}, signal)).machines
  } catch (err) {
    if (!(err instanceof HttpError) || (err.status !== 404 && err.status !== 405)) throw err
  }
  return (await (await clientOf(c)).machines({ signal })).machines
}

export const machineAction = (name: string, action: MachineAction): Promise<{ machine: Machine }> =>
  sendJson(null, 'POST', `/aviary/machines/${encodeURIComponent(name)}/${action}`, MachineAnswer)

export const loadDoctor = (deep: boolean, signal?: AbortSignal): Promise<DoctorReport> =>
  fetchJson(null, `/aviary/doctor${deep ? '?deep=1' : ''}`, DoctorReport, {}, signal)

export const levelOf = (f: Finding): 'ok' | 'warn' | 'fail' => f.level ?? (f.ok ? 'ok' : 'fail')

export interface Screenshot { url: string | null; error: HttpError | null; at: Date | null }

/**
 * A live screenshot of a local machine, fetched again `everyMs` after the previous one arrived
 * (so a slow hypervisor never has two requests queued), and not while the window is hidden. The
 * image is kept as a blob: URL (the CSP allows blob: images), released when replaced or unmounted.
 */
export function useLiveScreenshot(name: string, everyMs = 3000): Screenshot {
  const [shot, setShot] = useState<Screenshot>({ url: null, error: null, at: null })
  useEffect(() => {
    let current: string | null = null
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const ctrl = new AbortController()
    const tick = async (): Promise<void> => {
      if (typeof document !== 'undefined' && document.hidden) { timer = setTimeout(() => void tick(), everyMs); return }
      try {
        const res = await fetch(await apiUrl(null, `/aviary/machines/${encodeURIComponent(name)}/screenshot`), { signal: ctrl.signal })
        if (!res.ok) {
          const body = (await res.json().catch(() => ({}))) as { message?: unknown }
          if (!stopped) setShot((s) => ({ ...s, error: new HttpError(res.status, typeof body.message === 'string' ? body.message : `HTTP ${res.status}`) }))
        } else {
          const url = URL.createObjectURL(await res.blob())
          if (stopped) { URL.revokeObjectURL(url); return }
          if (current) URL.revokeObjectURL(current)
          current = url
          setShot({ url, error: null, at: new Date() })
        }
      } catch (err) {
        if (stopped) return
        setShot((s) => ({ ...s, error: err instanceof HttpError ? err : new HttpError(0, (err as Error).message) }))
      }
      if (!stopped) timer = setTimeout(() => void tick(), everyMs)
    }
    void tick()
    return () => {
      stopped = true
      ctrl.abort()
      clearTimeout(timer)
      if (current) URL.revokeObjectURL(current)
    }
  }, [name, everyMs])
  return shot
}

// Machines made and kept by Aviary (the local service only): builds, disk use, leftovers, delete,
// rebuild, prepare mode. docs/api.md, "Making and keeping machines".
export type {
  BuildAnswer, BuildEventView as BuildEvent, BuildJobView as BuildJob, DiskUseAnswer, LeftoverView as Leftover, PrepareAnswer
} from '../../../shared/api/machine-builds'

const machinePath = (name: string, what = ''): string => `/aviary/machines/${encodeURIComponent(name)}${what}`

export const startLinuxBuild = (body: { name?: string; count?: number | string }): Promise<BuildAnswer> =>
  sendJson(null, 'POST', '/aviary/machines/builds', BuildAnswer, body)
export const loadBuild = (id: number, since: number, signal?: AbortSignal): Promise<BuildAnswer> =>
  fetchJson(null, `/aviary/machines/builds/${id}?since=${since}`, BuildAnswer, {}, signal)
export const loadBuilds = (signal?: AbortSignal): Promise<BuildsAnswer> => fetchJson(null, '/aviary/machines/builds', BuildsAnswer, {}, signal)
export const loadDiskUse = (signal?: AbortSignal): Promise<DiskUseAnswer> => fetchJson(null, '/aviary/machines/disk', DiskUseAnswer, {}, signal)
export const loadLeftovers = (signal?: AbortSignal): Promise<LeftoversAnswer> => fetchJson(null, '/aviary/machines/leftovers', LeftoversAnswer, {}, signal)
export const removeLeftovers = (names: string[]): Promise<RemovedLeftoversAnswer> =>
  sendJson(null, 'POST', '/aviary/machines/leftovers/remove', RemovedLeftoversAnswer, { names })
export const deleteMachine = (name: string): Promise<DeleteAnswer> => sendJson(null, 'DELETE', machinePath(name), DeleteAnswer)
export const rebuildMachine = (name: string): Promise<BuildAnswer> => sendJson(null, 'POST', machinePath(name, '/rebuild'), BuildAnswer)
export const prepareMachine = (name: string): Promise<PrepareAnswer> => sendJson(null, 'POST', machinePath(name, '/prepare'), PrepareAnswer)
export const endPrepare = (name: string, how: 'keep' | 'discard'): Promise<{ machine: Machine }> => sendJson(null, 'POST', machinePath(name, `/${how}`), MachineAnswer)
export const loadPreparing = (signal?: AbortSignal): Promise<PreparingAnswer> => fetchJson(null, '/aviary/machines/preparing', PreparingAnswer, {}, signal)

/** Bytes in MiB or GiB, for disk use. */
export const sizeText = (b: number): string => b >= 2 ** 30 ? `${(b / 2 ** 30).toFixed(1)} GiB` : `${(b / 2 ** 20).toFixed(b < 10 * 2 ** 20 ? 1 : 0)} MiB`
