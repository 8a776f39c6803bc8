// The main-process side of the desktop bridge (src/shared/bridge.ts). Every message is checked
// to come from the top frame of one of the app's windows showing the app's own page, and every
// argument is validated: the renderer is treated as untrusted input.
import path from 'node:path'
import { app, BrowserWindow, dialog, ipcMain, shell, type IpcMainInvokeEvent, type OpenDialogOptions, type SaveDialogOptions } from 'electron'
import { BridgeChannels } from '../shared/bridge'
import { isAppUrl } from './renderer-location'
import { externalHttpUrl } from './security'
import { downloadTo, safeFileName, serviceUrl } from './downloads'
import { showNotification } from './notify'
import { visible } from './task-notifications'

export interface IpcDeps {
  /** Resolves once the service listens. */
  apiBaseUrl(): Promise<string>
  /** Brings the main window forward (a notification was clicked). */
  showWindow(): void
}

function isTrustedSender(event: IpcMainInvokeEvent): boolean {
  const frame = event.senderFrame
  if (!frame || frame.parent !== null || !isAppUrl(frame.url)) return false
  return BrowserWindow.fromWebContents(event.sender) !== null
}

function handle(channel: string, handler: (event: IpcMainInvokeEvent, ...args: unknown[]) => unknown): void {
  ipcMain.handle(channel, (event, ...args: unknown[]) => {
    if (!isTrustedSender(event)) throw new Error('refused: not the app window')
    return handler(event, ...args)
  })
}

export function registerIpc(deps: IpcDeps): void {
  handle(BridgeChannels.apiBaseUrl, () => deps.apiBaseUrl())

  handle(BridgeChannels.openFileDialog, async (event) => {
    const options: OpenDialogOptions = { title: 'Submit files', properties: ['openFile', 'multiSelections'] }
    const win = BrowserWindow.fromWebContents(event.sender)
    const result = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options)
    return result.canceled ? [] : result.filePaths
  })

  handle(BridgeChannels.revealInFolder, (_event, file) => {
    if (typeof file !== 'string' || file.includes('\0') || !path.isAbsolute(file)) throw new Error('revealInFolder: an absolute path is required')
    shell.showItemInFolder(path.normalize(file))
  })

  handle(BridgeChannels.openExternal, async (_event, value) => {
    const url = externalHttpUrl(value)
    if (!url) throw new Error('openExternal: only http and https URLs are opened')
    await shell.openExternal(url)
  })

  handle(BridgeChannels.saveDownload, async (event, value, suggested) => {
    const url = serviceUrl(value, await deps.apiBaseUrl())
    if (!url) throw new Error('saveDownload: only URLs of the local service are downloaded')
    const options: SaveDialogOptions = { title: 'Save', defaultPath: path.join(app.getPath('downloads'), safeFileName(suggested)) }
    const win = BrowserWindow.fromWebContents(event.sender)
    const result = win ? await dialog.showSaveDialog(win, options) : await dialog.showSaveDialog(options)
    if (result.canceled || !result.filePath) return null
    await downloadTo(url, result.filePath)
    return result.filePath
  })

  handle(BridgeChannels.notify, (_event, title, body) => {
    if (typeof title !== 'string' || typeof body !== 'string') throw new Error('notify: a title and a body are required')
    showNotification(visible(title).slice(0, 200), visible(body).slice(0, 1000), deps.showWindow)
  })
}
