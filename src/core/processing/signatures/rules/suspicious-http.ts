// Fires on HTTP requests an ordinary program would not make: to a raw IP address instead of a host
// name, or without a user agent (none, empty or "-"), or with a forged one of a known malware habit
// (a bare "Mozilla/4.0", "Mozilla/5.0" with nothing after it: real browsers append their platform).
// A tool's own agent (curl/8.5.0, Wget/1.21, python-requests/2.31) is not one: ordinary scripts and
// installers send those (and so does the analysis package that opens a URL task's URL with wget or
// curl), and CAPE's HTTP signature (network_cnc_http) counts a missing user agent, not a tool's.
import type { SignatureRule } from '../signature'
import { objs, str } from '../../../reporting/report-view'
import { isIP } from 'node:net'

export function suspiciousAgent(ua: string): boolean {
  const u = ua.trim()
  if (u === '' || u === '-') return true
  // A bare "Mozilla/x.y" (nothing after it) is a hand-written agent; real browsers append a platform.
  return /^mozilla\/\d\.\d$/i.test(u)
}

/** The request as a reader writes it: `uri` is already a full URL in Cuckoo's http entries. */
export function requestLine(h: Record<string, unknown>): string {
  const uri = str(h, 'uri')
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(uri) ? uri : `http://${str(h, 'host')}${uri || str(h, 'path')}`
  return `${str(h, 'method') || 'GET'} ${url}`
}

export const suspiciousHttp: SignatureRule = {
  name: 'suspicious_http',
  description: 'Makes HTTP requests to a raw IP address, or without a user agent or with a forged one',
  severity: 2,
  categories: ['network'],
  ttp: ['T1071.001'],
  run(report, mark) {
    for (const h of objs(report, 'network', 'http')) {
      const host = str(h, 'host').replace(/:\d+$/, '').replace(/^\[|\]$/g, '')
      const line = requestLine(h)
      const ua = h['user-agent']
      if (isIP(host) !== 0) mark.ioc('url', line, 'request to a raw IP address')
      if (typeof ua !== 'string' || suspiciousAgent(ua)) {
        const none = typeof ua !== 'string' || ua.trim() === '' || ua.trim() === '-'
        mark.ioc('user-agent', typeof ua === 'string' ? ua : '', `${none ? 'no' : 'forged'} user agent in ${line}`)
      }
    }
  }
}
