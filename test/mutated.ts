// Copies of a file with a few bytes changed at random, for the tests that a hostile input gives an
// error and never a throw: `copies` copies, each with 1 to `maxFlips` bytes set to random values.
// The generator is seeded, so a failing copy is the same on every run.
export function* mutated(base: Buffer, copies: number, maxFlips: number, seed: number): Generator<Buffer> {
  let s = seed
  const rand = (n: number): number => { s = (s * 1103515245 + 12345) & 0x7fffffff; return s % n }
  for (let i = 0; i < copies; i++) {
    const b = Buffer.from(base)
    for (let k = 0; k < 1 + rand(maxFlips); k++) b[rand(b.length)] = rand(256)
    yield b
  }
}
