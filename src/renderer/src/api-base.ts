// Where the analysis API is: the desktop bridge knows; in a plain browser, `?api=<url>`;
// otherwise the page is served by the service itself and the API is its own origin.
export async function resolveApiBaseUrl(): Promise<string> {
  if (window.aviary) return trimSlash(await window.aviary.apiBaseUrl())
  const param = new URLSearchParams(window.location.search).get('api')
  if (param) {
    const url = new URL(param, window.location.href)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`?api= must be an http(s) URL, not ${url.protocol}`)
    return trimSlash(url.origin + url.pathname)
  }
  return window.location.origin
}

const trimSlash = (url: string): string => url.replace(/\/+$/, '')
