// The main window: a sandboxed renderer with context isolation and no Node.js, which reaches
// the desktop only through the preload bridge and the service only over HTTP.
import path from 'node:path'
import { BrowserWindow } from 'electron'
import { rendererEntryUrl } from './renderer-location'

export function createMainWindow(mainDir: string): BrowserWindow {
  const win = new BrowserWindow({
    width: 1200,
    height: 800,
    minWidth: 640,
    minHeight: 480,
    title: 'Aviary',
    show: false,
    autoHideMenuBar: true,
    webPreferences: {
      preload: path.join(mainDir, '../preload/index.cjs'),
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      spellcheck: false
    }
  })
  win.once('ready-to-show', () => win.show())
  win.loadURL(rendererEntryUrl()).catch((err: unknown) => console.error('could not load the renderer:', err))
  return win
}
