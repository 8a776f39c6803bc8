// The part of noVNC 1.7's RFB (core/rfb.js) the console uses; noVNC ships no types.
declare module '@novnc/novnc' {
  /** What RFB needs of a channel: a WebSocket, or the player's stand-in for one (RecordingPlayer). */
  export interface RfbChannel {
    send(data: ArrayBuffer | Uint8Array): void
    close(): void
    binaryType: string
    protocol: string
    readyState: number | string
    onopen: ((e: Event) => void) | null
    onmessage: ((e: MessageEvent) => void) | null
    onclose: ((e: CloseEvent) => void) | null
    onerror: ((e: Event) => void) | null
  }
  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, urlOrChannel: string | WebSocket | RfbChannel, options?: { shared?: boolean; wsProtocols?: string[] })
    viewOnly: boolean
    scaleViewport: boolean
    clipViewport: boolean
    resizeSession: boolean
    focusOnClick: boolean
    background: string
    qualityLevel: number
    compressionLevel: number
    showDotCursor: boolean
    disconnect(): void
    focus(): void
    sendCtrlAltDel(): void
    sendKey(keysym: number, code: string | null, down?: boolean): void
  }
}
