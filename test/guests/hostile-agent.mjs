// A hostile "agent" for tests: it speaks enough of the Cuckoo agent protocol for the host to reach
// a chosen step, then misbehaves on one route. Runs inside a guest's network namespace in place
// of the real agent (test/guests/netns-guest.ts startAgent), as a compromised guest would:
//
//   node hostile-agent.mjs <route> <behaviour> [port]
//
// route: the path to misbehave on, e.g. / or /status or /store (GET or POST alike).
// behaviour:
//   endless    HTTP 200 and a body that never ends, as fast as the socket takes it
//   huge       HTTP 200 announcing (and sending) a 1 GiB body
//   drip       HTTP 200, then one byte of body every 2 s, forever
//   stall      takes the request, never answers
//   garbage    HTTP 200, application/json, random bytes
//   html       HTTP 200, text/html, a web page (the wrong content type and no JSON)
//   redirect   HTTP 302 to another host
//   flap       (status) the status changes at every poll and never becomes final
//   badstatus  (status) a status that is an object, not a string
//   cap        (status) running; meanwhile floods the result server named in the analysis.conf it
//              was sent (FILE 2 uploads) until the host cuts it off
// Every other route answers as a well-behaved agent that never finishes its analysis (status null).
// The first GET /status of each analysis (the host reads it before it starts the analyzer, right
// after GET /) is answered well too: what turns an agent hostile is the sample, which runs later.
import http from 'node:http'
import net from 'node:net'
import { randomBytes } from 'node:crypto'

const [route = '/status', behaviour = 'stall', portArg = '8000'] = process.argv.slice(2)
let polls = 0
let statusGets = 0
let conf = ''

function json(res, body, status = 200) {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

function behave(req, res) {
  switch (behaviour) {
    case 'endless': {
      res.writeHead(200, { 'content-type': 'application/json' })
      const chunk = Buffer.alloc(64 * 1024, 0x20)
      const pump = () => { while (!res.destroyed && res.write(chunk)); }
      res.on('drain', pump)
      pump()
      return
    }
    case 'huge': {
      const total = 1024 * 1024 * 1024
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': total })
      const chunk = Buffer.alloc(1024 * 1024, 0x20)
      let sent = 0
      const pump = () => {
        while (!res.destroyed && sent < total) {
          sent += chunk.length
          if (!res.write(chunk)) return
        }
        if (sent >= total) res.end()
      }
      res.on('drain', pump)
      pump()
      return
    }
    case 'drip': {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{')
      const t = setInterval(() => { if (res.destroyed) clearInterval(t); else res.write(' ') }, 2000)
      res.on('close', () => clearInterval(t))
      return
    }
    case 'stall':
      return // never answered; the socket stays open until the host gives up
    case 'garbage': {
      const body = randomBytes(2048)
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
      res.end(body)
      return
    }
    case 'html':
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html><body>It works!</body></html>')
      return
    case 'redirect':
      res.writeHead(302, { location: 'http://192.0.2.1/elsewhere', 'content-length': 0 })
      res.end()
      return
    case 'flap':
      json(res, { message: 'Analysis status', status: ['init', 'running', null, 'running', 'init'][polls++ % 5], description: null })
      return
    case 'badstatus':
      json(res, { message: 'Analysis status', status: { complete: true }, description: null })
      return
    case 'cap':
      json(res, { message: 'Analysis status', status: 'running', description: null })
      flood()
      return
    default:
      json(res, { message: `unknown behaviour ${behaviour}` }, 500)
  }
}

/** Uploads file after file to the result server of analysis.conf, until the host closes on it. */
let flooding = false
let generation = 0
function flood() {
  if (flooding) return
  const mine = generation
  const ip = /^ip = ([0-9.]+)/m.exec(conf)?.[1]
  const port = Number(/^port = (\d+)/m.exec(conf)?.[1])
  const run = /^aviary_run = ([0-9a-f]{32})/m.exec(conf)?.[1]
  if (!ip || !port) return
  flooding = true
  let n = 0
  const one = () => {
    const s = net.connect({ host: ip, port }, () => {
      s.write(`${run ? `AVIARY-RUN ${run}\n` : ''}FILE 2\nfiles/flood-${n++}.bin\n/tmp/flood\n\n`)
      const chunk = Buffer.alloc(256 * 1024, 0x41)
      let left = 8
      const pump = () => {
        while (left > 0) {
          left--
          if (!s.write(chunk)) return
        }
        s.end()
      }
      s.on('drain', pump)
      pump()
    })
    s.on('error', () => undefined)
    s.on('close', () => { if (n < 1000 && generation === mine) setTimeout(one, 10) })
  }
  one()
}

const server = http.createServer((req, res) => {
  const chunks = []
  req.on('data', (c) => { if (chunks.length < 1024) chunks.push(c) })
  req.on('end', () => {
    const url = req.url ?? '/'
    // The analysis.conf upload, kept for 'cap' (multipart: the INI text is in the body).
    if (url === '/store') {
      const body = Buffer.concat(chunks).toString('latin1')
      if (body.includes('[analysis]')) {
        conf = body.slice(body.indexOf('[analysis]'))
        flooding = false // a new analysis: a new flood
        generation++
      }
    }
    if (url === '/') statusGets = 0
    const firstStatus = url === '/status' && req.method === 'GET' && statusGets++ === 0
    if (url === route && !firstStatus) return behave(req, res)
    switch (url) {
      case '/': return json(res, { message: 'Hostile Agent', version: '0.10', features: ['execpy', 'execnode'] })
      case '/status': return json(res, { message: 'Analysis status', status: null, description: null })
      case '/environ': return json(res, { message: 'Environment variables', environ: { PATH: '/usr/bin' } })
      default: return json(res, { message: 'Successfully done' })
    }
  })
})
server.listen(Number(portArg), '0.0.0.0')
