// The decrypting proxy's CA, one per data folder (<data>/mitm, mitmproxy's confdir), made here
// before any mitmdump starts. mitmproxy makes a CA itself when its confdir has none, but two
// mitmdumps started together on a fresh data folder each made one, and each wrote its files over
// the other's: a guest then trusted one CA while its proxy signed with the other (curl saw "tlsv1
// alert decrypt error"). So the service makes it, once: concurrent callers in this process share
// one promise, and the data folder has one service (aviary.lock). Its files are written under a
// temporary name and renamed, the key file last, so no mitmdump and no later start ever reads half
// a CA. They are exactly what mitmproxy 8.1 loads from a confdir (certs.py, CertStore.from_store):
//   mitmproxy-ca.pem       the private key and the certificate (the presence of this file is what
//                          makes mitmproxy use a CA rather than make one)
//   mitmproxy-dhparam.pem  DH parameters (mitmproxy writes its own when absent, not atomically)
// plus mitmproxy-ca-cert.pem, the certificate alone, which the guest is given.
// The subject is neutral (no "mitmproxy", no "Aviary"): the guest's trust store holds it for the
// run, and every certificate the proxy forges names it as issuer, so a sample that reads either
// must not learn it is watched. A confdir that already holds a usable CA (one mitmproxy made for
// an earlier version of Aviary) is used as it is.
import { execFile } from 'node:child_process'
import { createPrivateKey, randomBytes, randomInt, X509Certificate } from 'node:crypto'
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The files of a confdir, by mitmproxy 8.1's names (options.CONF_BASENAME = "mitmproxy"). */
export const MITM_FILES = {
  /** Key and certificate: what mitmdump signs with. */
  ca: 'mitmproxy-ca.pem',
  dhparam: 'mitmproxy-dhparam.pem',
  /** The certificate alone: what the guest trusts. */
  cert: 'mitmproxy-ca-cert.pem'
} as const

export interface MitmCa {
  /** mitmproxy-ca-cert.pem: the certificate the guest trusts. */
  cert: string
  /** e.g. "O=Internal PKI, CN=Root CA 3F2A". */
  subject: string
  /** True when this call made it; false when the confdir already had it. */
  made: boolean
}

const inFlight = new Map<string, Promise<MitmCa>>()

/**
 * The confdir's CA, made first when it has no usable one. Callers that come while it is being made
 * get the same promise (one CA); once settled, the next caller reads the files again, so a CA
 * folder removed while the service runs is made again rather than remembered.
 */
export function ensureMitmCa(confdir: string, o: { openssl?: string; log?: (msg: string) => void } = {}): Promise<MitmCa> {
  const dir = path.resolve(confdir)
  let p = inFlight.get(dir)
  if (p === undefined) {
    p = loadOrMake(dir, o.openssl ?? 'openssl', o.log ?? (() => undefined)).finally(() => inFlight.delete(dir))
    inFlight.set(dir, p)
  }
  return p
}

/** OpenSSL's subject hash of a certificate (`openssl x509 -subject_hash`): the name of its link in a CA folder. */
export async function subjectHash(certFile: string, openssl = 'openssl'): Promise<string> {
  const { stdout } = await run(openssl, ['x509', '-noout', '-subject_hash', '-in', certFile], { timeout: 10_000 })
  const hash = stdout.trim()
  if (!/^[0-9a-f]{8}$/.test(hash)) throw new Error(`openssl gave no subject hash for ${certFile}: ${JSON.stringify(stdout.slice(0, 80))}`)
  return hash
}

interface Usable { certPem: string; subject: string }

/** The key and certificate of a mitmproxy-ca.pem, when they are a pair mitmproxy can sign with. */
export function usableCa(text: string, now = Date.now()): Usable | string {
  const keyPem = /-----BEGIN (RSA |EC )?PRIVATE KEY-----[\s\S]+?-----END \1?PRIVATE KEY-----/.exec(text)?.[0]
  // mitmproxy takes the first certificate after the key (certs.py: re.split on BEGIN CERTIFICATE).
  const certPem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(text)?.[0]
  if (keyPem === undefined) return 'it holds no private key'
  if (certPem === undefined) return 'it holds no certificate'
  try {
    const cert = new X509Certificate(certPem)
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return 'its key and certificate do not match'
    if (!cert.ca) return 'its certificate is not a CA'
    if (Date.parse(cert.validTo) <= now) return `its certificate expired on ${cert.validTo}`
    return { certPem: `${certPem}\n`, subject: cert.subject.split('\n').join(', ') }
  } catch (err) {
    return `it cannot be read (${(err as Error).message})`
  }
}

