// ELECTRON STAND-IN: the part of Electron's `electron` module that src/main uses, backed by
// Debian's Chromium through Playwright, so the real main-process bundle (out/main/index.js) and
// the real preload bundle (out/preload/index.cjs) run in a test where no Electron binary can be
// had. It is not Electron, and says so wherever it differs:
//
//  - app: ready after the main bundle's first run, once Chromium has started; quit() runs
//    Electron's sequence (before-quit, the windows close, will-quit, which main may prevent, then
//    quit) and, like exit(), ends the stand-in rather than the process; getPath() answers the
//    folders the test gives.
//  - BrowserWindow is a Playwright page (one browser context plays session.defaultSession).
//    Its webPreferences.preload file is added as an init script (preload-host.ts); its
//    sandbox/contextIsolation/nodeIntegration settings are recorded, not enforced.
//  - ipcMain.handle records handlers; ipcRenderer.invoke reaches them through a binding the
//    page exposes (page.exposeBinding), whose caller's frame becomes event.senderFrame (url,
//    parent) and whose page's window gives event.sender.
//  - protocol: Debian's Chromium has no `app:` scheme (Electron registers it in its own browser
//    process). serveProtocolOverHttp() plays the renderer dev server of main's development mode
//    (ELECTRON_RENDERER_URL): a loopback HTTP server that answers every GET with the handler main
//    registered with protocol.handle(), so main's own code serves the page, from another origin.
//  - dialog, shell and Notification record what main asks; the dialogs answer what the test
//    queued (else "cancelled"); a notification's click is the test's to make.
//  - session: the permission handlers main installs are recorded, not consulted (Playwright has
//    no hook for Chromium's permission requests); app 'web-contents-created' is emitted, and the
//    window-open handler recorded; will-navigate, will-redirect and will-attach-webview are never
//    emitted (navigation is not intercepted).
//  - net.fetch reads file: URLs (as Electron's does) and hands anything else to Node's fetch.
//
// The module `electron` resolves to for the main bundle (electron.mjs, through hooks.mjs) reads
// this stand-in from globalThis, where createElectronStandin() puts it.
import { EventEmitter } from 'node:events'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { createRequire, register } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { chromium, type Browser, type BrowserContext, type Frame, type Page } from 'playwright-core'
import { preloadInitScript } from './preload-host'

/** Where electron.mjs finds the stand-in. */
export const STANDIN_KEY = Symbol.for('aviary.electron-standin')
/** The page binding ipcRenderer.invoke calls. */
const IPC_BINDING = '__electronStandinInvoke'

export interface StandinOptions {
  /** The Chromium to drive (Debian's: /usr/bin/chromium). */
  executablePath: string
  /** What app.getPath(name) answers; other names throw, as Electron's unknown names do. */
  paths: Record<string, string>
}

/** An Electron event: main may prevent its default action. */
class StandinEvent {
  defaultPrevented = false
  preventDefault(): void {
    this.defaultPrevented = true
  }
}

/** Electron's WebFrameMain, as much as ipc.ts reads of it. */
export interface SenderFrame {
  readonly url: string
  readonly parent: SenderFrame | null
}

function senderFrame(frame: Frame): SenderFrame {
  return {
    get url() { return frame.url() },
    get parent() {
      const parent = frame.parentFrame()
      return parent ? senderFrame(parent) : null
    }
  }
}

type IpcHandler = (event: { sender: unknown; senderFrame: SenderFrame }, ...args: unknown[]) => unknown

export interface Invocation {
  channel: string
  frameUrl: string
  args: unknown[]
}

export interface DialogCall {
  /** The window the dialog was given (a BrowserWindow of the stand-in), or null. */
  window: unknown
  options: Record<string, unknown>
}

interface OpenAnswer { canceled: boolean; filePaths: string[] }
interface SaveAnswer { canceled: boolean; filePath?: string }

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.ico': 'image/x-icon', '.woff2': 'font/woff2', '.wasm': 'application/wasm', '.map': 'application/json', '.txt': 'text/plain; charset=utf-8'
}

export type ElectronStandin = ReturnType<typeof createElectronStandin>

/**
 * Creates the stand-in (its Chromium starts when runMainBundle has run the bundle's first pass).
 * Put on globalThis for electron.mjs: one per process, as there is one Electron app per process.
 */
