/*
 * helper.exe --dump PID [--max BYTES]: a process's memory on standard output in Cuckoo 2's dump
 * format (for each region a 24-byte little-endian header: address u64, size u32, state u32, type
 * u32, protect u32; then its bytes), the regions VirtualQueryEx lists, read with
 * ReadProcessMemory in pieces of at most 1 MiB, each with its own header. What is written matches
 * the Linux analyzer's choice: committed, readable regions that are not a file's unchanged image
 * (MEM_PRIVATE and MEM_MAPPED regions, and MEM_IMAGE ones that are writable); guard pages and
 * PAGE_NOACCESS are left out. Stops at --max bytes of memory (default 64 MiB). Exit code 0 when
 * something was written, 3 when the process cannot be opened.
 */
#include "winmon.h"
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdint.h>

#define PIECE (1024 * 1024)

static int readable(DWORD protect)
{
  if (protect & (PAGE_GUARD | PAGE_NOACCESS)) return 0;
  return (protect & (PAGE_READONLY | PAGE_READWRITE | PAGE_WRITECOPY | PAGE_EXECUTE_READ |
                     PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY)) != 0;
}

static int writable(DWORD protect)
{
  return (protect & (PAGE_READWRITE | PAGE_WRITECOPY | PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY)) != 0;
}

static void put32(unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

int dump_main(DWORD pid, long long max)
{
  HANDLE ph = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE, pid);
  if (ph == NULL) return 3;
  _setmode(_fileno(stdout), _O_BINARY);
  unsigned char *buf = malloc(PIECE);
  if (buf == NULL) return 4;
  long long written = 0;
  MEMORY_BASIC_INFORMATION mbi;
  unsigned char *at = NULL;
  while (written < max && VirtualQueryEx(ph, at, &mbi, sizeof mbi) == sizeof mbi) {
    unsigned char *base = mbi.BaseAddress;
    SIZE_T size = mbi.RegionSize;
    at = base + size;
    if (size == 0 || at <= base) break;
    if (mbi.State != MEM_COMMIT || !readable(mbi.Protect)) continue;
    if (mbi.Type == MEM_IMAGE && !writable(mbi.Protect)) continue;
    for (SIZE_T off = 0; off < size && written < max; off += PIECE) {
      SIZE_T want = size - off < PIECE ? size - off : PIECE;
      if ((long long)want > max - written) want = (SIZE_T)(max - written);
      SIZE_T got = 0;
      if (!ReadProcessMemory(ph, base + off, buf, want, &got) || got == 0) break;
      unsigned char h[24];
      uint64_t addr = (uint64_t)(uintptr_t)(base + off);
      for (int i = 0; i < 8; i++) h[i] = (unsigned char)(addr >> (8 * i));
      put32(h + 8, (uint32_t)got);
      put32(h + 12, mbi.State);
      put32(h + 16, mbi.Type);
      put32(h + 20, mbi.Protect);
      fwrite(h, 1, sizeof h, stdout);
      fwrite(buf, 1, got, stdout);
      written += (long long)got;
      if (got < want) break;
    }
  }
  fflush(stdout);
  free(buf);
  CloseHandle(ph);
  return 0;
}
