// Fires on HTTP requests an ordinary browser or updater would not make: to a raw IP address instead
// of a host name, or with a user agent that is empty, a scripting library's default, a download
// tool, or a known malware habit (e.g. a bare "Mozilla/4.0", or "Mozilla/5.0" with nothing after it).
import type { SignatureRule } from '../signature'
import { objs, str } from '../../../reporting/report-view'
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

export const suspiciousHttp: SignatureRule = {
  name: 'suspicious_http',
  description: 'Makes HTTP requests to a raw IP address or with an unusual user agent',
  severity: 2,
  categories: ['network'],
  ttp: ['T1071.001'],
  run(report, mark) {
    for (const h of objs(report, 'network', 'http')) {
      const host = str(h, 'host').replace(/:\d+$/, '').replace(/^\[|\]$/g, '')
      const url = `${str(h, 'method') || 'GET'} http://${str(h, 'host')}${str(h, 'uri') || str(h, 'path')}`
      const ua = h['user-agent']
      if (isIP(host) !== 0) mark.ioc('url', url, 'request to a raw IP address')
      if (typeof ua !== 'string' || suspiciousAgent(ua)) {
        mark.ioc('user-agent', typeof ua === 'string' ? ua : '', `unusual user agent in ${url}`)
      }
    }
  }
}
