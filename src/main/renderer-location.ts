// Where the renderer is loaded from, and the origin it has there.
//
// Packaged (and `electron-vite preview`): from the privileged `app://aviary` scheme served by
// src/main/protocol.ts, never from file://. A file:// page has an opaque origin and its
// requests carry `Origin: null`, the same value any sandboxed iframe or downloaded HTML file
// sends from an ordinary browser; allowing `null` in the service's allowedOrigins would let any
// web page the analyst visits drive the API. `app://aviary` is an origin only this app has.
//
// Development (`electron-vite dev`): from the Vite dev server given in ELECTRON_RENDERER_URL
// (e.g. http://localhost:5173), which is then the origin; honoured only in an unpackaged app.
import { app } from 'electron'

export const APP_SCHEME = 'app'
export const APP_HOST = 'aviary'
const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`

function devServerUrl(): string | null {
  const url = process.env.ELECTRON_RENDERER_URL
  return !app.isPackaged && url ? url : null
}

/** The URL the main window loads. */
export function rendererEntryUrl(): string {
  return devServerUrl() ?? `${APP_ORIGIN}/index.html`
}

/** The renderer's origin, as Chromium serialises it in the Origin header. */
export function rendererOrigin(): string {
  return originOf(rendererEntryUrl()) ?? APP_ORIGIN
}

/**
 * `scheme://host[:port]` of a URL, or null. Computed by hand because WHATWG URL gives `null`
 * as the origin of non-special schemes such as app:, while Chromium treats registered
 * standard schemes as tuple origins.
 */
export function originOf(url: string): string | null {
  try {
    const u = new URL(url)
    return u.host ? `${u.protocol}//${u.host}` : null
  } catch {
    return null
  }
}

/** True for URLs of the app's own pages. */
export function isAppUrl(url: string): boolean {
  return originOf(url) === rendererOrigin()
}
