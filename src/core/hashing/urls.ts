// The http(s) URLs written in a file's bytes (target.file.urls, dropped[].urls, as Cuckoo 2's
// File.get_urls()), found as the bytes stream by, in ASCII and in UTF-16LE. Here, beside the
// hashes, because the hashing workers read a file once for both (file-digest.ts).
/** Bytes of a file searched for URLs (a sample's URLs are in its code and data, not in a tail of gigabytes). */
export const URL_SCAN_BYTES = 32 * 1024 * 1024
/** Distinct URLs kept per file, the first ones found; each at most MAX_URL_LENGTH characters. */
export const MAX_FILE_URLS = 1000
const MAX_URL_LENGTH = 2048
/** Bytes kept back at a chunk's end: a URL's scheme split by the chunk boundary ("htt" | "p://"), in UTF-16 too. */
const OVERLAP = 32

// An http(s) URL as samples write them: a host name or IPv4 address, an optional port, and a path
// of the characters URLs use. Bounded classes only: a linear scan over hostile bytes.
const URL_RE = /https?:\/\/[A-Za-z0-9.-]{1,253}(?::\d{1,5})?(?:[/?#][A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]{0,2000})?/g

const URL_CHAR = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]$/
const HTTP_ASCII = Buffer.from('http', 'latin1')
const HTTP_WIDE = Buffer.from('http', 'utf16le')

/**
 * Finds the http(s) URLs in a file's bytes as they stream by, in ASCII and in UTF-16LE (at either
 * byte alignment): Cuckoo 2's `File.get_urls()`, which searched the whole file with a regex.
 */
export class UrlScanner {
  private readonly found = new Set<string>()
  private tail = Buffer.alloc(0)
  private seen = 0

  update(chunk: Buffer): void {
    if (this.seen >= URL_SCAN_BYTES || this.found.size >= MAX_FILE_URLS) return
    const take = chunk.subarray(0, URL_SCAN_BYTES - this.seen)
    this.seen += take.length
    const data = this.tail.length > 0 ? Buffer.concat([this.tail, take]) : take
    const final = this.seen >= URL_SCAN_BYTES
    const resume = this.scanAll(data, final ? data.length : Math.max(0, data.length - OVERLAP), final)
    this.tail = final ? Buffer.alloc(0) : Buffer.from(data.subarray(resume))
  }

  result(): string[] {
    if (this.tail.length > 0) this.scanAll(this.tail, this.tail.length, true)
    this.tail = Buffer.alloc(0)
    return [...this.found]
  }

  /**
   * Adds the URLs of `data` that start before byte `cut`, as ASCII and as UTF-16LE at either
   * alignment. Unless `final`, a URL that reaches the end of `data` may go on in the next chunk:
   * it is left for the next pass, which starts at the byte returned.
   */
  private scanAll(data: Buffer, cut: number, final: boolean): number {
    let resume = cut
    const scan = (text: string, width: number, offset: number): void => {
      if (!text.includes('http')) return
      for (const m of text.matchAll(URL_RE)) {
        const start = offset + (m.index ?? 0) * width
        if (start >= cut || this.found.size >= MAX_FILE_URLS) return
        if (start + m[0].length * width >= data.length - width) {
          // It may go on: in the next chunk (read it then), or past URL_SCAN_BYTES (unknown: left out).
          if (!final) { resume = Math.min(resume, start); return }
          if (this.seen >= URL_SCAN_BYTES) continue
        }
        // Longer than the pattern takes: a run of URL characters, not a URL.
        if (URL_CHAR.test(text.charAt((m.index ?? 0) + m[0].length))) continue
        const url = m[0].replace(/[.,;:!?'")\]]+$/, '')
        if (url.length <= MAX_URL_LENGTH && /^https?:\/\/[A-Za-z0-9]/.test(url)) this.found.add(url)
      }
    }
    // Decoding is most of the cost: bytes that hold "http" in neither form have no URL to find.
    if (data.includes(HTTP_ASCII)) scan(data.toString('latin1'), 1, 0)
    if (data.includes(HTTP_WIDE)) {
      for (const align of [0, 1]) scan(data.subarray(align, data.length - ((data.length - align) % 2)).toString('utf16le'), 2, align)
    }
    return resume
  }
}
