// The proxy's CA with real parts: openssl makes it, Debian's mitmproxy 8.1 loads it (its own
// CertStore, and a real mitmdump whose forged certificates a TLS client then verifies against the
// certificate the guest would get). Concurrent callers on a fresh folder get one CA; a folder with
// a CA mitmproxy made is used as it is; a half-written or mismatched one is never used.
import { afterAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ensureMitmCa, MITM_FILES, subjectHash, usableCa } from './mitm-ca'

const work = mkdtempSync(path.join(tmpdir(), 'aviary-mitm-ca-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))
let n = 0
const fresh = (): string => path.join(work, `conf${++n}`)

/** What mitmproxy 8.1 itself reads from a confdir: the CA it would sign with, or its error. */
function mitmproxyLoads(confdir: string): { cn: string; org: string; pem: string } {
  const py = 'import json, sys\nfrom mitmproxy.certs import CertStore\n' +
    's = CertStore.from_store(sys.argv[1], "mitmproxy", 2048)\n' +
    'print(json.dumps({"cn": s.default_ca.cn, "org": s.default_ca.organization, "pem": s.default_ca.to_pem().decode()}))\n'
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', py, confdir], { encoding: 'utf8' })) as { cn: string; org: string; pem: string }
}

describe('the proxy\'s CA', () => {
  it('is made once for callers that come together, in exactly the files mitmproxy loads, with a neutral subject', async () => {
    const dir = fresh()
    const logs: string[] = []
    const all = await Promise.all(Array.from({ length: 6 }, () => ensureMitmCa(dir, { log: (m) => logs.push(m) })))
    // One making, shared: every caller gets its result.
    expect(all.every((c) => c === all[0] && c.made)).toBe(true)
    expect(logs.filter((l) => l.startsWith('made the proxy\'s CA'))).toHaveLength(1)
    expect(readdirSync(dir).sort()).toEqual([MITM_FILES.cert, MITM_FILES.dhparam, MITM_FILES.ca].sort())
    expect(readFileSync(path.join(dir, MITM_FILES.ca)).length).toBeGreaterThan(0)

    const guestCert = readFileSync(all[0]!.cert, 'utf8')
    const loaded = mitmproxyLoads(dir)
    // mitmproxy signs with the very certificate the guest gets, and made none of its own.
    expect(new X509Certificate(loaded.pem).raw.equals(new X509Certificate(guestCert).raw)).toBe(true)
    expect(readdirSync(dir)).toHaveLength(3)
    const cert = new X509Certificate(guestCert)
    expect(cert.ca).toBe(true)
    expect(cert.subject).toBe(cert.issuer)
    expect(`${cert.subject} ${loaded.cn} ${loaded.org}`).not.toMatch(/mitm|aviary/i)
    expect(cert.subject).toMatch(/^O=.+\nCN=Root CA [0-9A-F]{4}$/)
    // Valid from a month back: a guest whose clock lags the host's still accepts it.
    expect(Date.now() - Date.parse(cert.validFrom)).toBeGreaterThan(29 * 86_400_000)
    expect(Date.parse(cert.validTo) - Date.now()).toBeGreaterThan(9 * 365 * 86_400_000)
    expect(await subjectHash(all[0]!.cert)).toBe(execFileSync('openssl', ['x509', '-noout', '-subject_hash', '-in', all[0]!.cert], { encoding: 'utf8' }).trim())

    // Later callers read it again, and get the same one.
    const again = await ensureMitmCa(dir)
    expect(again.made).toBe(false)
    expect(readFileSync(again.cert, 'utf8')).toBe(guestCert)
  })

  it('uses a CA mitmproxy made as it is, and gives the guest its certificate even when the copy beside it is another CA\'s', async () => {
    const dir = fresh()
    const made = mitmproxyLoads(dir) // mitmproxy makes its own CA in an empty confdir
    const keyFile = readFileSync(path.join(dir, MITM_FILES.ca), 'utf8')
    // Two mitmproxies that raced could leave the certificate file of the other CA.
    const other = fresh()
    mitmproxyLoads(other)
    writeFileSync(path.join(dir, MITM_FILES.cert), readFileSync(path.join(other, MITM_FILES.cert)))
    rmSync(path.join(dir, MITM_FILES.dhparam))
    const ca = await ensureMitmCa(dir)
    expect(ca.made).toBe(false)
    expect(ca.subject).toBe('CN=mitmproxy, O=mitmproxy')
    expect(readFileSync(path.join(dir, MITM_FILES.ca), 'utf8')).toBe(keyFile)
    expect(new X509Certificate(readFileSync(ca.cert)).raw.equals(new X509Certificate(made.pem).raw)).toBe(true)
    expect(readFileSync(path.join(dir, MITM_FILES.dhparam), 'utf8')).toMatch(/^-----BEGIN DH PARAMETERS-----/)
    expect(mitmproxyLoads(dir).pem).toBe(made.pem)
  })

  it('sets aside a CA file that is cut short or does not match, and makes a new one', async () => {
    const dir = fresh()
    const first = await ensureMitmCa(dir)
    const firstPem = readFileSync(first.cert, 'utf8')
    const full = readFileSync(path.join(dir, MITM_FILES.ca), 'utf8')
    writeFileSync(path.join(dir, MITM_FILES.ca), full.slice(0, full.indexOf('-----BEGIN CERTIFICATE-----') + 100))
    const logs: string[] = []
    const second = await ensureMitmCa(dir, { log: (m) => logs.push(m) })
    expect(second.made).toBe(true)
    expect(logs[0]).toMatch(/unusable \(it holds no certificate\): moved to mitmproxy-ca\.pem\.unusable-\d+, making a new one/)
    expect(readFileSync(second.cert, 'utf8')).not.toBe(firstPem)
    expect(mitmproxyLoads(dir).pem).toBe(readFileSync(second.cert, 'utf8'))

    // A key of one CA with the certificate of another: mitmproxy would sign what no guest trusts.
    const other = fresh()
    await ensureMitmCa(other)
    const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n/.exec(full)![0]
    const otherCert = readFileSync(path.join(other, MITM_FILES.cert), 'utf8')
    expect(usableCa(key + otherCert)).toBe('its key and certificate do not match')
    expect(usableCa(readFileSync(path.join(other, MITM_FILES.ca), 'utf8'), Date.now() + 11 * 365 * 86_400_000)).toMatch(/^its certificate expired on /)
  })

  it('clears what a service killed while making a CA left, key included', async () => {
    const dir = fresh()
    await ensureMitmCa(dir)
    const leftovers = ['.new-ca-abc123', `.${MITM_FILES.ca}.0a1b2c3d4e5f`]
    execFileSync('mkdir', [path.join(dir, leftovers[0]!)])
    writeFileSync(path.join(dir, leftovers[0]!, 'key.pem'), 'secret')
    writeFileSync(path.join(dir, leftovers[1]!), 'half')
    expect((await ensureMitmCa(dir)).made).toBe(false)
    expect(readdirSync(dir).filter((f) => f.startsWith('.'))).toEqual([])
  })
})
