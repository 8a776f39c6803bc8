import { describe, expect, it } from 'vitest'
import { MAX_CLIPBOARD_BYTES, RfbClientFilter, RfbViolation } from './rfb-client-filter'
import { vncOfDomainXml } from '../machinery/kvm'

const handshake = Buffer.concat([Buffer.from('RFB 003.008\n'), Buffer.from([1]), Buffer.from([0])])
const key = (down: number, sym = 0x61) => Buffer.from([4, down, 0, 0, 0, 0, 0, sym])
const pointer = (mask: number, x = 10, y = 10) => Buffer.from([5, mask, x >> 8, x & 255, y >> 8, y & 255])

function all(f: RfbClientFilter, b: Buffer) {
  const r = f.push(b)
  return { ...r, bytes: Buffer.concat(r.forward) }
}

describe('the console client filter (RFB, client to server)', () => {
  it('forces a shared session and passes an interactive client\'s input, counting keys and clicks', () => {
    const f = new RfbClientFilter(false)
    const h = all(f, handshake)
    expect(h.bytes.subarray(0, 13)).toEqual(handshake.subarray(0, 13))
    expect(h.bytes[13]).toBe(1) // shared-flag 0 (exclusive) became 1
    const r = all(f, Buffer.concat([key(1), key(0), pointer(1), pointer(0), pointer(4), pointer(5)]))
    expect(r.keys).toBe(1)
    expect(r.clicks).toBe(3) // button 1, button 3, then button 1 again while 3 is held
    expect(r.bytes.length).toBe(8 * 2 + 6 * 4)
  })

  it('drops every input of a view-only client and passes its update requests', () => {
    const f = new RfbClientFilter(true)
    all(f, handshake)
    const update = Buffer.from([3, 1, 0, 0, 0, 0, 4, 0, 3, 0])
    const cut = Buffer.concat([Buffer.from([6, 0, 0, 0, 0, 0, 0, 3]), Buffer.from('abc')])
    const qemuKey = Buffer.from([255, 0, 0, 1, 0, 0, 0, 0x61, 0, 0, 0, 0x1e])
    const r = all(f, Buffer.concat([key(1), pointer(1), cut, qemuKey, update]))
    expect(r.bytes).toEqual(update)
    expect(r.dropped).toBe(4)
    expect(r.keys + r.clicks).toBe(0)
  })

  it('reassembles messages split across frames', () => {
    const f = new RfbClientFilter(false)
    all(f, handshake.subarray(0, 5))
    all(f, handshake.subarray(5))
    const k = key(1)
    expect(all(f, k.subarray(0, 3)).bytes.length).toBe(0)
    const r = all(f, k.subarray(3))
    expect(r.bytes).toEqual(k)
    expect(r.keys).toBe(1)
  })

  it('cuts off garbage: not RFB, a password, an unknown message, an oversized clipboard, too many encodings', () => {
    expect(() => new RfbClientFilter(false).push(Buffer.from('GET / HTTP/1.1\r\n'))).toThrow(RfbViolation)
    const pw = new RfbClientFilter(false)
    expect(() => pw.push(Buffer.concat([Buffer.from('RFB 003.008\n'), Buffer.from([2])]))).toThrow(/password/)
    const f = () => {
      const x = new RfbClientFilter(false)
      x.push(handshake)
      return x
    }
    expect(() => f().push(Buffer.from([77, 1, 2, 3]))).toThrow(/message type 77/)
    const big = Buffer.alloc(8)
    big[0] = 6
    big.writeInt32BE(MAX_CLIPBOARD_BYTES + 1, 4)
    expect(() => f().push(big)).toThrow(/clipboard/)
    expect(() => f().push(Buffer.from([2, 0, 0xff, 0xff]))).toThrow(/encodings/)
    // A random MiB: refused at its first bytes, never buffered.
    const junk = Buffer.alloc(1024 * 1024, 0xa5)
    expect(() => f().push(junk)).toThrow(RfbViolation)
  })
})

describe('the VNC display of a libvirt domain', () => {
  it('reads the port and the address, a socket, and says why there is none', () => {
    expect(vncOfDomainXml(`<domain><devices><graphics type='vnc' port='5901' autoport='yes' listen='127.0.0.1'>
      <listen type='address' address='127.0.0.1'/></graphics></devices></domain>`)).toEqual({ host: '127.0.0.1', port: 5901 })
    expect(vncOfDomainXml(`<graphics type='vnc' port='5902' autoport='yes' listen='0.0.0.0'/>`)).toEqual({ host: '127.0.0.1', port: 5902 })
    expect(vncOfDomainXml(`<graphics type='vnc'><listen type='socket' socket='/run/vnc&amp;.sock'/></graphics>`)).toEqual({ path: '/run/vnc&.sock' })
    expect(vncOfDomainXml(`<graphics type='vnc' port='-1' autoport='yes'/>`)).toMatch(/no port yet/)
    expect(vncOfDomainXml(`<graphics type='spice' port='5900'/>`)).toMatch(/no VNC display/)
  })
})
