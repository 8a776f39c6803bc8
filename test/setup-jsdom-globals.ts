// Component tests run real services in the same process as jsdom. Vitest's jsdom environment
// swaps the global ArrayBuffer for jsdom's, and Fastify's `payload.buffer instanceof ArrayBuffer`
// then fails for Node's Buffers, which get sent as {"type":"Buffer",...} JSON. Node's own
// ArrayBuffer is put back (jsdom's DOM does not need its own for what these tests do).
if ('window' in globalThis) {
  globalThis.ArrayBuffer = Buffer.allocUnsafeSlow(1).buffer.constructor as ArrayBufferConstructor
}

// findBy* and waitFor give up after 1 s by default. The component tests wait on a real service in
// the same process, and with three other test files on two cores a first render of the Task page
// once took longer (CI-like run, Task.test.tsx). They now wait up to 10 s; what they wait for
// usually comes in milliseconds, and a check that something stays absent does not use them.
if ('window' in globalThis) {
  const { configure } = await import('@testing-library/react')
  configure({ asyncUtilTimeout: 10_000 })
}
