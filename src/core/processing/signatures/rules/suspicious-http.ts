// Fires on HTTP requests an ordinary browser or updater would not make: to a raw IP address instead
// of a host name, or with a user agent that is empty, a scripting library's default, a download
// tool, or a known malware habit (e.g. a bare "Mozilla/4.0", or "Mozilla/5.0" with nothing after it).
// A URL task's own fetch is not the sample's doing: the analysis package opens the submitted URL
// with a browser, or with wget or curl where the guest has no browser, so on a URL task the user
// agent of the request for the submitted URL (and every request sent with it) is the package's.
import type { SignatureRule } from '../signature'
import { obj, objs, str } from '../../../reporting/report-view'
import { isIP } from 'node:net'

const TOOL_AGENTS = /^(python-requests|python-urllib|python\/|curl\/|wget\/|go-http-client|java\/|libwww-perl|powershell|winhttp|microsoft bits|okhttp|axios|node-fetch|aiohttp|nsis_inetc|autoit|lwp::|user-agent)/i

export function suspiciousAgent(ua: string): boolean {
  const u = ua.trim()
  if (u === '' || u === '-') return true
  // A bare "Mozilla/x.y" (nothing after it) is a hand-written agent; real browsers append a platform.
  if (/^mozilla\/\d\.\d$/i.test(u)) return true
  if (/^mozilla\//i.test(u)) return false
  return TOOL_AGENTS.test(u)
}

/** The request as a reader writes it: `uri` is already a full URL in Cuckoo's http entries. */
export function requestLine(h: Record<string, unknown>): string {
  const uri = str(h, 'uri')
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(uri) ? uri : `http://${str(h, 'host')}${uri || str(h, 'path')}`
  return `${str(h, 'method') || 'GET'} ${url}`
}

/** A URL without its fragment and with a trailing slash on a bare host, for comparing. */
function normalUrl(u: string): string {
  try {
    const url = new URL(u)
    url.hash = ''
    return url.href
  } catch {
    return u
  }
}

export const suspiciousHttp: SignatureRule = {
  name: 'suspicious_http',
  description: 'Makes HTTP requests to a raw IP address or with an unusual user agent',
  severity: 2,
  categories: ['network'],
  ttp: ['T1071.001'],
  run(report, mark) {
    const http = objs(report, 'network', 'http')
    const target = obj(report, 'target')
    const packageAgents = new Set<string>()
    if (str(target, 'category') === 'url' && str(target, 'url') !== '') {
      const wanted = normalUrl(str(target, 'url'))
      for (const h of http) {
        const ua = h['user-agent']
        if (typeof ua === 'string' && normalUrl(requestLine(h).replace(/^\S+ /, '')) === wanted) packageAgents.add(ua)
      }
    }
    for (const h of http) {
      const host = str(h, 'host').replace(/:\d+$/, '').replace(/^\[|\]$/g, '')
      const line = requestLine(h)
      const ua = h['user-agent']
      if (isIP(host) !== 0) mark.ioc('url', line, 'request to a raw IP address')
      if (typeof ua === 'string' && packageAgents.has(ua)) continue
      if (typeof ua !== 'string' || suspiciousAgent(ua)) {
        mark.ioc('user-agent', typeof ua === 'string' ? ua : '', `unusual user agent in ${line}`)
      }
    }
  }
}
