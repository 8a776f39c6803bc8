// ELECTRON STAND-IN: what `import … from 'electron'` gives the main-process bundle in a test
// (hooks.mjs points the specifier here). The stand-in itself is main-process.ts, which
// createElectronStandin() puts on globalThis before the bundle is imported.
const standin = globalThis[Symbol.for('aviary.electron-standin')]
if (!standin) throw new Error('electron stand-in: createElectronStandin() must run before the main bundle is imported')
const e = standin.electron

export const { app, BrowserWindow, Notification, dialog, ipcMain, net, protocol, session, shell } = e
export default e