async function loadOrMake(dir: string, openssl: string, log: (msg: string) => void): Promise<MitmCa> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  // What a service killed while making a CA left (a work folder with a key, a file not yet
  // renamed): this is the data folder's only service and no one else is making one now.
  for (const name of await readdir(dir)) {
    if (name.startsWith('.new-ca-') || (name.startsWith('.') && Object.values(MITM_FILES).some((f) => name.startsWith(`.${f}.`)))) {
      await rm(path.join(dir, name), { recursive: true, force: true })
    }
  }
  const caFile = path.join(dir, MITM_FILES.ca)
  const certFile = path.join(dir, MITM_FILES.cert)
  const text = await readFile(caFile, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null
    throw err
  })
  const found = text === null ? null : usableCa(text)
  if (found !== null && typeof found !== 'string') {
    // mitmproxy-ca.pem is what mitmdump signs with: the guest's copy must be its certificate (two
    // mitmproxies that raced could leave mitmproxy-ca-cert.pem of the other CA).
    if ((await readFile(certFile, 'utf8').catch(() => '')) !== found.certPem) await put(dir, MITM_FILES.cert, found.certPem, 0o644)
    if ((await readFile(path.join(dir, MITM_FILES.dhparam), 'utf8').catch(() => '')) === '') {
      await put(dir, MITM_FILES.dhparam, await dhParams(dir, openssl), 0o644)
    }
    return { cert: certFile, subject: found.subject, made: false }
  }
  if (typeof found === 'string') {
    // Kept beside, not deleted: it may be the only copy of a CA some guest image still trusts.
    const aside = `${MITM_FILES.ca}.unusable-${Date.now()}`
    await rename(caFile, path.join(dir, aside))
    log(`the proxy's CA in ${dir} is unusable (${found}): moved to ${aside}, making a new one`)
  }
  const made = await makeCa(dir, openssl)
  log(`made the proxy's CA (${made.subject}) in ${dir}`)
  return { cert: certFile, subject: made.subject, made: true }
}

/** A subject that names no tool: an organisation's internal root, with a random suffix. */
function neutralSubject(): { o: string; cn: string } {
  const orgs = ['Internal PKI', 'IT Services', 'Corporate IT', 'Enterprise Services']
  return { o: orgs[randomInt(orgs.length)]!, cn: `Root CA ${randomBytes(2).toString('hex').toUpperCase()}` }
}

/** ASN.1 time for openssl ca's -startdate and -enddate. */
function asn1Time(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'
}

const DAY = 86_400_000

async function makeCa(dir: string, openssl: string): Promise<Usable> {
  const work = await mkdtemp(path.join(dir, '.new-ca-'))
  try {
    const f = (n: string): string => path.join(work, n)
    const { o, cn } = neutralSubject()
    await run(openssl, ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', f('key.pem')], { timeout: 60_000 })
    await run(openssl, ['req', '-new', '-key', f('key.pem'), '-subj', `/O=${o}/CN=${cn}`, '-out', f('req.csr')], { timeout: 30_000 })
    // `openssl ca -selfsign` rather than `req -x509`: OpenSSL 3.0's req cannot set the start date,
    // and the CA must be valid in a guest whose clock is behind the host's (the analyzer corrects
    // it only beyond two minutes). The proxy's own certificates start two days back.
    await writeFile(f('index.txt'), '')
    await writeFile(f('serial'), `${randomBytes(16).toString('hex')}\n`)
    await writeFile(f('ca.cnf'), [
      '[ca]', 'default_ca = root', '[root]', 'database = index.txt', 'serial = serial', 'new_certs_dir = .', 'default_md = sha256',
      'policy = names', 'preserve = yes', 'unique_subject = no', 'email_in_dn = no', 'copy_extensions = none', 'x509_extensions = ext',
      '[names]', 'organizationName = optional', 'commonName = supplied',
      '[ext]', 'basicConstraints = critical, CA:TRUE', 'keyUsage = critical, keyCertSign, cRLSign', 'subjectKeyIdentifier = hash', ''
    ].join('\n'))
    const now = Date.now()
    await run(openssl, ['ca', '-batch', '-config', 'ca.cnf', '-selfsign', '-keyfile', 'key.pem', '-in', 'req.csr', '-out', 'cert.pem', '-notext',
      '-startdate', asn1Time(now - 30 * DAY), '-enddate', asn1Time(now + 10 * 365 * DAY), '-outdir', '.'], { cwd: work, timeout: 30_000 })
    const keyPem = await readFile(f('key.pem'), 'utf8')
    const made = usableCa(keyPem + (await readFile(f('cert.pem'), 'utf8')))
    if (typeof made === 'string') throw new Error(`openssl made an unusable CA: ${made}`)
    // The key file last: once it is there, the CA is complete (for this service and for mitmdump).
    await put(dir, MITM_FILES.dhparam, await dhParams(work, openssl), 0o644)
    await put(dir, MITM_FILES.cert, made.certPem, 0o644)
    await put(dir, MITM_FILES.ca, keyPem + made.certPem, 0o600)
    return made
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/** RFC 7919's ffdhe2048 group: fixed, well-known parameters, made at once (no `openssl dhparam` search). */
async function dhParams(work: string, openssl: string): Promise<string> {
  const out = path.join(work, `.new-ca-dh-${randomBytes(6).toString('hex')}.pem`)
  try {
    await run(openssl, ['genpkey', '-genparam', '-algorithm', 'DH', '-pkeyopt', 'group:ffdhe2048', '-out', out], { timeout: 30_000 })
    return await readFile(out, 'utf8')
  } finally {
    await rm(out, { force: true })
  }
}

/** Written beside under a temporary name, then renamed over: a reader sees the old file or the new one. */
async function put(dir: string, name: string, data: string, mode: number): Promise<void> {
  const tmp = path.join(dir, `.${name}.${randomBytes(6).toString('hex')}`)
  try {
    await writeFile(tmp, data, { mode, flag: 'wx' })
    await rename(tmp, path.join(dir, name))
  } catch (err) {
    await rm(tmp, { force: true })
    throw err
  }
}
