// The dispatcher's composition root: the store `--db` names, the HTTP API of both generations,
// and (unless `worker: false`) the worker in the same process. Stopped in reverse order.
import { mkdir } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import pkg from '../../package.json'
import { closeGracefully } from '../shared/close-server'
import { buildDistApp } from './api/app'
import { resolveDistConfig, type DistConfig, type DistConfigInput } from './config'
import { openStore } from './store/index'
import type { DistStore } from './store/types'
import { startWorker, type WorkerOptions } from './worker/index'

export interface DispatcherOptions extends DistConfigInput {
  logLevel?: string
  /** How long a node may take to answer at registration and refresh (ms). */
  nodeTimeoutMs?: number
  /** Worker settings beyond the configuration (intervals, log), e.g. for tests. */
  workerTuning?: Partial<WorkerOptions>
}

export interface Dispatcher {
  url: string
  config: DistConfig
  store: DistStore
  stop(): Promise<void>
}

export async function startDispatcher(opts: DispatcherOptions = {}): Promise<Dispatcher> {
  const config = resolveDistConfig(opts)
  await mkdir(config.samplesDir, { recursive: true })
  await mkdir(config.reportsDir, { recursive: true })
  const store = await openStore(config.db, config.dataDir)
  const stops: (() => Promise<void>)[] = [() => store.close()]
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined)
  }
  try {
    const app = await buildDistApp(store, {
      samplesDir: config.samplesDir,
      reportsDir: config.reportsDir,
      maxUploadBytes: config.maxUploadBytes,
      version: pkg.version,
      debug: config.debug,
      logLevel: opts.logLevel ?? (config.debug ? 'debug' : 'info'),
      ...(opts.nodeTimeoutMs ? { nodeTimeoutMs: opts.nodeTimeoutMs } : {})
    })
    stops.push(() => closeGracefully(app))
    await app.listen({ host: config.host, port: config.port })
    if (config.worker) {
      const worker = await startWorker(store, { ...workerOptions(config), ...opts.workerTuning })
      stops.push(() => worker.stop())
    }
    const address = app.server.address() as AddressInfo
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
    return { url: `http://${host}:${address.port}`, config, store, stop: stopAll }
  } catch (err) {
    await stopAll()
    throw err
  }
}

/** What the worker needs of the configuration (in-process here, or `aviary dist-worker`). */
export function workerOptions(config: DistConfig): WorkerOptions {
  return {
    samplesDir: config.samplesDir,
    reportsDir: config.reportsDir,
    reportFormats: config.reportFormats,
    threshold: config.threshold,
    transferTimeoutMs: config.transferTimeout * 1000,
    assignIntervalMs: config.interval * 1000,
    nodeIntervalMs: config.interval * 1000,
    uptimeLogfile: config.uptimeLogfile
  }
}
