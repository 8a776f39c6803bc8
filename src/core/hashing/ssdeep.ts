// ssdeep (context-triggered piecewise hashing), hand-written: the npm `ssdeep.js` package gives
// digests that disagree with the real tool on most binaries. This is a port of the algorithm of
// ssdeep >= 2.13 (fuzzy.c: every block size 3*2^i in one pass, dropping those that can no longer
// be chosen), checked byte for byte against the Debian `ssdeep` CLI by ssdeep.test.ts.
//
// Speed: the piece hashes are FNV, of which only the low 6 bits are ever used, and these depend
// only on the low 6 bits of the state, of the byte and of the prime (0x01000193 = 19 mod 64).
// So three piece hashes share one int32 (lanes 11 bits apart: 19 * 63 < 2^11, no carry from one
// lane into the next) and one Math.imul steps all three. Equal hashes share a lane. The hot loop
// holds the rolling hash and two such words in locals and only stops at a reset point.

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const B64_CODES = Uint8Array.from(B64, (ch) => ch.charCodeAt(0))
const SPAMSUM_LENGTH = 64
const HALF = SPAMSUM_LENGTH / 2
const NUM_BLOCKHASHES = 31
const HASH_INIT = 0x27 // 0x28021967 mod 64
const PRIME_LOW = 19 // 0x01000193 mod 64
const WINDOW = 7
const TOTAL_MAX = 3 * 2 ** (NUM_BLOCKHASHES - 1) * SPAMSUM_LENGTH // as fuzzy.c: larger is an error
const LAST = 2 * NUM_BLOCKHASHES // st slot of fuzzy.c's "lasth", the hash past the last block size
const INV3 = 0xaaaaaaab // 3 * INV3 == 1 (mod 2^32)
// The hot loops spell these as literals: module constants cost a context load per use in V8.
//   0xfc1f83f = 0x3f | 0x3f << 11 | 0x3f << 22, the three lanes
//   c * 0x400801 = c | c << 11 | c << 22, a byte at the bottom of each lane (its bits 6-7 land
//   on lane bits that the mask clears before the next multiply)

/** Block size of context i: 3 * 2^i (a double, so that * 64 cannot overflow). */
const blockSize = (i: number): number => 3 * 2 ** i

/**
 * The hot loop, a small free function so that V8 can keep its state in registers. Feeds d[i..e)
 * (i >= 7, so the rolling window lies in d) to the rolling hash and to the lane words; stops at
 * the first reset point of block size 3*2^bs. io = [h1, r, h3, word0, word1, v, full, last] in
 * and out, with r = h1 + h2 + 1 and v = r + h3 = roll_sum + 1. Returns the index of that byte, or
 * e. If full = 2^bs, bs's digest is full and a reset point of bs alone (not of 2*bs) only changes
 * its last char: then it goes on, with lane 0 (bs's piece hash) at the last such point in last.
 */
