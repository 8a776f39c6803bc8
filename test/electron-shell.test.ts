// The desktop shell's main process and preload, run under an ELECTRON STAND-IN
// (test/electron-standin/), since no Electron binary can be had here. The real bundles run: the
// main process (out/main/index.js, with the service it embeds, on a temporary AVIARY_DATA) is
// imported with `electron` resolved to the stand-in; its BrowserWindow is a page of Debian's
// Chromium; the real preload (out/preload/index.cjs) runs in it as an init script; the page's
// ipcRenderer.invoke reaches the handlers main registered through a page binding.
//
// What it proves: the preload's channels are the ones main handles; main refuses an invoke from
// its window showing another origin; a file dropped in the window reaches the embedded service
// and becomes a task; saveDownload writes the service's bytes where the save dialog said, after
// offering the downloads folder; notifications (the page's and a finished task's) carry their
// title and body, and a click brings the window back; main's permission and new-window handlers
// deny; quitting stops the service before the app ends.
// What it does not prove (Electron's own parts): the sandbox, context isolation, the app://
// scheme (the window runs main's development mode, ELECTRON_RENDERER_URL, at a loopback server
// of the stand-in that answers with main's app:// handler), that Electron calls the permission
// and new-window handlers (the test calls them), the navigation guards (navigation is not
// intercepted), native dialogs and notifications. test/electron-launch.test.ts checks the real
// app where an Electron binary and a display exist.
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BridgeChannels } from '../src/shared/bridge'
import { createElectronStandin, type ElectronStandin } from './electron-standin/main-process'

// Callbacks of page.evaluate run in the page; this file compiles without the DOM library, so they
// name the few browser globals they use through this type (a cast, gone at run time).
interface InPage {
  aviary?: Record<string, (...args: unknown[]) => Promise<unknown>>
  DataTransfer: new () => { items: { add(file: unknown): void } }
  File: new (parts: string[], name: string, o: { type: string }) => unknown
  location: { hash: string }
}

const MAIN_BUNDLE = path.resolve('out/main/index.js')
const SAMPLE = '#!/bin/sh\necho dropped on the desktop window\n'
const SAMPLE_NAME = 'dropped-in-shell.sh'
const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex')

let tmp: string
let dataDir: string
let downloads: string
let standin: ElectronStandin
let page: Page
let base: string
let rendererUrl: string
const pageErrors: string[] = []
const savedEnv = { AVIARY_DATA: process.env.AVIARY_DATA, ELECTRON_RENDERER_URL: process.env.ELECTRON_RENDERER_URL }

/** Calls window.aviary[name](...args) in the window; resolves to its value or `{ rejected }`. */
function bridge(name: string, ...args: unknown[]): Promise<unknown> {
  return page.evaluate(async ([n, a]) => {
    const g = globalThis as unknown as InPage
    try {
      return await g.aviary![n as string]!(...(a as unknown[]))
    } catch (err) {
      return { rejected: String((err as Error).message) }
    }
  }, [name, args] as const)
}

const theWindow = () => standin.windows()[0] as unknown as { isMinimized(): boolean; minimize(): void; focusCount: number }

beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'aviary-shell-'))
  dataDir = path.join(tmp, 'data')
  downloads = path.join(tmp, 'Downloads')
  mkdirSync(downloads)
  standin = createElectronStandin({
    executablePath: '/usr/bin/chromium',
    paths: { home: tmp, downloads, userData: path.join(tmp, 'userData'), temp: tmp }
  })
  rendererUrl = await standin.serveProtocolOverHttp('app://aviary')
  process.env.AVIARY_DATA = dataDir
  process.env.ELECTRON_RENDERER_URL = `${rendererUrl}/index.html`
  await standin.runMainBundle(MAIN_BUNDLE)
  page = await (await standin.firstWindow()).page
  page.on('pageerror', (err) => pageErrors.push(err.message))
  // The UI is up, fed by the service main started (its address comes through the bridge).
  await page.getByRole('link', { name: 'Tasks' }).first().waitFor({ timeout: 30_000 })
  base = (await bridge('apiBaseUrl')) as string
}, 90_000)

