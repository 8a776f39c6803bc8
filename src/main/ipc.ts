// The main-process side of the desktop bridge (src/shared/bridge.ts). Every message is checked
// to come from the top frame of one of the app's windows showing the app's own page, and every
// argument is validated: the renderer is treated as untrusted input.
import path from 'node:path'
import { BrowserWindow, dialog, ipcMain, shell, type IpcMainInvokeEvent, type OpenDialogOptions } from 'electron'
import { BridgeChannels } from '../shared/bridge'
import { isAppUrl } from './renderer-location'
import { externalHttpUrl } from './security'

export interface IpcDeps {
  /** Resolves once the service listens. */
  apiBaseUrl(): Promise<string>
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
}