export function createElectronStandin(opts: StandinOptions) {
  const g = globalThis as Record<symbol, unknown>
  if (g[STANDIN_KEY]) throw new Error('the electron stand-in exists already: one app per process')

  let browser: Browser | null = null
  let context: BrowserContext | null = null
  let ready = false
  let startApp: () => void = () => undefined
  let ended = false
  let endWith: (code: number) => void = () => undefined
  const exited = new Promise<number>((resolve) => { endWith = resolve })

  const windows: BrowserWindow[] = []
  let windowOpened: (w: BrowserWindow) => void = () => undefined
  const firstWindow = new Promise<BrowserWindow>((resolve) => { windowOpened = resolve })
  const handlers = new Map<string, IpcHandler>()
  const protocolHandlers = new Map<string, (request: Request) => Response | Promise<Response>>()
  const record = {
    invocations: [] as Invocation[],
    privilegedSchemes: [] as unknown[],
    sandboxEnabled: false,
    singleInstanceLockRequested: false,
    openDialogs: [] as DialogCall[],
    saveDialogs: [] as DialogCall[],
    errorBoxes: [] as { title: string; content: string }[],
    shownInFolder: [] as string[],
    openedExternally: [] as string[],
    notifications: [] as Notification[],
    permissionHandlers: {} as Record<string, unknown>,
    windowOpenHandlers: [] as unknown[]
  }
  const openAnswers: OpenAnswer[] = []
  const saveAnswers: SaveAnswer[] = []

  const session = {
    defaultSession: {
      setPermissionRequestHandler(h: unknown): void { record.permissionHandlers.request = h },
      setPermissionCheckHandler(h: unknown): void { record.permissionHandlers.check = h },
      setDevicePermissionHandler(h: unknown): void { record.permissionHandlers.device = h }
    }
  }

  async function end(code: number): Promise<void> {
    if (ended) return
    ended = true
    await browser?.close().catch(() => undefined)
    endWith(code)
  }

  class App extends EventEmitter {
    readonly isPackaged = false
    private quitting: Promise<void> | null = null
    /** As in Electron, the app gets ready after the main script's first run (see runMainBundle). */
    private readonly ready = new Promise<void>((resolve) => { startApp = resolve }).then(async () => {
      browser = await chromium.launch({ executablePath: opts.executablePath, args: ['--no-sandbox'] })
      context = await browser.newContext({ acceptDownloads: false })
      ready = true
      this.emit('ready', new StandinEvent(), {})
    })

    whenReady(): Promise<void> { return this.ready }
    isReady(): boolean { return ready }
    requestSingleInstanceLock(): boolean {
      record.singleInstanceLockRequested = true
      return true
    }
    enableSandbox(): void {
      if (ready) throw new Error('app.enableSandbox() can only be called before app is ready')
      record.sandboxEnabled = true
    }
    setAppUserModelId(_id: string): void {}
    getPath(name: string): string {
      const p = opts.paths[name]
      if (p === undefined) throw new Error(`Failed to get '${name}' path`)
      return p
    }

    /** Electron's order: before-quit, the windows close, will-quit (preventable), quit. */
    quit(): void {
      if (ended || this.quitting) return
      this.quitting = this.runQuit().finally(() => { this.quitting = null })
    }

    private async runQuit(): Promise<void> {
      const before = new StandinEvent()
      this.emit('before-quit', before)
      if (before.defaultPrevented) return
      for (const win of [...windows]) await win.destroyForQuit()
      const willQuit = new StandinEvent()
      this.emit('will-quit', willQuit)
      if (willQuit.defaultPrevented) return
      this.emit('quit', new StandinEvent(), 0)
      await end(0)
    }

    /** Ends at once, no events (Electron's app.exit). */
    exit(code = 0): void {
      void end(code)
    }
  }
  const app = new App()

  class WebContents extends EventEmitter {
    private static next = 1
    readonly id = WebContents.next++
    readonly session = session.defaultSession
    constructor(readonly owner: BrowserWindow) { super() }
    setWindowOpenHandler(handler: unknown): void { record.windowOpenHandlers.push(handler) }
    isDestroyed(): boolean { return this.owner.isDestroyed() }
  }

  class BrowserWindow extends EventEmitter {
    private static next = 1
    static getAllWindows(): BrowserWindow[] { return [...windows] }
    static fromWebContents(contents: unknown): BrowserWindow | null {
      return windows.find((w) => w.webContents === contents) ?? null
    }

    readonly id = BrowserWindow.next++
    readonly webContents: WebContents
    /** The Playwright page this window is. */
    readonly page: Promise<Page>
    private destroyed = false
    private visible = false
    private minimized = false
    focusCount = 0

    constructor(readonly options: { width?: number; height?: number; webPreferences?: { preload?: string } } = {}) {
      super()
      if (!context) throw new Error('Cannot create BrowserWindow before app is ready')
      const ctx = context
      this.webContents = new WebContents(this)
      windows.push(this)
      windowOpened(this)
      this.page = (async () => {
        const page = await ctx.newPage()
        await page.setViewportSize({ width: options.width ?? 800, height: options.height ?? 600 })
        await page.exposeBinding(IPC_BINDING, (source, channel: unknown, args: unknown) => this.invoke(source.frame, channel, args))
        const preload = options.webPreferences?.preload
        if (preload) await page.addInitScript({ content: preloadInitScript(await readFile(preload, 'utf8'), IPC_BINDING) })
        page.on('close', () => this.closed())
        return page
      })()
      app.emit('web-contents-created', new StandinEvent(), this.webContents)
    }

    private async invoke(frame: Frame, channel: unknown, args: unknown): Promise<unknown> {
      const list = Array.isArray(args) ? (args as unknown[]) : []
      if (typeof channel !== 'string') throw new Error('invoke: the channel must be a string')
      record.invocations.push({ channel, frameUrl: frame.url(), args: list })
      const handler = handlers.get(channel)
      if (!handler) throw new Error(`Error invoking remote method '${channel}': Error: No handler registered for '${channel}'`)
      try {
        return await handler({ sender: this.webContents, senderFrame: senderFrame(frame) }, ...list)
      } catch (err) {
        throw new Error(`Error invoking remote method '${channel}': ${String(err)}`, { cause: err })
      }
    }

    async loadURL(url: string): Promise<void> {
      const page = await this.page
      await page.goto(url)
      this.webContents.emit('did-finish-load')
      this.emit('ready-to-show')
    }

    show(): void { this.visible = true; this.minimized = false }
    isVisible(): boolean { return this.visible }
    minimize(): void { this.minimized = true }
    isMinimized(): boolean { return this.minimized }
    restore(): void { this.minimized = false }
    focus(): void {
      this.focusCount++
      void this.page.then((p) => p.bringToFront()).catch(() => undefined)
    }
    isDestroyed(): boolean { return this.destroyed }
    close(): void { void this.page.then((p) => p.close()) }

    /** app.quit() closes the windows without 'window-all-closed'. */
    async destroyForQuit(): Promise<void> {
      this.quitClose = true
      await (await this.page).close()
    }
    private quitClose = false

    private closed(): void {
      if (this.destroyed) return
      this.destroyed = true
      windows.splice(windows.indexOf(this), 1)
      this.emit('closed')
      if (windows.length === 0 && !this.quitClose) app.emit('window-all-closed')
    }
  }

  const ipcMain = {
    handle(channel: string, handler: IpcHandler): void {
      if (handlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`)
      handlers.set(channel, handler)
    },
    removeHandler(channel: string): void { handlers.delete(channel) }
  }

  /** dialog.x(window, options) or dialog.x(options). */
  const dialogArgs = (a: unknown, b: unknown): DialogCall =>
    a instanceof BrowserWindow ? { window: a, options: (b ?? {}) as Record<string, unknown> } : { window: null, options: (a ?? {}) as Record<string, unknown> }

  const dialog = {
    async showOpenDialog(a: unknown, b?: unknown): Promise<OpenAnswer> {
      record.openDialogs.push(dialogArgs(a, b))
      return openAnswers.shift() ?? { canceled: true, filePaths: [] }
    },
    async showSaveDialog(a: unknown, b?: unknown): Promise<SaveAnswer> {
      record.saveDialogs.push(dialogArgs(a, b))
      return saveAnswers.shift() ?? { canceled: true }
    },
    showErrorBox(title: string, content: string): void { record.errorBoxes.push({ title, content }) }
  }

  const shell = {
    showItemInFolder(file: string): void { record.shownInFolder.push(file) },
    async openExternal(url: string): Promise<void> { record.openedExternally.push(url) }
  }

  class Notification extends EventEmitter {
    static isSupported(): boolean { return true }
    readonly title: string
    readonly body: string
    constructor(options: { title?: string; body?: string } = {}) {
      super()
      this.title = options.title ?? ''
      this.body = options.body ?? ''
    }
    show(): void { record.notifications.push(this) }
  }

  const protocol = {
    registerSchemesAsPrivileged(schemes: unknown[]): void {
      if (ready) throw new Error('protocol.registerSchemesAsPrivileged should be called before app is ready')
      record.privilegedSchemes.push(...schemes)
    },
    handle(scheme: string, handler: (request: Request) => Response | Promise<Response>): void {
      if (protocolHandlers.has(scheme)) throw new Error(`The scheme '${scheme}' is already handled`)
      protocolHandlers.set(scheme, handler)
    }
  }

  const net = {
    async fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
      const url = new URL(input instanceof Request ? input.url : input)
      if (url.protocol !== 'file:') return fetch(input, init)
      const file = fileURLToPath(url)
      const body = await readFile(file) // a missing file rejects, as net::ERR_FILE_NOT_FOUND does
      return new Response(body, { status: 200, headers: { 'Content-Type': MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream' } })
    }
  }

  const electron = { app, BrowserWindow, Notification, dialog, ipcMain, net, protocol, session, shell }

  const servers: http.Server[] = []
  const standin = {
    /** What `import … from 'electron'` gives the main bundle. */
    electron,
    record,
    /** Resolves with the exit code once the app quit or exited. */
    exited,
    windows: (): BrowserWindow[] => [...windows],
    /** The first window main opens (Playwright's electronApp.firstWindow(), for the stand-in). */
    firstWindow: (): Promise<BrowserWindow> => firstWindow,
    handledChannels: (): string[] => [...handlers.keys()],
    /** The next open/save dialog answers with these (else it is cancelled). */
    answerOpenDialog(filePaths: string[]): void { openAnswers.push({ canceled: false, filePaths }) },
    answerSaveDialog(filePath: string): void { saveAnswers.push({ canceled: false, filePath }) },
    /** The analyst clicks a notification. */
    click(n: Notification): void { n.emit('click', new StandinEvent()) },
    /**
     * A loopback server answering GET/HEAD with the handler main registered for `appOrigin`'s
     * scheme, each path asked for as `appOrigin` + path. Its URL is what ELECTRON_RENDERER_URL
     * names (main's development mode), since Chromium cannot load the scheme itself.
     */
    async serveProtocolOverHttp(appOrigin: string): Promise<string> {
      const scheme = new URL(appOrigin).protocol.slice(0, -1)
      const server = http.createServer((req, res) => {
        void (async () => {
          const handler = protocolHandlers.get(scheme)
          if (!handler) return void res.writeHead(503).end(`no handler for ${scheme}: yet`)
          const response = await handler(new Request(`${appOrigin}${req.url ?? '/'}`, { method: req.method ?? 'GET' }))
          res.writeHead(response.status, Object.fromEntries(response.headers))
          res.end(req.method === 'HEAD' ? undefined : Buffer.from(await response.arrayBuffer()))
        })().catch((err: unknown) => res.writeHead(500).end(String(err)))
      })
      servers.push(server)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    },
    /**
     * Runs the built main bundle as Electron would: imported by Node's own loader (Vitest loads a
     * test's imports through its module runner) with `electron` resolved to this stand-in; once
     * its first run is over, the app gets ready.
     */
    async runMainBundle(file: string): Promise<void> {
      const here = new URL('.', import.meta.url)
      register(new URL('hooks.mjs', here).href, {
        data: { scope: pathToFileURL(`${path.dirname(path.resolve(file))}${path.sep}`).href, target: new URL('electron.mjs', here).href }
      })
      const nativeImport = createRequire(import.meta.url)('./native-import.cjs') as (url: string) => Promise<unknown>
      await nativeImport(pathToFileURL(path.resolve(file)).href)
      startApp()
    },
    /** Closes what is left (Chromium when main never quit, the servers) and removes the stand-in. */
    async dispose(): Promise<void> {
      await end(-1)
      for (const s of servers) await new Promise((resolve) => s.close(resolve))
      delete g[STANDIN_KEY]
    }
  }
  g[STANDIN_KEY] = standin
  return standin
}

