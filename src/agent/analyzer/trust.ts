// The decrypting proxy's CA, trusted in the guest for the run (docs/network.md): when the host
// stored it next to analysis.conf (TRUSTED_CA_FILE), it is added to the system's trust store
// before the sample starts and removed after the analysis.
// - Linux: /usr/local/share/ca-certificates/ + update-ca-certificates (Debian, Ubuntu), which
//   rebuilds /etc/ssl/certs, the bundle OpenSSL, curl and wget read.
// - Windows: `certutil -addstore -f Root`, removed by its SHA-1 thumbprint (not testable on the
//   machines Aviary is developed on: Wine has no certutil).
import { spawnSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { copyFileSync, existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { TRUSTED_CA_FILE } from '../../guest-protocol/agent-api.js'
import type { NetlogLog } from './netlog.js'

const LINUX_DIR = '/usr/local/share/ca-certificates'

/** Trusts the CA if the host sent one; returns what undoes it (null: nothing was done). */
export function trustProxyCa(analyzerDir: string, run: string | null, log: NetlogLog): (() => void) | null {
  const pem = join(analyzerDir, TRUSTED_CA_FILE)
  if (!existsSync(pem)) return null
  let cert: X509Certificate
  try {
    cert = new X509Certificate(readFileSync(pem))
  } catch (err) {
    log.error(`the proxy's CA is not a certificate: ${(err as Error).message}`)
    return null
  }
  if (process.platform === 'win32') {
    const thumb = cert.fingerprint.replace(/:/g, '')
    const r = spawnSync('certutil', ['-addstore', '-f', 'Root', pem], { stdio: 'ignore', windowsHide: true, timeout: 60_000 })
    if (r.status !== 0) {
      log.error(`certutil could not add the proxy's CA to the Root store (${r.error?.message ?? `exit ${r.status}`}): TLS is not decrypted`)
      return null
    }
    log.info(`the proxy's CA (${cert.subject.split('\n').join(', ')}) is trusted for this run`)
    return once(() => { spawnSync('certutil', ['-delstore', 'Root', thumb], { stdio: 'ignore', windowsHide: true, timeout: 60_000 }) })
  }
  const dest = join(LINUX_DIR, `aviary-${run ?? 'proxy'}.crt`)
  try {
    copyFileSync(pem, dest)
  } catch (err) {
    log.error(`cannot add the proxy's CA to ${LINUX_DIR}: ${(err as Error).message}: TLS is not decrypted`)
    return null
  }
  const r = spawnSync('update-ca-certificates', [], { stdio: 'ignore', timeout: 60_000 })
  if (r.status !== 0) {
    rmSync(dest, { force: true })
    log.error(`update-ca-certificates failed (${r.error?.message ?? `exit ${r.status}`}): TLS is not decrypted`)
    return null
  }
  log.info(`the proxy's CA (${cert.subject.split('\n').join(', ')}) is trusted for this run`)
  return once(() => {
    rmSync(dest, { force: true })
    spawnSync('update-ca-certificates', ['--fresh'], { stdio: 'ignore', timeout: 60_000 })
  })
}

function once(f: () => void): () => void {
  let done = false
  return () => {
    if (!done) {
      done = true
      f()
    }
  }
}
