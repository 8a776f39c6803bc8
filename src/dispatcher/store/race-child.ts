// A racer as its own process (like a separate `aviary dist-worker`): opens the store named by argv,
// prints "ready", waits for a line on stdin so all racers begin together (however slowly each one
// started), runs one phase of race.ts and prints the ids it won as JSON. Built and spawned by the
// contract tests.
import { openStore } from './index'
import { racePhase, type RacePhase } from './race'

async function main(): Promise<void> {
  const [db, phase, worker, nodes] = process.argv.slice(2)
  if (!db || !phase || !worker || !nodes) throw new Error('usage: race-child DB PHASE WORKER NODE_IDS')
  const store = await openStore(db, '/nonexistent')
  try {
    await store.countByStatus() // connected and warm before the start
    process.stdout.write('ready\n')
    await new Promise((r) => process.stdin.once('data', r))
    process.stdin.pause()
    const won = await racePhase(store, phase as RacePhase, worker, nodes.split(',').map(Number))
    process.stdout.write(JSON.stringify(won))
  } finally {
    await store.close()
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
