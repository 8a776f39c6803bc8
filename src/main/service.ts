// Runs the headless analysis service inside the main process, on the loopback interface only.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { AviaryService, type ServiceOptions } from '../core/service'
import { DEFAULT_PORT, defaultDataDir } from '../core/config'

const LOOPBACK = '127.0.0.1'

export type DesktopServiceOptions = Pick<ServiceOptions, 'allowedOrigins' | 'onExitRequest' | 'logLevel'>

/**
 * Starts the service on 127.0.0.1:8090 (the port Cuckoo clients expect), or on a free port
 * when 8090 is taken, with the per-user data directory shared with the `aviary` command.
 */
export async function startService(mainDir: string, opts: DesktopServiceOptions): Promise<AviaryService> {
  const base: ServiceOptions = { dataDir: defaultDataDir(), host: LOOPBACK, hashWorker: hashWorkerFile(mainDir), ...opts }
  const preferred = new AviaryService({ ...base, port: DEFAULT_PORT })
  try {
    await preferred.start()
    return preferred
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err
  }
  const fallback = new AviaryService({ ...base, port: 0 })
  await fallback.start()
  return fallback
}

/**
 * The hashing worker is emitted next to the main bundle (out/main/hash.worker.mjs). Worker
 * threads cannot load scripts from inside app.asar, so a packaged app runs the copy that
 * electron-builder unpacks (asarUnpack in build/electron-builder.yml). Without one, the
 * service hashes inline.
 */
function hashWorkerFile(mainDir: string): string | null {
  const file = path.join(mainDir, 'hash.worker.mjs')
  const unpacked = file.replace(/app\.asar([\\/])/, 'app.asar.unpacked$1')
  return existsSync(unpacked) ? unpacked : null
}
