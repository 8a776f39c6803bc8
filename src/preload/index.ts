// The preload script runs sandboxed (CommonJS, only `electron`'s renderer modules available)
// and exposes the desktop bridge to the page through the context bridge. It forwards calls
// and nothing else: every argument is re-validated in the main process (src/main/ipc.ts).
import { contextBridge, ipcRenderer } from 'electron'
import { BridgeChannels, type AviaryBridge } from '../shared/bridge'

const bridge: AviaryBridge = {
  apiBaseUrl: () => ipcRenderer.invoke(BridgeChannels.apiBaseUrl),
  openFileDialog: () => ipcRenderer.invoke(BridgeChannels.openFileDialog),
  revealInFolder: (path) => ipcRenderer.invoke(BridgeChannels.revealInFolder, path),
  openExternal: (url) => ipcRenderer.invoke(BridgeChannels.openExternal, url),
  saveDownload: (url, suggestedName) => ipcRenderer.invoke(BridgeChannels.saveDownload, url, suggestedName),
  notify: (title, body) => ipcRenderer.invoke(BridgeChannels.notify, title, body)
}

contextBridge.exposeInMainWorld('aviary', bridge)
