// Hardening of every web contents and of the session the window uses.
import { app, shell, type Session, type WebContents } from 'electron'
import { isAppUrl } from './renderer-location'

/** Parses an http(s) URL meant for the default browser; null for anything else. */
export function externalHttpUrl(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 8192) return null
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.toString() : null
  } catch {
    return null
  }
}

function openInBrowser(url: string): void {
  const safe = externalHttpUrl(url)
  if (safe) shell.openExternal(safe).catch((err: unknown) => console.error('openExternal failed:', err))
}

/** No new windows, no navigation away from the app, no <webview>: links open in the browser. */
export function guardAllWebContents(): void {
  app.on('web-contents-created', (_event, contents: WebContents) => {
    contents.setWindowOpenHandler(({ url }) => {
      openInBrowser(url)
      return { action: 'deny' }
    })
    const keepInApp = (event: { preventDefault(): void }, url: string): void => {
      if (isAppUrl(url)) return
      event.preventDefault()
      openInBrowser(url)
    }
    contents.on('will-navigate', (event) => keepInApp(event, event.url))
    contents.on('will-redirect', (event) => {
      if (!isAppUrl(event.url)) event.preventDefault()
    })
    contents.on('will-attach-webview', (event) => event.preventDefault())
  })
}

/**
 * The session grants no permission to anyone (camera, notifications, clipboard reads, HID, ...).
 * Note: Chromium's Local Network Access checks, not enforced by Electron 40, would route the
 * renderer's requests to 127.0.0.1 through these handlers once a later Electron enforces them.
 */
export function denyAllPermissions(session: Session): void {
  session.setPermissionRequestHandler((_contents, _permission, callback) => callback(false))
  session.setPermissionCheckHandler(() => false)
  session.setDevicePermissionHandler(() => false)
}
