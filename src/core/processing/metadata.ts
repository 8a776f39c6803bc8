// The report's `metadata` (Cuckoo 2's MetaInfo): `output` names the files the run produced that a
// consumer may fetch (the pcap, process memory dumps, buffers, dropped files) by their folder in
// the analysis directory, their name and sha256. The hashes of buffers and dropped files are the
// ones their own sections computed; the pcap and the memory dumps are hashed here.
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { lstat } from 'node:fs/promises'
import path from 'node:path'
import type { FileInfo } from './file-info'
import type { ProcessMemory } from './artifacts'
import { Closed, Type, type Static } from './schema'
import { ARTIFACTS, artifactPath } from '../storage/layout'

const OutputFileSchema = Closed({ dirname: Type.String(), basename: Type.String(), sha256: Type.String() })
type OutputFile = Static<typeof OutputFileSchema>

export const MetadataSchema = Closed({
  output: Closed({
    pcap: Type.Optional(OutputFileSchema),
    memdumps: Type.Array(OutputFileSchema),
    buffers: Type.Array(OutputFileSchema),
    dropped: Type.Array(OutputFileSchema)
  })
})
export type Metadata = Static<typeof MetadataSchema>

async function sha256(file: string): Promise<string> {
  const h = createHash('sha256')
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer)
  return h.digest('hex')
}

function outputFile(dir: string, file: string, hash: string): OutputFile {
  const rel = path.relative(dir, file).split(path.sep).join('/')
  return { dirname: path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel), basename: path.posix.basename(rel), sha256: hash }
}

export async function metadata(dir: string, listed: { dropped: (FileInfo & { relpath: string })[]; buffer: FileInfo[]; procmemory: ProcessMemory[] }): Promise<Metadata> {
  const output: Metadata['output'] = {
    memdumps: [],
    buffers: listed.buffer.map((b) => outputFile(dir, b.path, b.sha256)),
    // A file written to several paths is listed once per path in `dropped`, and once here.
    dropped: [...new Map(listed.dropped.filter((d) => d.relpath.startsWith(`${ARTIFACTS.dropped}/`)).map((d) => [d.relpath, d])).values()]
      .map((d) => outputFile(dir, path.join(dir, d.relpath), d.sha256))
  }
  const pcap = artifactPath(dir, ARTIFACTS.pcap)
  if ((await lstat(pcap).catch(() => null))?.isFile()) output.pcap = outputFile(dir, pcap, await sha256(pcap))
  for (const m of listed.procmemory) output.memdumps.push(outputFile(dir, m.file, await sha256(m.file)))
  return { output }
}
