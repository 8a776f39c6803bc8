// ELECTRON STAND-IN, renderer side: how the stand-in runs the real preload bundle
// (out/preload/index.cjs) in a Chromium page. Not Electron; see main-process.ts for the whole
// stand-in and what it does and does not reproduce.
//
// The bundle is the sandboxed preload electron-vite emits: CommonJS that does
// `require("electron")` and calls `contextBridge.exposeInMainWorld` and `ipcRenderer.invoke`.
// It runs as a Playwright init script, before any script of the page, wrapped in a function
// that gives it a `require` answering `electron` with two stand-ins:
//  - contextBridge.exposeInMainWorld(key, api): defines window[key] (frozen, not writable);
//  - ipcRenderer.invoke(channel, ...args): calls the page binding the main-process side exposed
//    (Playwright's exposeBinding), which tells main which frame called, as Electron's
//    event.senderFrame does.
// Unlike Electron, the init script runs in the page's own JavaScript world (there is no
// isolated world), so the page could reach the binding itself: context isolation is not
// reproduced here.

/**
 * The init script for a window's preload: `bundle` is the preload file's text, `binding` the name
 * of the page binding that carries invoke() to the main-process stand-in.
 */
export function preloadInitScript(bundle: string, binding: string): string {
  return `(() => {
  // Electron runs a window's preload in its top frame only (nodeIntegrationInSubFrames: false).
  if (window.top !== window) return
  const invoke = (channel, args) => globalThis[${JSON.stringify(binding)}](channel, args)
  const electron = Object.freeze({
    contextBridge: Object.freeze({
      exposeInMainWorld(key, api) {
        Object.defineProperty(globalThis, key, { value: Object.freeze({ ...api }), enumerable: true, writable: false, configurable: false })
      }
    }),
    ipcRenderer: Object.freeze({ invoke: (channel, ...args) => invoke(channel, args) })
  })
  const require = (id) => {
    if (id === 'electron') return electron
    throw new Error('the electron stand-in gives a preload only "electron", not ' + JSON.stringify(id))
  }
  const module = { exports: {} }
  ;(function (require, module, exports) {
${bundle}
  })(require, module, module.exports)
})()
`
}
