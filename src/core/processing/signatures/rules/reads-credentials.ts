// Fires when the sample reads where credentials are kept: the shadow password files, SSH private
// keys, cloud, registry and tool credentials, browsers' saved logins; on Windows the SAM hive and
// the same browser stores. Seen as files opened for reading (the calls' file_read). /etc/passwd is
// not one: every program that looks up a user name reads it.
import type { SignatureRule } from '../signature'
import { summary } from '../../../reporting/report-view'

const SHADOW = /^\/etc\/(g?shadow)-?$/
const CREDENTIAL_FILES = [
  /\/\.ssh\/id_(rsa|dsa|ecdsa|ed25519)(_sk)?$/,
  /\/\.aws\/credentials$/, /\/\.azure\/accessTokens\.json$/, /\/\.config\/gcloud\/credentials\.db$/,
  /\/\.docker\/config\.json$/, /\/\.kube\/config$/, /\/\.netrc$/, /\/\.pgpass$/, /\/\.git-credentials$/, /\/\.npmrc$/,
  /\/\.gnupg\/(private-keys-v1\.d\/|secring\.gpg)/,
  /\/\.mozilla\/firefox\/[^/]+\/(logins\.json|key[34]\.db)$/,
  /\/\.config\/(google-chrome|chromium|BraveSoftware\/Brave-Browser)\/[^/]+\/(Login Data|Cookies)$/,
  /\\windows\\system32\\config\\(sam|security)$/i,
  /\\appdata\\local\\(google\\chrome|microsoft\\edge)\\user data\\[^\\]+\\login data$/i,
  /\\appdata\\roaming\\mozilla\\firefox\\profiles\\[^\\]+\\(logins\.json|key[34]\.db)$/i
]

export const readsCredentials: SignatureRule = {
  name: 'reads_credentials',
  description: 'Reads files where passwords, keys or tokens are kept',
  severity: 3,
  categories: ['credential_access'],
  ttp: ['T1552.001'],
  run(report, mark) {
    for (const p of new Set(summary(report, 'file_read'))) {
      if (SHADOW.test(p)) {
        mark.ioc('file', p, 'password hashes')
        mark.technique('T1003.008')
      } else if (CREDENTIAL_FILES.some((re) => re.test(p))) {
        mark.ioc('file', p)
      }
    }
  }
}