afterAll(async () => {
  if (standin) {
    // When a test failed before the quit test, main still runs its service: it is stopped the same way.
    standin.electron.app.quit()
    await Promise.race([standin.exited, sleep(20_000)])
    await standin.dispose()
  }
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k]
    else process.env[k] = v
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true })
})

describe('the desktop shell under the Electron stand-in', () => {
  it('started as Electron requires: one instance, sandbox and scheme before ready, a sandboxed window', () => {
    expect(standin.record.singleInstanceLockRequested).toBe(true)
    expect(standin.record.sandboxEnabled).toBe(true)
    expect(standin.record.privilegedSchemes).toEqual([{ scheme: 'app', privileges: { standard: true, secure: true, supportFetchAPI: true } }])
    const win = standin.windows()[0]!
    expect(win.options.webPreferences).toMatchObject({ sandbox: true, contextIsolation: true, nodeIntegration: false, preload: path.resolve('out/preload/index.cjs') })
    expect(win.isVisible()).toBe(true) // shown on ready-to-show
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(standin.record.errorBoxes).toEqual([])
  })

  it('installed handlers that deny every permission and open new windows in the browser', () => {
    // The stand-in records these handlers (Chromium under Playwright has no hook to call them
    // from), so they are called here as Electron would call them.
    type Handler = (...args: unknown[]) => unknown
    const { request, check, device } = standin.record.permissionHandlers as Record<string, Handler>
    let granted: unknown
    request!(standin.windows()[0]!.webContents, 'notifications', (g: boolean) => { granted = g })
    expect(granted).toBe(false)
    expect(check!(standin.windows()[0]!.webContents, 'clipboard-read')).toBe(false)
    expect(device!({ deviceType: 'usb' })).toBe(false)
    const [openWindow] = standin.record.windowOpenHandlers as Handler[]
    expect(openWindow!({ url: 'https://example.com/report' })).toEqual({ action: 'deny' })
    expect(openWindow!({ url: 'file:///etc/passwd' })).toEqual({ action: 'deny' })
    expect(standin.record.openedExternally).toEqual(['https://example.com/report'])
  })

  it('serves the window through the app:// handler main registered', async () => {
    const res = await fetch(`${rendererUrl}/index.html`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-security-policy')).toBe("frame-ancestors 'none'")
    // An encoded way out of out/renderer (to the repository's package.json) is refused.
    expect((await fetch(`${rendererUrl}/..%2f..%2fpackage.json`)).status).toBe(404)
    expect((await fetch(`${rendererUrl}/index.html`, { method: 'POST' })).status).toBe(405)
  })

  it("offers exactly the bridge's functions, each on the channel main handles", async () => {
    const names = await page.evaluate(() => Object.keys((globalThis as unknown as InPage).aviary ?? {}).sort())
    expect(names).toEqual(Object.keys(BridgeChannels).sort())
    // Each function is called once without arguments; the channel it reaches main on is recorded
    // by the stand-in (main refuses the missing arguments, which is not the point here).
    const reached: Record<string, string> = {}
    for (const name of names) {
      const before = standin.record.invocations.length
      await bridge(name)
      expect(standin.record.invocations.length).toBe(before + 1)
      reached[name] = standin.record.invocations.at(-1)!.channel
    }
    expect(reached).toEqual(BridgeChannels)
    expect(standin.handledChannels().sort()).toEqual(Object.values(BridgeChannels).sort())
    // The open dialog was shown for the window that asked, and its cancel gave no paths.
    expect(standin.record.openDialogs.at(-1)!.window).toBe(standin.windows()[0])
  })

  it('takes a file dropped in the window to the service, where it becomes a task', async () => {
    await page.evaluate(() => { (globalThis as unknown as InPage).location.hash = '#/submit' })
    await page.getByRole('heading', { name: 'Submit' }).waitFor()
    const dt = await page.evaluateHandle(([text, name]) => {
      const g = globalThis as unknown as InPage
      const d = new g.DataTransfer()
      d.items.add(new g.File([text], name, { type: 'text/x-sh' }))
      return d
    }, [SAMPLE, SAMPLE_NAME] as const)
    for (const type of ['dragenter', 'dragover', 'drop']) await page.dispatchEvent('main', type, { dataTransfer: dt })
    await page.getByRole('button', { name: /^Submit 1 file/ }).click()
    const listed = async () => (await (await fetch(`${base}/tasks/list`)).json() as { tasks: { id: number; target: string; sample: { sha256?: string } }[] }).tasks
    await expect.poll(async () => (await listed()).map((t) => path.basename(t.target)), { timeout: 30_000 }).toEqual([SAMPLE_NAME])
    const tasks = await listed()
    expect(tasks).toHaveLength(1)
    expect(tasks[0]!.sample.sha256).toBe(sha256(SAMPLE))
  })

  it('saves a download of the service where the save dialog said, after offering the downloads folder', async () => {
    const target = path.join(tmp, 'chosen', 'copy.sh')
    mkdirSync(path.dirname(target))
    standin.answerSaveDialog(target)
    const saved = await bridge('saveDownload', `${base}/files/get/${sha256(SAMPLE)}`, 'invoice\u202Egpj.sh')
    expect(saved).toBe(target)
    expect(readFileSync(target, 'utf8')).toBe(SAMPLE)
    const dialog = standin.record.saveDialogs.at(-1)!
    expect(dialog.window).toBe(standin.windows()[0])
    // The suggested name is cleaned before it is offered: no bidi override reaches the disk.
    expect(dialog.options.defaultPath).toBe(path.join(downloads, 'invoice_gpj.sh'))
    // Cancelled: nothing is written, null comes back.
    expect(await bridge('saveDownload', `${base}/files/get/${sha256(SAMPLE)}`, 'again.sh')).toBeNull()
    // Anything but the local service is refused before a dialog opens.
    const dialogs = standin.record.saveDialogs.length
    expect(await bridge('saveDownload', 'http://example.com/payload.exe', 'payload.exe')).toEqual({ rejected: expect.stringMatching(/only URLs of the local service/) })
    expect(standin.record.saveDialogs.length).toBe(dialogs)
  })

  it('notifies for the page and for a finished task; a click brings the window back', async () => {
    expect(await bridge('notify', 'Hello\u202E', 'from the page')).toBeUndefined()
    const fromPage = standin.record.notifications.at(-1)!
    expect({ title: fromPage.title, body: fromPage.body }).toEqual({ title: 'Hello<U+202E>', body: 'from the page' })
    theWindow().minimize()
    const focused = theWindow().focusCount
    standin.click(fromPage)
    expect(theWindow().isMinimized()).toBe(false)
    expect(theWindow().focusCount).toBe(focused + 1)

    // No analysis machine runs here: the task's end is written to the database on a connection
    // of its own, as another process would write it; main hears it through the service's events.
    const { tasks } = await (await fetch(`${base}/tasks/list`)).json() as { tasks: { id: number }[] }
    const id = tasks[0]!.id
    const db = new Database(path.join(dataDir, 'aviary.db'))
    try {
      db.prepare("UPDATE tasks SET status = 'reported', started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?").run(id)
    } finally {
      db.close()
    }
    await expect.poll(() => standin.record.notifications.some((n) => n.title === `Task ${id} finished`), { timeout: 10_000 }).toBe(true)
    const finished = standin.record.notifications.find((n) => n.title === `Task ${id} finished`)!
    expect(finished.body).toBe(`${SAMPLE_NAME}\nThe report is ready`)
    expect(pageErrors).toEqual([])
  })

  it('refuses an invoke from the window showing another origin', async () => {
    // The same page from another origin (localhost instead of 127.0.0.1): the preload runs, main refuses.
    await page.goto(`${rendererUrl.replace('127.0.0.1', 'localhost')}/index.html`)
    expect(await bridge('apiBaseUrl')).toEqual({ rejected: expect.stringMatching(/refused: not the app window/) })
    expect(standin.record.invocations.at(-1)!.frameUrl).toMatch(/^http:\/\/localhost:/)
  })

  it('quits: main stops the service before the app ends', async () => {
    standin.electron.app.quit()
    expect(await standin.exited).toBe(0)
    await expect(fetch(`${base}/cuckoo/status`)).rejects.toThrow()
  })
})
