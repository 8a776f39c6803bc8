// Micro-benchmark of the ssdeep port: `node bench/ssdeep.bench.mjs [MiB]` (default 256).
// Bundles src/core/hashing/ssdeep.ts with esbuild in memory, hashes data fed in 64 KiB chunks (as
// the upload stream does) and prints the best of 5 rounds in MB/s (10^6 bytes/s), by wall clock
// and by CPU time (the latter is steadier on a shared machine). For scale, the same for
// md5+sha1+sha256+sha512 together (node:crypto, i.e. OpenSSL). --quick: 8 MiB.
// It makes nothing outside its memory; bench/cleanup.mjs gives it the same exit codes as the others.
import { build } from 'esbuild'
import { createHash, randomFillSync } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { positional, quick } from './cleanup.mjs'

const entry = fileURLToPath(new URL('../src/core/hashing/ssdeep.ts', import.meta.url))
const out = await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', write: false })
const { SsdeepHasher } = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`)

const size = Number(positional()[0] ?? (quick ? 8 : 256)) * 1024 * 1024
const CHUNK = 64 * 1024
const data = Buffer.alloc(size)

function measure(label, hashAll) {
  let wall = 0
  let cpu = 0
  let result = ''
  for (let round = 0; round < 5; round++) {
    const c0 = process.cpuUsage()
    const t0 = process.hrtime.bigint()
    result = hashAll()
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9
    const used = process.cpuUsage(c0)
    wall = Math.max(wall, size / 1e6 / seconds)
    cpu = Math.max(cpu, size / (used.user + used.system))
  }
  console.log(`${label.padEnd(26)} ${wall.toFixed(0).padStart(5)} MB/s wall ${cpu.toFixed(0).padStart(5)} MB/s cpu  ${result}`)
}

const ssdeepAll = () => {
  const h = new SsdeepHasher()
  for (let o = 0; o < size; o += CHUNK) h.update(data.subarray(o, o + CHUNK))
  const digest = h.digest()
  return digest.length > 48 ? `${digest.slice(0, 45)}…` : digest
}

const inputs = {
  random: () => { for (let o = 0; o < size; o += CHUNK) randomFillSync(data.subarray(o, o + CHUNK)) },
  zeros: () => data.fill(0),
  'repeating 13 bytes': () => { for (let k = 0; k < size; k++) data[k] = (k % 13) * 19 }
}
console.log(`${(size / 1048576).toFixed(0)} MiB per round, 64 KiB chunks, best of 5`)
for (const [name, fill] of Object.entries(inputs)) {
  fill()
  measure(`ssdeep, ${name}`, ssdeepAll)
}
inputs.random()
measure('md5+sha1+sha256+sha512', () => {
  const hashes = ['md5', 'sha1', 'sha256', 'sha512'].map((a) => createHash(a))
  for (let o = 0; o < size; o += CHUNK) for (const h of hashes) h.update(data.subarray(o, o + CHUNK))
  return hashes.map((h) => h.digest('hex').slice(0, 8)).join(' ')
})
