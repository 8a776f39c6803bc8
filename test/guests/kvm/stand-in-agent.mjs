// Stand-in for Aviary's guest agent until out/agent/aviary-agent-linux-x64 exists: the smallest
// part of the Cuckoo 2 agent protocol the test guest needs, run by the guest's node binary.
// GET / is the agent's hello; POST /execute (form `command`, `shell`) runs a command, which is
// how the test makes the guest send traffic the host captures. Not the product agent.
import { createServer } from 'node:http'
import { execFile } from 'node:child_process'

const send = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/') {
    return send(res, 200, { message: 'Cuckoo Agent!', version: '0.10', features: [] })
  }
  if (req.method === 'POST' && req.url === '/execute') {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      const form = new URLSearchParams(body)
      const command = form.get('command')
      if (!command) return send(res, 400, { message: 'No command has been provided', error_code: 400 })
      const [file, args] = form.has('shell') ? ['/bin/sh', ['-c', command]] : [command, []]
      execFile(file, args, { timeout: 60_000 }, (err, stdout, stderr) => {
        // A command that ran and failed still answers 200 (as Cuckoo's agent does); one that
        // could not start is a 500.
        if (err && typeof err.code === 'string') return send(res, 500, { message: String(err), error_code: 500 })
        send(res, 200, { message: 'Successfully executed command', stdout, stderr })
      })
    })
    return
  }
  send(res, 404, { message: 'Route not found', error_code: 404 })
}).listen(Number(process.argv[3] ?? 8000), process.argv[2] ?? '0.0.0.0', () => {
  console.log('aviary-guest: stand-in agent listening')
})
