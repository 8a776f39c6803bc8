// The part of seek-bzip (CommonJS, untyped) the offline reader calls.
declare module 'seek-bzip' {
  interface OutputStream { writeByte(b: number): void }
  const Bunzip: { decode(input: Uint8Array, output: OutputStream, multistream?: boolean): unknown }
  export default Bunzip
}
