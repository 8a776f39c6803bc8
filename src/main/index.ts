// Main process of the desktop app: one instance per user, the analysis service running in
// process on 127.0.0.1, and one sandboxed window. The pieces live next door: window.ts,
// protocol.ts (app://aviary), security.ts, ipc.ts (the bridge) and service.ts.
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { app, BrowserWindow, dialog, session } from 'electron'
import type { AviaryService } from '../core/service'
import { registerIpc } from './ipc'
import { registerAppScheme, serveRenderer } from './protocol'
import { rendererOrigin } from './renderer-location'
import { denyAllPermissions, guardAllWebContents } from './security'
import { startService } from './service'
import { showNotification } from './notify'
import { watchFinishedTasks } from './task-notifications'
import { createMainWindow } from './window'

const mainDir = path.dirname(fileURLToPath(import.meta.url))

if (!app.requestSingleInstanceLock()) {
  app.quit()
} else {
  run()
}

function run(): void {
  if (process.platform === 'win32') app.setAppUserModelId('org.aviary.app')
  app.enableSandbox()
  registerAppScheme()
  guardAllWebContents()

  let window: BrowserWindow | null = null
  let service: Promise<AviaryService> | null = null

  const showWindow = (): void => {
    if (!window || window.isDestroyed()) {
      window = createMainWindow(mainDir)
      return
    }
    if (window.isMinimized()) window.restore()
    window.focus()
  }

  app.on('second-instance', () => {
    if (app.isReady()) showWindow()
  })
  app.on('activate', () => {
    if (app.isReady()) showWindow()
  })
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit()
  })

  app.whenReady().then(() => {
    const ses = session.defaultSession
    serveRenderer(path.join(mainDir, '../renderer'))
    denyAllPermissions(ses)
    // The only browser origin the service accepts is the renderer's own: app://aviary when
    // packaged, the Vite dev server's origin in development (see renderer-location.ts). The
    // service answers it with CORS headers, so the renderer can read its responses.
    const origin = rendererOrigin()
    service = startService(mainDir, { allowedOrigins: [origin], onExitRequest: () => app.quit() })
    const apiBaseUrl = service.then((s) => {
      const url = s.url
      if (!url) throw new Error('the service is not listening')
      return url
    })
    apiBaseUrl.catch((err: unknown) => {
      console.error('the analysis service did not start:', err)
      dialog.showErrorBox('Aviary could not start', `The analysis service did not start: ${(err as Error).message ?? err}`)
      app.quit()
    })
    registerIpc({ apiBaseUrl: () => apiBaseUrl, showWindow })
    // A finished analysis is worth a notification even when the window is in the background.
    service.then((s) => {
      if (s.events) watchFinishedTasks(s.events, (n) => showNotification(n.title, n.body, showWindow))
    }).catch(() => undefined)
    showWindow()
  }).catch((err: unknown) => {
    console.error(err)
    app.exit(1)
  })

  // The service holds a database and a data-directory lock: it is stopped, and awaited,
  // before the process exits.
  let stopped = false
  let stopping: Promise<void> | null = null
  app.on('will-quit', (event) => {
    if (stopped || !service) return
    event.preventDefault()
    stopping ??= service
      .then((s) => s.stop(), () => undefined)
      .catch((err: unknown) => console.error('stopping the service failed:', err))
      .finally(() => {
        stopped = true
        app.quit()
      })
  })
}