function scan(d: Uint8Array, i: number, e: number, bs: number, io: Int32Array): number {
  const low = (1 << bs) - 1
  let h1 = io[0]!, r = io[1]!, h3 = io[2]!, w0 = io[3]!, w1 = io[4]!
  let c: number, old: number, x: number
  let v = 0
  let j = i
  while (j < e) {
    // Written out twice: a back edge every other byte is measurably faster in V8.
    for (;;) {
      c = d[j]!
      old = d[j - 7]!
      r = (r + ((c << 3) - old - h1)) | 0
      h1 = (h1 + (c - old)) | 0
      h3 = (h3 << 5) ^ c
      x = Math.imul(c, 0x400801)
      w0 = Math.imul(w0 & 0xfc1f83f, 19) ^ x
      w1 = Math.imul(w1 & 0xfc1f83f, 19) ^ x
      v = (r + h3) | 0
      // v == 0 mod 3*2^bs; v = 0 (roll_sum 2^32-1) is not one. 0xaaaaaaab = 1/3 (mod 2^32).
      if ((v & low) === 0 && v !== 0 && Math.imul(v, 0xaaaaaaab) >>> 0 <= 0x55555555) break
      if (++j === e) break
      c = d[j]!
      old = d[j - 7]!
      r = (r + ((c << 3) - old - h1)) | 0
      h1 = (h1 + (c - old)) | 0
      h3 = (h3 << 5) ^ c
      x = Math.imul(c, 0x400801)
      w0 = Math.imul(w0 & 0xfc1f83f, 19) ^ x
      w1 = Math.imul(w1 & 0xfc1f83f, 19) ^ x
      v = (r + h3) | 0
      if ((v & low) === 0 && v !== 0 && Math.imul(v, 0xaaaaaaab) >>> 0 <= 0x55555555) break
      if (++j === e) break
    }
    if (j === e || (v & io[6]!) === 0) break // (kept out of the loop above: slower in there)
    io[7] = w0 & 0x3f
    j++
  }
  io[0] = h1
  io[1] = r
  io[2] = h3
  io[3] = w0
  io[4] = w1
  io[5] = v
  return j
}

/** Steps one more lane word over d[i..e): the rare segments with more than six live hashes. */
function fold(d: Uint8Array, i: number, e: number, w: number): number {
  for (let k = i; k < e; k++) w = Math.imul(w & 0xfc1f83f, 19) ^ Math.imul(d[k]!, 0x400801)
  return w
}

export class SsdeepHasher {
  private total = 0
  // Rolling hash (fuzzy.c roll_state): h1 = sum of the window, r = h1 + h2 + 1, h3 shift/xor.
  private h1 = 0
  private r = 1
  private h3 = 0
  private readonly tail = new Uint8Array(WINDOW) // the last 7 bytes seen, oldest first
  // Block size i: piece hash st[2i], half hash st[2i+1] (both 0..63), digest so far.
  private readonly st = new Int32Array(2 * NUM_BLOCKHASHES + 1).fill(HASH_INIT)
  private readonly dindex = new Int32Array(NUM_BLOCKHASHES)
  private readonly digests = new Uint8Array(NUM_BLOCKHASHES * SPAMSUM_LENGTH)
  private readonly halfDigest = new Uint8Array(NUM_BLOCKHASHES)
  private bhstart = 0
  private bhend = 1
  private needLast = false
  // While scan() runs, st slot chains[n] rides in lane lanes[n]: word t/3, bits 11*(t%3).
  private readonly chains = new Int32Array(2 * NUM_BLOCKHASHES + 1)
  private readonly lanes = new Int32Array(2 * NUM_BLOCKHASHES + 1)
  private readonly laneOf = new Int8Array(64)
  private readonly words = new Int32Array(Math.ceil((2 * NUM_BLOCKHASHES + 1) / 3))
  private readonly io = new Int32Array(8)
  private nchains = 0
  private nlanes = 0
  private dirty = false

  update(chunk: Uint8Array): this {
    const n = chunk.length
    const head = n < WINDOW ? n : WINDOW
    for (let j = 0; j < head; j++) this.step(chunk[j]!, this.tail[j]!)
    if (n > WINDOW) this.run(chunk, WINDOW, n)
    const tail = this.tail
    if (n >= WINDOW) {
      for (let k = 0; k < WINDOW; k++) tail[k] = chunk[n - WINDOW + k]!
    } else {
      tail.copyWithin(0, n)
      for (let k = 0; k < n; k++) tail[WINDOW - n + k] = chunk[k]!
    }
    this.reduce(this.total)
    return this
  }

