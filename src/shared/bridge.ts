// The desktop bridge: the few things a web page cannot do by itself, exposed by the preload
// script as `window.aviary`. Everything about analyses goes over HTTP to the service, so the
// renderer also runs in a plain browser, where the bridge is absent.

export interface AviaryBridge {
  /** Base URL of the local analysis service, e.g. `http://127.0.0.1:8090`. */
  apiBaseUrl(): Promise<string>
  /** Native "open files" dialog; resolves to the chosen absolute paths ([] when cancelled). */
  openFileDialog(): Promise<string[]>
  /** Shows a file in the platform's file manager. */
  revealInFolder(path: string): Promise<void>
  /** Opens an http(s) URL in the default browser; other schemes are refused. */
  openExternal(url: string): Promise<void>
  /**
   * Native "save as" dialog, then the main process downloads `url` (a URL of the local service,
   * e.g. a memory dump or a remote's pcap through the proxy) to the chosen file. Resolves to the
   * saved path, or null when cancelled.
   */
  saveDownload(url: string, suggestedName: string): Promise<string | null>
  /** A desktop notification (the main process also notifies by itself when a task finishes). */
  notify(title: string, body: string): Promise<void>
}

/** IPC channels between the preload script and the main process. */
export const BridgeChannels = {
  apiBaseUrl: 'aviary:api-base-url',
  openFileDialog: 'aviary:open-file-dialog',
  revealInFolder: 'aviary:reveal-in-folder',
  openExternal: 'aviary:open-external',
  saveDownload: 'aviary:save-download',
  notify: 'aviary:notify'
} as const satisfies Record<keyof AviaryBridge, string>
