// URLs for URL tasks: http and https only, with a real host (a dotted name, an IP address or
// localhost), as Cuckoo's validator required. A value without a scheme gets `http://`, and the
// submitted text is kept otherwise (no added trailing slash), as Cuckoo stored it.

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//

export function normalizeUrl(raw: string): string | null {
  const text = raw.trim()
  if (!text || /[\s\u0000-\u001f\u007f]/.test(text)) return null // eslint-disable-line no-control-regex
  const candidate = SCHEME.test(text) ? text : `http://${text}`
  let url: URL
  try {
    url = new URL(candidate)
  } catch {
    return null
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
  const host = url.hostname
  // WHATWG parsing turns "http://5" into host 0.0.0.5: an IPv4 host must be written as one.
  const ipv4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(host) && candidate.includes(host)
  const ok = host === 'localhost' || /^\[[0-9a-f:.]+\]$/i.test(host) || ipv4 ||
    /^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+([a-z]{2,63}|xn--[a-z0-9-]{1,59})\.?$/i.test(host)
  return ok ? candidate : null
}
