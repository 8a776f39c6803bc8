// A throwaway PostgreSQL cluster for tests: Debian's postgresql (scripts/install-debian-deps.sh),
// initdb + pg_ctl in a temp dir owned by the `postgres` user when we run as root (PostgreSQL
// refuses to run as root), reachable only through a unix socket in that dir, so clusters of
// parallel test files never collide. Start one per test file:
//
//   const pg = usePostgres()                       // beforeAll starts it, afterAll removes it
//   it('…', async () => { const url = await pg.newDatabase() })   // or pg.url (database "postgres")
import { execFile, execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, appendFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'

const run = promisify(execFile)

export interface PgCluster {
  /** Connection string of the `postgres` database (superuser `postgres`, no password). */
  url: string
  /** Socket directory and port, for tools that take them apart (psql -h DIR -p PORT). */
  socketDir: string
  port: number
  /** Creates an empty database and returns its connection string. */
  newDatabase(name?: string): Promise<string>
  /** Stops the server and removes its files (idempotent). */
  stop(): Promise<void>
}

function binDir(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'pg_ctl'))) : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  if (newest === undefined) throw new Error('PostgreSQL is not installed: run scripts/install-debian-deps.sh (Debian package postgresql)')
  return path.join(root, newest, 'bin')
}

const asRoot = process.getuid?.() === 0

/** Runs a PostgreSQL tool as `postgres` when we are root, else as ourselves. */
async function pgTool(tool: string, args: string[]): Promise<void> {
  const file = path.join(binDir(), tool)
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args]
  try {
    await run(cmd, argv, { timeout: 120_000 })
  } catch (err) {
    const e = err as { stderr?: string; message: string }
    throw new Error(`${tool} failed: ${e.stderr || e.message}`, { cause: err })
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port
      srv.close(() => resolve(port))
    })
  })
}

function connectionString(socketDir: string, port: number, database: string): string {
  return `postgresql://postgres@localhost/${database}?host=${encodeURIComponent(socketDir)}&port=${port}`
}

/** Waits until the server answers a query (pg_ctl -w only says the postmaster is up). */
async function waitReady(url: string, logFile: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
    try {
      await client.connect()
      await client.query('SELECT 1')
      return
    } catch (err) {
      last = err
      await new Promise((r) => setTimeout(r, 200))
    } finally {
      await client.end().catch(() => undefined)
    }
  }
  const log = existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-2000) : ''
  throw new Error(`PostgreSQL did not accept connections: ${String(last)}\n${log}`)
}

export async function startPostgres(): Promise<PgCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aviary-pg-'))
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    chownSync(dir, uid, gid)
  }
  const data = path.join(dir, 'data')
  const logFile = path.join(dir, 'server.log')
  const port = await freePort()
  let stopped = false
  const stopSync = (): void => {
    if (stopped) return
    stopped = true
    try {
      const pgCtl = path.join(binDir(), 'pg_ctl')
      const argv = ['stop', '-D', data, '-m', 'immediate', '-w']
      if (existsSync(path.join(data, 'postmaster.pid'))) {
        if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', pgCtl, ...argv], { stdio: 'ignore' })
        else execFileSync(pgCtl, argv, { stdio: 'ignore' })
      }
    } catch {
      // Already gone; the files go anyway.
    }
    rmSync(dir, { recursive: true, force: true })
  }
  // A crashed or interrupted test run must not leave a server behind.
  process.once('exit', stopSync)
  try {
    await pgTool('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'])
    // Settings go in the file rather than `pg_ctl -o`, which passes them through a shell.
    appendFileSync(
      path.join(data, 'postgresql.conf'),
      [
        "listen_addresses = ''",
        `unix_socket_directories = '${dir}'`,
        `port = ${port}`,
        'max_connections = 200',
        // A test cluster need not survive a power cut: skip the disk flushes.
        'fsync = off',
        'synchronous_commit = off',
        'full_page_writes = off',
        ''
      ].join('\n')
    )
    await pgTool('pg_ctl', ['start', '-D', data, '-l', logFile, '-w', '-t', '60'])
    const url = connectionString(dir, port, 'postgres')
    await waitReady(url, logFile)
    let n = 0
    return {
      url,
      socketDir: dir,
      port,
      async newDatabase(name = `t${process.pid}_${++n}`): Promise<string> {
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        try {
          await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`)
        } finally {
          await client.end()
        }
        return connectionString(dir, port, name)
      },
      async stop(): Promise<void> {
        process.removeListener('exit', stopSync)
        stopSync()
      }
    }
  } catch (err) {
    process.removeListener('exit', stopSync)
    stopSync()
    throw err
  }
}

/** Vitest: one cluster for the calling file, started in beforeAll and removed in afterAll. */
export function usePostgres(): PgCluster {
  let cluster: PgCluster | null = null
  const get = (): PgCluster => {
    if (!cluster) throw new Error('usePostgres(): the cluster starts in beforeAll; use it inside tests or hooks')
    return cluster
  }
  beforeAll(async () => {
    cluster = await startPostgres()
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })
  return {
    get url() { return get().url },
    get socketDir() { return get().socketDir },
    get port() { return get().port },
    newDatabase: (name?: string) => get().newDatabase(name),
    stop: () => get().stop()
  }
}
