// Launches the built desktop app with Playwright's Electron driver and checks that its window
// shows the UI (served from app://aviary, talking to the service the main process embeds).
// Where Electron cannot run (no binary installed, no display), the test is skipped and says why.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { _electron as electron } from 'playwright-core'

const root = path.resolve('.')

/** node_modules/electron/dist/<path.txt>, when electron's install step has fetched it. */
function electronBinary(): string | null {
  const pathFile = path.join(root, 'node_modules/electron/path.txt')
  if (!existsSync(pathFile)) return null
  const bin = path.join(root, 'node_modules/electron/dist', readFileSync(pathFile, 'utf8').trim())
  return existsSync(bin) ? bin : null
}

function skipReason(): string | null {
  if (!electronBinary()) return 'no Electron binary (node_modules/electron/dist is not installed)'
  if (process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return 'no display (DISPLAY and WAYLAND_DISPLAY are unset; try xvfb-run)'
  return null
}

const reason = skipReason()
if (reason) console.warn(`electron-launch: skipped: ${reason}`)

describe('the desktop app', () => {
  it.skipIf(reason !== null)(`opens a window showing the UI${reason ? ` (skipped: ${reason})` : ''}`, async () => {
    if (!existsSync(path.join(root, 'out/main/index.js')) || !existsSync(path.join(root, 'out/renderer/index.html'))) {
      execFileSync(process.execPath, [path.join(root, 'node_modules/electron-vite/bin/electron-vite.js'), 'build'], { cwd: root, stdio: 'inherit' })
    }
    const dataDir = mkdtempSync(path.join(tmpdir(), 'aviary-electron-'))
    const app = await electron.launch({
      executablePath: electronBinary()!,
      args: [root],
      cwd: root,
      env: { ...process.env, AVIARY_DATA: dataDir, ELECTRON_RENDERER_URL: '' },
      timeout: 60_000
    })
    try {
      const window = await app.firstWindow()
      await window.waitForLoadState('domcontentloaded')
      expect(window.url()).toMatch(/^app:\/\/aviary\//)
      // The shell's navigation is there, and a page of it has data from the embedded service.
      await window.getByRole('link', { name: 'Tasks' }).first().waitFor({ timeout: 30_000 })
      expect(await window.title()).toBe('Aviary')
      // The bridge is present, and only with its documented functions.
      const bridge = await window.evaluate(() => Object.keys((window as unknown as { aviary?: object }).aviary ?? {}).sort())
      expect(bridge).toEqual(['apiBaseUrl', 'notify', 'openExternal', 'openFileDialog', 'revealInFolder', 'saveDownload'])
      const status = await window.evaluate(async () => {
        const base = await (window as unknown as { aviary: { apiBaseUrl(): Promise<string> } }).aviary.apiBaseUrl()
        return (await fetch(`${base}/cuckoo/status`)).status
      })
      expect(status).toBe(200)
    } finally {
      await app.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 180_000)
})