  /** fuzzy_digest() without flags, as `ssdeep` prints it: "blocksize:hash1:hash2". */
  digest(): string {
    const { st, dindex, digests, bhstart, bhend, total } = this
    if (total > TOTAL_MAX) throw new RangeError(`ssdeep: input longer than ${TOTAL_MAX} bytes`)
    const rolling = (this.r - 1 + this.h3) | 0
    let bi = bhstart
    while (blockSize(bi) * SPAMSUM_LENGTH < total) bi++
    if (bi >= bhend) bi = bhend - 1
    while (bi > bhstart && dindex[bi]! < HALF) bi--
    let len = dindex[bi]!
    let out = `${blockSize(bi)}:${this.chars(bi, len)}`
    // The piece still open; else a full digest's 64th char (it has no terminating 0 then).
    const last = digests[bi * SPAMSUM_LENGTH + len]!
    if (rolling !== 0) out += B64[st[2 * bi]!]
    else if (last !== 0) out += String.fromCharCode(last)
    out += ':'
    if (bi < bhend - 1) {
      bi++
      len = Math.min(dindex[bi]!, HALF - 1)
      out += this.chars(bi, len)
      if (rolling !== 0) out += B64[st[2 * bi + 1]!]
      else if (this.halfDigest[bi] !== 0) out += String.fromCharCode(this.halfDigest[bi]!)
    } else if (rolling !== 0) {
      out += B64[bi === 0 ? st[0]! : st[LAST]!]
    }
    return out
  }

  private chars(bi: number, len: number): string {
    const start = bi * SPAMSUM_LENGTH
    return String.fromCharCode(...this.digests.subarray(start, start + len))
  }

  /** One byte the plain way, state in fields: the first 7 bytes of each chunk. */
  private step(c: number, old: number): void {
    const h1 = this.h1
    this.r = (this.r + ((c << 3) - old - h1)) | 0
    this.h1 = h1 + c - old
    this.h3 = (this.h3 << 5) ^ c
    const st = this.st
    for (let k = 2 * this.bhstart; k < 2 * this.bhend; k++) st[k] = (Math.imul(st[k]!, PRIME_LOW) ^ c) & 0x3f
    if (this.needLast) st[LAST] = (Math.imul(st[LAST]!, PRIME_LOW) ^ c) & 0x3f
    const v = (this.r + this.h3) | 0
    this.total++
    if ((v & ((1 << this.bhstart) - 1)) === 0 && v !== 0 && Math.imul(v, INV3) >>> 0 <= 0x55555555) {
      this.trigger(v, this.total)
    }
  }

  /** Bytes s..e-1 of d, s >= 7, a segment (from reset point to reset point) at a time. */
  private run(d: Uint8Array, s: number, e: number): void {
    const { words, io } = this
    const base = this.total - s
    io[0] = this.h1
    io[1] = this.r
    io[2] = this.h3
    let nwords = this.pack()
    for (let i = s; i < e; ) {
      const bhstart = this.bhstart
      io[3] = words[0]!
      io[4] = words[1]!
      io[6] = this.dindex[bhstart] === SPAMSUM_LENGTH - 1 && bhstart + 1 < this.bhend ? 1 << bhstart : 0
      io[7] = -1
      const j = scan(d, i, e, bhstart, io)
      const end = j < e ? j + 1 : e
      words[0] = io[3]!
      words[1] = io[4]!
      for (let w = 2; w < nwords; w++) words[w] = fold(d, i, end, words[w]!)
      if (io[7]! >= 0) this.digests[bhstart * SPAMSUM_LENGTH + SPAMSUM_LENGTH - 1] = B64_CODES[io[7]!]!
      this.unpack()
      i = end
      if (j === e) break
      this.dirty = false
      this.trigger(io[5]!, base + end)
      if (this.dirty) nwords = this.pack() // after a reset, a new or a dropped block size
    }
    this.h1 = io[0]!
    this.r = io[1]!
    this.h3 = io[2]!
    this.total = base + e
  }

