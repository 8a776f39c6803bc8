// What a console client may send the VNC server. The websocket carries RFB (RFC 6143) as bytes, and
// the service passes the client's bytes on only after reading them message by message, because:
// - a view-only client must not type or click: its KeyEvents, PointerEvents, clipboard and resize
//   requests are dropped here, whatever the page in front of it does;
// - a client must not take the screen for itself: RFB's ClientInit asks for an exclusive session
//   with shared-flag 0 (QEMU then drops every other client), so the flag is forced to 1;
// - the service counts keys and clicks (the timeline, the recording's seek bar) without keeping
//   what was typed;
// - garbage is cut off at its first byte: an unknown message type, a handshake that is not RFB
//   3.7/3.8 with security "None", a length over the caps below.
// No kept library parses the client's half of RFB for a proxy (noVNC and the VNC servers each do
// it for themselves), so this does, for the messages noVNC 1.7 and RFC 6143 define.
export class RfbViolation extends Error {}

export interface FilterResult {
  /** The bytes to pass on to the VNC server (whole messages). */
  forward: Buffer[]
  /** Keys pressed (key-down events) and mouse button presses in what was passed on. */
  keys: number
  clicks: number
  /** Input messages dropped because the client is view-only. */
  dropped: number
}

/** ClientCutText's text; noVNC sends the clipboard when the analyst pastes into the console. */
export const MAX_CLIPBOARD_BYTES = 64 * 1024
const MAX_ENCODINGS = 64
const MAX_SCREENS = 16
/** The largest message the filter may have to hold while it arrives in pieces. */
export const MAX_MESSAGE_BYTES = 8 + MAX_CLIPBOARD_BYTES

type Phase = 'version' | 'security' | 'init' | 'messages'

export class RfbClientFilter {
  private phase: Phase = 'version'
  private pending: Buffer = Buffer.alloc(0)
  private buttons = 0

  constructor(public viewOnly: boolean) {}

  /** Takes the next bytes of the client; throws RfbViolation for bytes no RFB client sends. */
  push(chunk: Buffer): FilterResult {
    const out: FilterResult = { forward: [], keys: 0, clicks: 0, dropped: 0 }
    let buf = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    for (;;) {
      const n = this.next(buf, out)
      if (n === 0) break
      buf = buf.subarray(n)
    }
    if (buf.length > MAX_MESSAGE_BYTES) throw new RfbViolation('a message longer than any the console accepts')
    // Copied, so the chunk the websocket handed over is not kept alive by a few pending bytes.
    this.pending = Buffer.from(buf)
    return out
  }

  /** Handles one message at the start of `b`; returns its length, or 0 when it is not whole yet. */
  private next(b: Buffer, out: FilterResult): number {
    if (b.length === 0) return 0
    switch (this.phase) {
      case 'version': {
        if (b.length < 12) return checkVersionPrefix(b)
        const v = b.toString('latin1', 0, 12)
        if (v !== 'RFB 003.008\n' && v !== 'RFB 003.007\n') throw new RfbViolation(`not an RFB 3.7 or 3.8 client (${JSON.stringify(v)})`)
        out.forward.push(b.subarray(0, 12))
        this.phase = 'security'
        return 12
      }
      case 'security':
        // 1 is "None": the service reaches the VNC server on the host's own side and needs no
        // password; a server that asks for one is refused (a password would have to reach the page).
        if (b[0] !== 1) throw new RfbViolation(b[0] === 2 ? "the machine's VNC server asks for a password, which the console does not support" : `security type ${b[0]} is not supported (only None)`)
        out.forward.push(b.subarray(0, 1))
        this.phase = 'init'
        return 1
      case 'init':
        out.forward.push(Buffer.from([1])) // shared: never an exclusive session
        this.phase = 'messages'
        return 1
      case 'messages':
        return this.message(b, out)
    }
  }

  private message(b: Buffer, out: FilterResult): number {
    const type = b[0]!
    const len = messageLength(b)
    if (len === 0 || b.length < len) return 0
    const msg = b.subarray(0, len)
    let input = false
    switch (type) {
      case 4: // KeyEvent
        input = true
        if (msg[1] !== 0 && !this.viewOnly) out.keys++
        break
      case 5: { // PointerEvent: a click is a button going down
        input = true
        const mask = msg[1]! & 0x7f
        if (!this.viewOnly) {
          out.clicks += popcount(mask & ~this.buttons & 0x07)
          this.buttons = mask
        }
        break
      }
      case 6: // ClientCutText
      case 251: // SetDesktopSize: the guest's resolution
        input = true
        break
      case 255: // QEMU client message: 0 is the extended key event (a key with its scancode)
        if (msg[1] === 0) {
          input = true
          if (msg.readUInt16BE(2) !== 0 && !this.viewOnly) out.keys++
        }
        break
      case 250: // xvp: reboot or reset the machine; never through the console
        out.dropped++
        return len
    }
    if (input && this.viewOnly) {
      out.dropped++
      return len
    }
    out.forward.push(msg)
    return len
  }
}

function checkVersionPrefix(b: Buffer): number {
  const want = 'RFB 003.00'
  const have = b.toString('latin1', 0, Math.min(b.length, want.length))
  if (!want.startsWith(have)) throw new RfbViolation('not an RFB client')
  return 0
}

function popcount(x: number): number {
  let n = 0
  for (let v = x; v !== 0; v &= v - 1) n++
  return n
}

/** The whole length of the message at the start of `b`, 0 when its header is not whole yet; throws for what no client sends. */
export function messageLength(b: Buffer): number {
  const type = b[0]!
  const need = (n: number): boolean => b.length >= n
  switch (type) {
    case 0: return 20 // SetPixelFormat
    case 2: { // SetEncodings
      if (!need(4)) return 0
      const n = b.readUInt16BE(2)
      if (n > MAX_ENCODINGS) throw new RfbViolation(`SetEncodings with ${n} encodings`)
      return 4 + 4 * n
    }
    case 3: return 10 // FramebufferUpdateRequest
    case 4: return 8 // KeyEvent
    case 5: return 6 // PointerEvent
    case 6: { // ClientCutText; a negative length is the extended clipboard's
      if (!need(8)) return 0
      const n = Math.abs(b.readInt32BE(4))
      if (n > MAX_CLIPBOARD_BYTES) throw new RfbViolation(`a clipboard of ${n} bytes (at most ${MAX_CLIPBOARD_BYTES})`)
      return 8 + n
    }
    case 150: return 10 // EnableContinuousUpdates
    case 248: { // ClientFence
      if (!need(9)) return 0
      const n = b[8]!
      if (n > 64) throw new RfbViolation(`a fence of ${n} bytes`)
      return 9 + n
    }
    case 250: return 4 // xvp
    case 251: { // SetDesktopSize
      if (!need(8)) return 0
      const n = b[6]!
      if (n > MAX_SCREENS) throw new RfbViolation(`SetDesktopSize with ${n} screens`)
      return 8 + 16 * n
    }
    case 255: { // QEMU: 0 extended key event; 1 audio (enable, disable, set format)
      if (!need(2)) return 0
      if (b[1] === 0) return 12
      if (b[1] === 1) {
        if (!need(4)) return 0
        const op = b.readUInt16BE(2)
        if (op === 0 || op === 1) return 4
        if (op === 2) return 10
      }
      throw new RfbViolation(`QEMU client message ${b[1]}`)
    }
    default:
      throw new RfbViolation(`message type ${type}`)
  }
}
