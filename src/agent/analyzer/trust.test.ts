// The guest trusting the proxy's CA, on a real copy of Debian's trust store: openssl makes a CA
// and a certificate it signs (as the proxy forges them), and `openssl verify` says whether the
// store trusts it, through the bundle and through the CA folder. Undone, the store is exactly as
// before (content, inode, size and mtime to the nanosecond, the folder's mtime), unless the
// sample changed it meanwhile: then only our certificate goes.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { TRUSTED_CA_FILE, TRUSTED_CA_HASH_FILE } from '../../guest-protocol/agent-api'
import { trustProxyCa, type LinuxTrustStore } from './trust'

const work = mkdtempSync(path.join(tmpdir(), 'aviary-trust-'))
const analyzer = path.join(work, 'analyzer')
let leaf = ''
let otherRoot = ''
let hash = ''
const logs: string[] = []
const log = { info: (m: string) => logs.push(m), warning: (m: string) => logs.push(`warning: ${m}`), error: (m: string) => logs.push(`error: ${m}`) }

beforeAll(() => {
  const o = (n: string): string => path.join(work, n)
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', o('ca.key'), '-subj', '/O=Internal PKI/CN=Root CA 1A2B', '-days', '2',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', o('ca.crt')], { stdio: 'ignore' })
  mkdirSync(analyzer)
  copyFileSync(o('ca.crt'), path.join(analyzer, TRUSTED_CA_FILE))
  // What the host sends with it (src/core/network/mitm-ca.ts, subjectHash).
  hash = execFileSync('openssl', ['x509', '-noout', '-subject_hash', '-in', o('ca.crt')], { encoding: 'utf8' }).trim()
  writeFileSync(path.join(analyzer, TRUSTED_CA_HASH_FILE), `${hash}\n`)
  // A server certificate the proxy's CA signs, as the proxy forges them.
  execFileSync('openssl', ['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', o('leaf.key'), '-subj', '/CN=site.example', '-out', o('leaf.csr')], { stdio: 'ignore' })
  execFileSync('openssl', ['x509', '-req', '-in', o('leaf.csr'), '-CA', o('ca.crt'), '-CAkey', o('ca.key'), '-CAcreateserial',
    '-days', '2', '-out', o('leaf.crt')], { stdio: 'ignore' })
  leaf = o('leaf.crt')
  // A root CA of the sample's own.
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', o('other.key'), '-subj', '/CN=Sample Root', '-days', '2', '-out', o('other.crt')], { stdio: 'ignore' })
  otherRoot = readFileSync(o('other.crt'), 'utf8')
})

afterAll(() => rmSync(work, { recursive: true, force: true }))

let store: LinuxTrustStore
let n = 0
beforeEach(() => {
  logs.length = 0
  const certDir = path.join(work, `certs${++n}`)
  mkdirSync(certDir)
  const bundle = path.join(certDir, 'ca-certificates.crt')
  copyFileSync('/etc/ssl/certs/ca-certificates.crt', bundle)
  writeFileSync(path.join(certDir, 'README'), 'other files of the folder\n')
  // Times with nanoseconds Node's utimes could not set back.
  for (const f of [bundle, certDir]) execFileSync('touch', ['-m', '-d', '@1600000000.123456789', f])
  store = { bundles: [bundle], certDir }
})

/** Everything that tells one state of the store from another. */
function state(s: LinuxTrustStore): unknown {
  const files = readdirSync(s.certDir).sort().map((f) => {
    const p = path.join(s.certDir, f)
    const st = statSync(p, { bigint: true })
    return { f, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, sha: createHash('sha256').update(readFileSync(p)).digest('hex') }
  })
  return { files, dirMtimeNs: statSync(s.certDir, { bigint: true }).mtimeNs }
}

const verify = (args: string[]): boolean => spawnSync('openssl', ['verify', ...args, leaf], { stdio: 'ignore' }).status === 0
const byBundle = (): boolean => verify(['-no-CApath', '-CAfile', store.bundles[0]!])
const byFolder = (): boolean => verify(['-no-CAfile', '-CApath', store.certDir])

describe('trusting the proxy\'s CA in a Linux guest', () => {
  it('is trusted through the bundle and the CA folder, then the store is exactly as before', () => {
    const before = state(store)
    expect(byBundle()).toBe(false)
    expect(byFolder()).toBe(false)
    const untrust = trustProxyCa(analyzer, log, store)!
    expect(untrust).not.toBeNull()
    expect(byBundle()).toBe(true)
    expect(byFolder()).toBe(true)
    expect(readdirSync(store.certDir)).toContain(`${hash}.0`)
    // Nothing the sample can list names the tool.
    expect(readdirSync(store.certDir).join(' ')).not.toMatch(/aviary|mitm/i)
    untrust()
    expect(state(store)).toEqual(before)
    expect(byBundle()).toBe(false)
    expect(logs[0]).toMatch(/^the proxy's CA \(O=.*, CN=Root CA [0-9A-F]{4}\) is trusted for this run: added to .*ca-certificates\.crt and written as .*\.0 \(\d+ ms\)$/)
    expect(logs[1]).toMatch(/no longer trusted: .*\.0 removed; .*ca-certificates\.crt restored as it was/)
  })

  it('a sample that adds its own root CA keeps it: only ours comes out', () => {
    const bundle = store.bundles[0]!
    const original = readFileSync(bundle, 'utf8')
    const untrust = trustProxyCa(analyzer, log, store)!
    // The sample, meanwhile: its root in the bundle and a file of its own in the folder.
    writeFileSync(bundle, otherRoot, { flag: 'a' })
    writeFileSync(path.join(store.certDir, 'sample.pem'), otherRoot)
    execFileSync('touch', ['-m', '-d', '@1700000000.5', bundle])
    untrust()
    expect(readFileSync(bundle, 'utf8')).toBe(original + otherRoot)
    expect(statSync(bundle, { bigint: true }).mtimeNs).toBe(1_700_000_000_500_000_000n) // the sample's time of change
    expect(readdirSync(store.certDir).sort()).toEqual(['README', 'ca-certificates.crt', 'sample.pem'])
    expect(byBundle()).toBe(false)
    expect(logs[1]).toMatch(/changed by the sample: only the CA was taken out of it/)
  })

  it('restores a bundle that did not end with a newline, and does with the bundle alone when no hash came', () => {
    const bundle = store.bundles[0]!
    writeFileSync(bundle, readFileSync(bundle, 'utf8').trimEnd())
    execFileSync('touch', ['-m', '-d', '@1600000000.987654321', bundle, store.certDir])
    const before = state(store)
    const noHash = path.join(work, 'analyzer-nohash')
    mkdirSync(noHash, { recursive: true })
    copyFileSync(path.join(analyzer, TRUSTED_CA_FILE), path.join(noHash, TRUSTED_CA_FILE))
    const untrust = trustProxyCa(noHash, log, store)!
    expect(byBundle()).toBe(true)
    expect(byFolder()).toBe(false)
    untrust()
    expect(state(store)).toEqual(before)
  })

  it('does nothing without a CA from the host, and says so when there is no store to add it to', () => {
    expect(trustProxyCa(path.join(work, 'empty'), log, store)).toBeNull()
    expect(trustProxyCa(analyzer, log, { bundles: [path.join(work, 'none.crt')], certDir: path.join(work, 'none') })).toBeNull()
    expect(logs.at(-1)).toMatch(/^error: no trust store to add the proxy's CA to .*: TLS is not decrypted$/)
  })
})
