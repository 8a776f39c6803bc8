// The decrypting proxy's CA, trusted in the guest for the run (docs/network.md): when the host
// stored it next to analysis.conf (TRUSTED_CA_FILE), it is added to the system's trust store
// before the analysis clock starts and removed after it stops, and neither may take long nor show
// as the sample's doing.
// - Linux: the certificate is appended to the bundle OpenSSL, curl, wget (GnuTLS) and Python read
//   (/etc/ssl/certs/ca-certificates.crt), and written as <subject hash>.<n> in /etc/ssl/certs (the
//   CA folder OpenSSL looks names up in; the host computes the hash, TRUSTED_CA_HASH_FILE). Not
//   update-ca-certificates: it took 18–37 s to add and 20–50 s (--fresh) to remove inside the
//   analysis window, and its hooks rewrote Java's cacerts, which then showed as a dropped file.
//   Undone exactly: a bundle the sample did not touch gets back its size, content and mtime (to
//   the nanosecond: the file snapshots compare mtimes) on the same inode; one the sample changed
//   (a sample that adds its own root CA: behaviour the report keeps) loses only our certificate;
//   the folder gets back its mtime when nothing else changed in it. Programs with a store of their
//   own (Java, Firefox, pinned clients) do not trust the CA.
// - Windows: `certutil -addstore -f Root`, removed by its SHA-1 thumbprint (not testable on the
//   machines Aviary is developed on: Wine has no certutil).
import { spawnSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import {
  appendFileSync, closeSync, existsSync, ftruncateSync, lstatSync, openSync, readFileSync, realpathSync, statSync, truncateSync,
  unlinkSync, utimesSync, writeFileSync, writeSync
} from 'node:fs'
import { join } from 'node:path'
import { TRUSTED_CA_FILE, TRUSTED_CA_HASH_FILE } from '../../guest-protocol/agent-api.js'
import type { NetlogLog } from './netlog.js'

export interface LinuxTrustStore {
  /** PEM bundles to append to (missing ones are skipped; symbolic links are followed). */
  bundles: string[]
  /** OpenSSL's CA folder, where certificates are found by subject hash. */
  certDir: string
}

/**
 * Debian and Ubuntu (and Alpine, Arch) keep the bundle here; /usr/lib/ssl/cert.pem and certs/ link
 * to it, so OpenSSL's default paths, curl's and Python's all lead here.
 */
export const LINUX_TRUST_STORE: LinuxTrustStore = { bundles: ['/etc/ssl/certs/ca-certificates.crt'], certDir: '/etc/ssl/certs' }

type Log = Pick<NetlogLog, 'info' | 'warning' | 'error'>

/** Trusts the CA if the host sent one; returns what undoes it (null: nothing was done). */
export function trustProxyCa(analyzerDir: string, log: Log, store: LinuxTrustStore = LINUX_TRUST_STORE): (() => void) | null {
  const pemFile = join(analyzerDir, TRUSTED_CA_FILE)
  if (!existsSync(pemFile)) return null
  let cert: X509Certificate
  try {
    cert = new X509Certificate(readFileSync(pemFile))
  } catch (err) {
    log.error(`the proxy's CA is not a certificate: ${(err as Error).message}`)
    return null
  }
  const subject = cert.subject.split('\n').join(', ')
  if (process.platform === 'win32') {
    const thumb = cert.fingerprint.replace(/:/g, '')
    const r = spawnSync('certutil', ['-addstore', '-f', 'Root', pemFile], { stdio: 'ignore', windowsHide: true, timeout: 60_000 })
    if (r.status !== 0) {
      log.error(`certutil could not add the proxy's CA to the Root store (${r.error?.message ?? `exit ${r.status}`}): TLS is not decrypted`)
      return null
    }
    log.info(`the proxy's CA (${subject}) is trusted for this run`)
    return once(() => { spawnSync('certutil', ['-delstore', 'Root', thumb], { stdio: 'ignore', windowsHide: true, timeout: 60_000 }) })
  }
  let hash: string | null = null
  try {
    const h = readFileSync(join(analyzerDir, TRUSTED_CA_HASH_FILE), 'utf8').trim()
    if (/^[0-9a-f]{8}$/.test(h)) hash = h
  } catch {
    // an older host: the bundle alone
  }
  const t0 = Date.now()
  const trusted = trustOnLinux(cert, hash, store, log)
  if (trusted === null) return null
  log.info(`the proxy's CA (${subject}) is trusted for this run: ${trusted.where.join(' and ')} (${Date.now() - t0} ms)`)
  return once(() => {
    const t1 = Date.now()
    const notes = trusted.undo()
    log.info(`the proxy's CA is no longer trusted: ${notes.join('; ')} (${Date.now() - t1} ms)`)
  })
}

interface Mark { size: bigint; mtimeNs: bigint; ino: bigint }

function mark(p: string): Mark | null {
  try {
    const st = statSync(p, { bigint: true })
    return { size: st.size, mtimeNs: st.mtimeNs, ino: st.ino }
  } catch {
    return null
  }
}

const same = (a: Mark | null, b: Mark | null): boolean => a !== null && b !== null && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ino === b.ino

/**
 * Sets a file's or folder's mtime to the nanosecond. GNU touch does (utimensat); Node's utimes
 * takes seconds as a double, about 240 ns apart at today's dates, which the snapshots would see.
 */
function setMtime(p: string, ns: bigint): void {
  const sec = ns / 1_000_000_000n
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0')
  const r = spawnSync('touch', ['-c', '-m', '-d', `@${sec}.${frac}`, '--', p], { stdio: 'ignore', timeout: 10_000 })
  if (r.status === 0 && mark(p)?.mtimeNs === ns) return
  try {
    const st = statSync(p)
    utimesSync(p, st.atime, Number(ns) / 1e9)
  } catch {
    // gone meanwhile
  }
}

interface Trusted { where: string[]; undo: () => string[] }

function trustOnLinux(cert: X509Certificate, hash: string | null, store: LinuxTrustStore, log: Log): Trusted | null {
  const pem = cert.toString().trimEnd() + '\n'
  const undos: (() => string)[] = []
  const where: string[] = []
  const seen = new Set<string>()
  for (const bundle of store.bundles) {
    let real: string
    try {
      real = realpathSync(bundle)
      if (seen.has(real) || !statSync(real).isFile()) continue
    } catch {
      continue
    }
    seen.add(real)
    const before = mark(real)!
    let added: string
    try {
      added = before.size === 0n || readFileSync(real).at(-1) === 0x0a ? pem : `\n${pem}`
      appendFileSync(real, added)
    } catch (err) {
      log.error(`cannot add the proxy's CA to ${bundle}: ${(err as Error).message}`)
      continue
    }
    const left = mark(real)
    where.push(`added to ${bundle}`)
    undos.push(() => undoBundle(bundle, real, added, pem, before, left))
  }
  if (hash !== null) {
    const linked = addToCertDir(store.certDir, hash, cert, pem, log)
    if (linked !== null) {
      where.push(linked.where)
      undos.push(linked.undo)
    }
  }
  if (undos.length === 0) {
    log.error(`no trust store to add the proxy's CA to (${[...store.bundles, store.certDir].join(', ')}): TLS is not decrypted`)
    return null
  }
  return { where, undo: () => undos.reverse().map((u) => u()) }
}

function undoBundle(bundle: string, real: string, added: string, pem: string, before: Mark, left: Mark | null): string {
  const now = mark(real)
  if (now === null) return `${bundle} is gone (the sample removed it)`
  try {
    if (same(now, left)) {
      // Untouched since we appended: cut back to what it was, on the same inode.
      truncateSync(real, Number(before.size))
      setMtime(real, before.mtimeNs)
      return `${bundle} restored as it was`
    }
    // The sample changed it: only what we appended comes out; the file keeps the sample's mtime.
    const text = readFileSync(real, 'latin1')
    let cut = added
    let at = text.lastIndexOf(added)
    if (at < 0) {
      cut = pem
      at = text.lastIndexOf(pem)
    }
    if (at < 0) return `${bundle} was changed by the sample and no longer holds the CA`
    const out = Buffer.from(text.slice(0, at) + text.slice(at + cut.length), 'latin1')
    const fd = openSync(real, 'r+')
    try {
      writeSync(fd, out, 0, out.length, 0)
      ftruncateSync(fd, out.length)
    } finally {
      closeSync(fd)
    }
    setMtime(real, now.mtimeNs)
    return `${bundle} was changed by the sample: only the CA was taken out of it`
  } catch (err) {
    return `${bundle} could not be restored: ${(err as Error).message}`
  }
}

function addToCertDir(dir: string, hash: string, cert: X509Certificate, pem: string, log: Log): { where: string; undo: () => string } | null {
  const dirBefore = mark(dir)
  if (dirBefore === null) return null
  // <hash>.0, .1, ...: certificates whose subjects hash alike take the next number, as c_rehash does.
  for (let n = 0; n < 10; n++) {
    const file = join(dir, `${hash}.${n}`)
    let exists = true
    try {
      lstatSync(file)
    } catch {
      exists = false
    }
    if (exists) {
      try {
        if (new X509Certificate(readFileSync(file)).raw.equals(cert.raw)) return null // already trusted by the guest itself
      } catch {
        // a dangling link or another file: not ours, try the next number
      }
      continue
    }
    try {
      writeFileSync(file, pem, { flag: 'wx', mode: 0o644 })
    } catch (err) {
      log.warning(`cannot add the proxy's CA to ${dir}: ${(err as Error).message}`)
      return null
    }
    const dirLeft = mark(dir)
    return {
      where: `written as ${file}`,
      undo: () => {
        let now: string
        try {
          now = readFileSync(file, 'utf8')
        } catch {
          return `${file} is gone (the sample removed it)`
        }
        if (now !== pem) return `${file} was changed by the sample: left as it is`
        // Nothing else added or removed in the folder meanwhile: its mtime goes back too.
        const untouched = same(mark(dir), dirLeft)
        try {
          unlinkSync(file)
        } catch (err) {
          return `${file} could not be removed: ${(err as Error).message}`
        }
        if (untouched) setMtime(dir, dirBefore.mtimeNs)
        return `${file} removed`
      }
    }
  }
  log.warning(`${dir} has no free name for subject hash ${hash}: the CA is only in the bundle`)
  return null
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
