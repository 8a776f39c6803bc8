// The guest's screen with keyboard and mouse: noVNC's RFB client over the service's console
// websocket (docs/ui.md, "The live console"). Keyed by task or by machine, so the Live tab and
// prepare mode show the same component. The page never reaches the hypervisor: the websocket goes
// to the service, which decides the role (the subprotocol it answers: control, or view-only when
// another client has control) and drops a view-only client's input itself.
import { useEffect, useRef, useState, type JSX } from 'react'
import RFB from '@novnc/novnc'
import { CONSOLE_PROTOCOLS } from '../../../shared/api/console'

export type ConsoleSource = { kind: 'task'; id: number } | { kind: 'machine'; name: string }

export type ConsolePhase =
  | { phase: 'connecting' }
  | { phase: 'connected'; role: 'interactive' | 'view' }
  | { phase: 'closed'; reason: string }

/** The websocket URL of a console on the service at `base` (http://host:port). */
export function consoleUrl(base: string, source: ConsoleSource, view: boolean): string {
  const path = source.kind === 'task' ? `/aviary/tasks/${source.id}/console/ws` : `/aviary/machines/${encodeURIComponent(source.name)}/console/ws`
  const u = new URL(path, base.endsWith('/') ? base : `${base}/`)
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:'
  if (view) u.searchParams.set('view', '1')
  return u.toString()
}

/** What the service's close codes mean (src/core/console/console-session.ts). */
function closeReason(e: CloseEvent): string {
  if (e.reason) return e.reason
  if (e.code === 1009) return 'the client sent a message larger than the console accepts'
  if (e.code === 1006) return 'the connection was refused or lost (is the task still running?)'
  return `the connection closed (${e.code})`
}

export function ConsoleScreen({ base, source, view = false, attempt = 0, onPhase, className }: {
  /** The local service's address. */
  base: string
  source: ConsoleSource
  /** Join view-only even when no one has control. */
  view?: boolean
  /** Bumped to reconnect. */
  attempt?: number
  onPhase?: (p: ConsolePhase) => void
  className?: string
}): JSX.Element {
  const target = useRef<HTMLDivElement>(null)
  const phaseRef = useRef(onPhase)
  phaseRef.current = onPhase
  const [role, setRole] = useState<'interactive' | 'view' | null>(null)
  // Closed: the last frame stays on the canvas (the recording ends on it too).
  const [closed, setClosed] = useState<string | null>(null)
  const key = source.kind === 'task' ? `t${source.id}` : `m${source.name}`

  useEffect(() => {
    const el = target.current
    if (!el) return
    const say = (p: ConsolePhase) => phaseRef.current?.(p)
    say({ phase: 'connecting' })
    const ws = new WebSocket(consoleUrl(base, source, view), [CONSOLE_PROTOCOLS.interactive, CONSOLE_PROTOCOLS.view])
    let why: string | null = null
    ws.addEventListener('close', (e) => {
      // noVNC takes its canvas away when the connection closes (this listener runs just before
      // it does): a copy keeps the last frame on screen, the one the recording ends on.
      const live = el.querySelector('canvas')
      if (live && live.width > 0) {
        const copy = document.createElement('canvas')
        copy.width = live.width
        copy.height = live.height
        copy.getContext('2d')?.drawImage(live, 0, 0)
        copy.dataset.lastFrame = 'true'
        copy.className = 'm-auto block h-full max-h-full w-auto max-w-full object-contain opacity-80'
        setTimeout(() => el.replaceChildren(copy), 0)
      }
      why = closeReason(e)
      setClosed(why)
      say({ phase: 'closed', reason: why })
    })
    const rfb = new RFB(el, ws, { shared: true })
    // Fit the guest's screen to the box (the box fills the window in the Live tab's full view).
    rfb.scaleViewport = true
    rfb.focusOnClick = true
    rfb.background = 'rgb(24,24,27)'
    rfb.addEventListener('connect', () => {
      const r = ws.protocol === CONSOLE_PROTOCOLS.view ? 'view' : 'interactive'
      // The service drops a view-only client's input anyway; noVNC's view-only also stops sending it.
      rfb.viewOnly = r === 'view'
      setRole(r)
      say({ phase: 'connected', role: r })
      if (r === 'interactive') rfb.focus()
    })
    rfb.addEventListener('disconnect', () => {
      if (why === null) say({ phase: 'closed', reason: 'the console closed' })
    })
    return () => {
      rfb.disconnect()
      setRole(null)
      setClosed(null)
    }
    // `source` is keyed by `key`: a new object for the same console does not reconnect.
  }, [base, key, view, attempt])

  // role=application: a remote screen takes the keys itself (an aria-label on a bare div is not allowed).
  return (
    <div ref={target} data-testid="console-screen" data-role={role ?? ''} data-closed={closed ?? undefined} role="application" aria-label="The guest's screen"
      className={`relative overflow-hidden bg-zinc-900 ${className ?? ''}`} />
  )
}
