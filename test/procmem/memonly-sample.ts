// A sample that keeps a URL only in memory: the URL is XOR-encoded in the program and assembled on
// the heap at run time, so the file never holds it (the tests check that). It then sleeps for
// argv[1] seconds (default 1) and exits. Built with gcc.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { compileC } from '../fixtures/compiled'

export const MEMONLY_URL = 'http://memonly.example.net/cfg?id=7'
const KEY = 0x5a

export function buildMemOnlySample(dir: string): string {
  const enc = [...Buffer.from(MEMONLY_URL, 'latin1')].map((b) => `0x${(b ^ KEY).toString(16)}`).join(',')
  const source = `#include <stdlib.h>
#include <unistd.h>
static const unsigned char enc[] = {${enc}};
int main(int argc, char **argv) {
  volatile char *u = malloc(sizeof enc + 1);
  for (unsigned i = 0; i < sizeof enc; i++) u[i] = (char)(enc[i] ^ ${KEY});
  u[sizeof enc] = 0;
  sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 1);
  return u[0] == 'h' ? 0 : 1;
}
`
  const out = compileC({ compiler: 'gcc', source, flags: ['-O0'], out: path.join(dir, 'memonly') })
  if (readFileSync(out).includes(Buffer.from(MEMONLY_URL))) throw new Error('the URL is in the file')
  return out
}
