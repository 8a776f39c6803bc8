// Component tests run real services in the same process as jsdom. Vitest's jsdom environment
// swaps the global ArrayBuffer for jsdom's, and Fastify's `payload.buffer instanceof ArrayBuffer`
// then fails for Node's Buffers, which get sent as {"type":"Buffer",...} JSON. Node's own
// ArrayBuffer is put back (jsdom's DOM does not need its own for what these tests do).
if ('window' in globalThis) {
  globalThis.ArrayBuffer = Buffer.allocUnsafeSlow(1).buffer.constructor as ArrayBufferConstructor
}

