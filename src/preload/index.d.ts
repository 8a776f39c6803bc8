// `window.aviary` for the renderer: present inside the desktop app, absent in a plain browser.
import type { AviaryBridge } from '../shared/bridge'

declare global {
  interface Window {
    aviary?: AviaryBridge
  }
}

export {}
