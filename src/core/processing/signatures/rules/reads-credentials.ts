// Fires when the sample reads where credentials are kept: the shadow password files, SSH private
// keys, cloud, registry and tool credentials, browsers' saved logins; on Windows the SAM hive and
// the same browser stores. Seen as files opened for reading (the calls' file_read, which names the
// file the kernel opened: /etc/shadow read through a symlink is /etc/shadow). /etc/passwd is not
// one: every program that looks up a user name reads it. Nor is a file the run created itself
// (ssh-keygen reading back the key it just made): it holds no credentials of anyone else's.
import type { SignatureRule } from '../signature'
import { summary } from '../../../reporting/report-view'

/** Where credentials are kept, and the ATT&CK technique reading each is. */
const CREDENTIAL_FILES: [RegExp, string, string | null][] = [
  [/^\/etc\/(g?shadow)-?$/, 'T1003.008', 'password hashes'],
  [/\/\.ssh\/id_(rsa|dsa|ecdsa|ed25519)(_sk)?$/, 'T1552.004', 'a private key'],
  [/\/\.gnupg\/(private-keys-v1\.d\/|secring\.gpg)/, 'T1552.004', 'a private key'],
  [/\/\.aws\/credentials$/, 'T1552.001', null], [/\/\.azure\/accessTokens\.json$/, 'T1552.001', null],
  [/\/\.config\/gcloud\/credentials\.db$/, 'T1552.001', null], [/\/\.docker\/config\.json$/, 'T1552.001', null],
  [/\/\.kube\/config$/, 'T1552.001', null], [/\/\.netrc$/, 'T1552.001', null], [/\/\.pgpass$/, 'T1552.001', null],
  [/\/\.git-credentials$/, 'T1552.001', null], [/\/\.npmrc$/, 'T1552.001', null],
  [/\/\.mozilla\/firefox\/[^/]+\/(logins\.json|key[34]\.db)$/, 'T1555.003', 'saved browser logins'],
  [/\/\.config\/(google-chrome|chromium|BraveSoftware\/Brave-Browser)\/[^/]+\/Login Data$/, 'T1555.003', 'saved browser logins'],
  [/\/\.config\/(google-chrome|chromium|BraveSoftware\/Brave-Browser)\/[^/]+\/Cookies$/, 'T1539', 'browser session cookies'],
  [/\\windows\\system32\\config\\sam$/i, 'T1003.002', 'the SAM hive'],
  [/\\windows\\system32\\config\\security$/i, 'T1003.004', 'the SECURITY hive (LSA secrets)'],
  [/\\appdata\\local\\(google\\chrome|microsoft\\edge)\\user data\\[^\\]+\\login data$/i, 'T1555.003', 'saved browser logins'],
  [/\\appdata\\roaming\\mozilla\\firefox\\profiles\\[^\\]+\\(logins\.json|key[34]\.db)$/i, 'T1555.003', 'saved browser logins']
]

export const readsCredentials: SignatureRule = {
  name: 'reads_credentials',
  description: 'Reads files where passwords, keys or tokens are kept',
  severity: 3,
  categories: ['credential_access'],
  // Each kind of file is its own technique: every mark adds its own.
  ttp: [],
  techniques: ['T1003.002', 'T1003.004', 'T1003.008', 'T1539', 'T1552.001', 'T1552.004', 'T1555.003'],
  run(report, mark) {
    const created = new Set(summary(report, 'file_created'))
    for (const p of new Set(summary(report, 'file_read'))) {
      if (created.has(p)) continue
      const hit = CREDENTIAL_FILES.find(([re]) => re.test(p))
      if (hit === undefined) continue
      mark.ioc('file', p, hit[2] ?? undefined)
      mark.technique(hit[1])
    }
  }
}