  /**
   * Lays the live hashes out in lanes; returns the number of words used. Equal hashes share a
   * lane: every byte permutes the 64 values alike, so they stay equal until one is reset. A half
   * hash equal by construction (fewer than 32 chars) is copied in unpack(), and bhstart's is left
   * out: digest() only ever reads the half hash of the block size after the one it picks.
   */
  private pack(): number {
    const { dindex, bhstart } = this
    this.laneOf.fill(-1)
    this.words.fill(0)
    this.nchains = this.nlanes = 0
    for (let k = bhstart; k < this.bhend; k++) {
      this.addChain(2 * k)
      if (k > bhstart && dindex[k]! >= HALF) this.addChain(2 * k + 1)
    }
    if (this.needLast) this.addChain(LAST)
    return Math.ceil(this.nlanes / 3)
  }

  private addChain(slot: number): void {
    const value = this.st[slot]!
    let t = this.laneOf[value]!
    if (t < 0) {
      t = this.laneOf[value] = this.nlanes++
      this.words[(t / 3) | 0]! |= value << (11 * (t % 3))
    }
    this.chains[this.nchains] = slot
    this.lanes[this.nchains++] = t
  }

  private unpack(): void {
    const { st, chains, lanes, words, dindex } = this
    for (let n = 0; n < this.nchains; n++) {
      const t = lanes[n]!
      st[chains[n]!] = (words[(t / 3) | 0]! >>> (11 * (t % 3))) & 0x3f
    }
    for (let k = this.bhstart; k < this.bhend; k++) if (dindex[k]! < HALF) st[2 * k + 1] = st[2 * k]!
  }

  /** A reset point: v (roll_sum + 1) is a non-zero multiple of 3*2^bhstart; pos = bytes so far. */
  private trigger(v: number, pos: number): void {
    const { st, dindex, digests, halfDigest } = this
    let q = Math.imul(v, INV3) >>> this.bhstart // v / 3 / 2^bhstart: bit k clear = next size too
    let i = this.bhstart
    do {
      if (dindex[i] === 0) this.fork()
      const di = dindex[i]!
      const at = i * SPAMSUM_LENGTH + di
      digests[at] = B64_CODES[st[2 * i]!]!
      halfDigest[i] = B64_CODES[st[2 * i + 1]!]!
      if (di < SPAMSUM_LENGTH - 1) {
        // Room left: start a new piece. A full digest instead folds the rest into its last char.
        digests[at + 1] = 0
        dindex[i] = di + 1
        this.dirty = true
        st[2 * i] = HASH_INIT
        if (di + 1 < HALF) {
          st[2 * i + 1] = HASH_INIT
          halfDigest[i] = 0
        }
      }
      if (q & 1) break
      q >>>= 1
    } while (++i < this.bhend)
    this.reduce(pos)
  }

  /** First reset point of the largest block size: start the next one (fuzzy_try_fork_blockhash). */
  private fork(): void {
    const { st, bhend } = this
    if (bhend < NUM_BLOCKHASHES) {
      st[2 * bhend] = st[2 * bhend - 2]!
      st[2 * bhend + 1] = st[2 * bhend - 1]!
      this.dindex[bhend] = 0
      this.digests[bhend * SPAMSUM_LENGTH] = 0
      this.halfDigest[bhend] = 0
      this.bhend = bhend + 1
      this.dirty = true
    } else if (!this.needLast) {
      this.needLast = true
      st[LAST] = st[2 * bhend - 2]!
      this.dirty = true
    }
  }

  /**
   * Drops the smallest block size once digest() can no longer pick it whatever follows: the size
   * guess is already past it and the next size has 32 chars. Eager, unlike fuzzy.c (which only
   * tries on a full digest), but the digest is the same: the dropped sizes are never read.
   */
  private reduce(pos: number): void {
    while (
      this.bhend - this.bhstart >= 2 &&
      blockSize(this.bhstart) * SPAMSUM_LENGTH < pos &&
      this.dindex[this.bhstart + 1]! >= HALF
    ) {
      this.bhstart++
      this.dirty = true
    }
  }
}

/** ssdeep digest of a whole buffer, as `ssdeep -s -b` prints it: "blocksize:hash1:hash2". */
export function ssdeep(data: Uint8Array): string {
  return new SsdeepHasher().update(data).digest()
}
