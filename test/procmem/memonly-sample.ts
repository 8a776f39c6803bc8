// A sample that keeps a URL only in memory: the URL is XOR-encoded in the program and assembled on
// the heap at run time, so the file never holds it (the tests check that). It then sleeps for
// argv[1] seconds (default 1) and exits. Built with gcc.
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'

export const MEMONLY_URL = 'http://memonly.example.net/cfg?id=7'
const KEY = 0x5a

export function buildMemOnlySample(dir: string): string {
  const enc = [...Buffer.from(MEMONLY_URL, 'latin1')].map((b) => `0x${(b ^ KEY).toString(16)}`).join(',')
  const src = path.join(dir, 'memonly.c')
  writeFileSync(src, `#include <stdlib.h>
#include <unistd.h>
static const unsigned char enc[] = {${enc}};
int main(int argc, char **argv) {
  volatile char *u = malloc(sizeof enc + 1);
  for (unsigned i = 0; i < sizeof enc; i++) u[i] = (char)(enc[i] ^ ${KEY});
  u[sizeof enc] = 0;
  sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 1);
  return u[0] == 'h' ? 0 : 1;
}
`)
  const out = path.join(dir, 'memonly')
  execFileSync('gcc', ['-O0', '-o', out, src])
  if (readFileSync(out).includes(Buffer.from(MEMONLY_URL))) throw new Error('the URL is in the file')
  return out
}
