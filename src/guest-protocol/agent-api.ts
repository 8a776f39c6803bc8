// The agent protocol as both ends of Aviary speak it: Cuckoo 2.0.7's agent HTTP API (agent.py
// 0.10, cuckoo/data/agent/agent.py) plus Aviary's additions (/execnode, /reset). Aviary's agent
// (src/agent) serves these routes and the host (src/core/guest) calls them; both import this file,
// so a route, a feature or a limit is written once. Nothing here may import anything but types:
// the agent runs in the guest, bundled on its own.

/** The port every Cuckoo-style agent listens on. */
export const AGENT_PORT = 8000

/** agent.py's protocol version; Aviary's agent answers it so Cuckoo and CAPE hosts drive it unchanged. */
export const AGENT_VERSION = '0.10'

/** What GET / says first: the host tells Aviary's agent from Cuckoo's and CAPE's by this word. */
export const AVIARY_AGENT_MESSAGE = 'Aviary Agent'

/**
 * Features Aviary's agent lists in GET /. The first six are agent.py 0.10's; `execnode` runs a
 * JavaScript file with the agent's own Node; `reset` ends every analysis the agent started
 * earlier (POST /reset), so a machine that is never reverted starts each task clean.
 */
export const AGENT_FEATURES = ['execpy', 'execnode', 'pinning', 'logs', 'largefile', 'unicodepath', 'reset'] as const
export type AgentFeature = (typeof AGENT_FEATURES)[number]

/** Statuses that end an analysis (the host stops polling); anything else means "still running". */
export const FINAL_STATUSES = ['complete', 'exception', 'failed'] as const
export type FinalStatus = (typeof FINAL_STATUSES)[number]

export function isFinalStatus(s: unknown): s is FinalStatus {
  return typeof s === 'string' && (FINAL_STATUSES as readonly string[]).includes(s)
}

/** Statuses a well-behaved agent reports while no analysis has ended: Cuckoo null, CAPE 'init' and 'running'. */
export const OPEN_STATUSES = ['init', 'running'] as const

export const ROUTES = {
  root: '/',
  status: '/status',
  logs: '/logs',
  system: '/system',
  environ: '/environ',
  path: '/path',
  mktemp: '/mktemp',
  mkdtemp: '/mkdtemp',
  pinning: '/pinning',
  kill: '/kill',
  mkdir: '/mkdir',
  store: '/store',
  retrieve: '/retrieve',
  extract: '/extract',
  remove: '/remove',
  execute: '/execute',
  execpy: '/execpy',
  execnode: '/execnode',
  reset: '/reset'
} as const
export type AgentRoute = (typeof ROUTES)[keyof typeof ROUTES]

const KiB = 1024
const MiB = 1024 * KiB

/**
 * The most the host reads of an agent's answer on each route. A real agent answers these with a
 * few hundred bytes (GET /environ with a few KiB; a synchronous /execute with the command's
 * output); anything beyond is an agent that misbehaves, and the host stops reading there rather
 * than buffer what a hostile guest sends. /retrieve is a file: the host streams it to disk under
 * its own cap instead.
 */
export const ANSWER_LIMITS: Readonly<Record<AgentRoute, number>> = {
  '/': 64 * KiB,
  '/status': 64 * KiB,
  '/logs': 4 * MiB,
  '/system': 64 * KiB,
  '/environ': 1 * MiB,
  '/path': 64 * KiB,
  '/mktemp': 64 * KiB,
  '/mkdtemp': 64 * KiB,
  '/pinning': 64 * KiB,
  '/kill': 64 * KiB,
  '/mkdir': 64 * KiB,
  '/store': 64 * KiB,
  '/retrieve': 0,
  '/extract': 64 * KiB,
  '/remove': 64 * KiB,
  '/execute': 4 * MiB,
  '/execpy': 4 * MiB,
  '/execnode': 64 * KiB,
  '/reset': 64 * KiB
}

/**
 * Deadlines of one exchange, in ms, whatever the agent does (a drip of one byte a second does
 * not extend them). Uploads are bounded by an idle limit instead (a large sample on a slow link
 * keeps moving) and, like everything, by the run's own deadline: timeout + critical timeout.
 */
export const EXCHANGE_MS = {
  /** GET /, /environ, /mkdir, /execnode...: a live agent answers at once. */
  small: 15_000,
  /** One status poll (Cuckoo's own limit). */
  poll: 5_000,
  /** /extract and /store: no byte moving for this long ends the upload. */
  uploadIdle: 120_000
} as const

/** The agent's own limit on one form field of a POST body. */
export const MAX_FORM_FIELD = 1 * MiB

/** Form fields of Aviary's additions: `run` names the run an analyzer belongs to (run-identity.ts). */
export const RUN_FIELD = 'run'

/**
 * Next to analysis.conf when the task's TLS is decrypted: the proxy's CA certificate (PEM), which
 * Aviary's analyzer adds to the guest's trust store for the run and removes afterwards, and its
 * OpenSSL subject hash (8 hex digits, the name OpenSSL looks it up by in a CA folder: computed on
 * the host, since a guest may have no openssl). Plain names: the sample can list the analyzer's
 * folder, and nothing it sees may name Aviary.
 */
export const TRUSTED_CA_FILE = 'ca.crt'
export const TRUSTED_CA_HASH_FILE = 'ca.hash'

/**
 * Aviary's analyzer reads its end from this file next to analysis.conf, which the host stores (POST
 * /store) whenever the analyst moves the end (Extend, Finish now): JSON `{"seq": n, "remaining_ms":
 * m}`, the end being m ms after the analyzer sees a new seq (the host's and the guest's clocks may
 * differ, a duration does not). A plain name, like the CA's. Cuckoo's analyzer never reads it and
 * keeps its own timeout.
 */
export const DEADLINE_FILE = 'deadline.json'
/** The largest deadline file the analyzer reads. */
export const DEADLINE_FILE_MAX = 256
