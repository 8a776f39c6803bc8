/*
 * The output of aviary-winmon (winmon.c): JSON lines collected in a buffer and written in one go
 * per poll. Every string from the guest goes through out_wstr, which cuts it and escapes it:
 * quotes, backslashes and control characters as JSON escapes, UTF-16 as UTF-8, a lone surrogate
 * (not text) as U+FFFD. A failed write means the analyzer is gone: the helper exits.
 */
#include "winmon.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static HANDLE hout;

void out_set(HANDLE h) { hout = h; }
static char *obuf;
static size_t olen, ocap;

void out_flush(void)
{
  size_t off = 0;
  while (off < olen) {
    DWORD n = 0;
    if (!WriteFile(hout, obuf + off, (DWORD)(olen - off), &n, NULL) || n == 0) ExitProcess(3); /* reader gone */
    off += n;
  }
  olen = 0;
}

static void put(const char *s, size_t n)
{
  if (olen + n > ocap) {
    size_t cap = ocap ? ocap : 65536;
    while (cap < olen + n) cap *= 2;
    char *p = realloc(obuf, cap);
    if (p == NULL) ExitProcess(4);
    obuf = p;
    ocap = cap;
  }
  memcpy(obuf + olen, s, n);
  olen += n;
}

static void puts_(const char *s) { put(s, strlen(s)); }

long long now_ms(void)
{
  FILETIME ft;
  GetSystemTimeAsFileTime(&ft);
  ULONGLONG t = ((ULONGLONG)ft.dwHighDateTime << 32) | ft.dwLowDateTime;
  return (long long)(t / 10000ULL) - 11644473600000LL;
}

long long filetime_ms(const FILETIME *ft)
{
  ULONGLONG t = ((ULONGLONG)ft->dwHighDateTime << 32) | ft->dwLowDateTime;
  return t == 0 ? 0 : (long long)(t / 10000ULL) - 11644473600000LL;
}

void out_begin(const char *type)
{
  if (olen > (1u << 20)) out_flush();
  puts_("{\"t\":\"");
  puts_(type);
  puts_("\"");
}

void out_key(const char *key)
{
  puts_(",\"");
  puts_(key);
  puts_("\":");
}

void out_num(const char *key, long long v)
{
  char b[32];
  out_key(key);
  snprintf(b, sizeof b, "%lld", v);
  puts_(b);
}

void out_null(const char *key) { out_key(key); puts_("null"); }
void out_bool(const char *key, int v) { out_key(key); puts_(v ? "true" : "false"); }
void out_end(void) { puts_("}\n"); }

/* Plain ASCII from this program (addresses, fixed words): nothing to escape. */
void out_astr(const char *key, const char *s)
{
  out_key(key);
  puts_("\"");
  puts_(s);
  puts_("\"");
}

static void put_cp(unsigned c)
{
  char b[8];
  if (c == '"' || c == '\\') { b[0] = '\\'; b[1] = (char)c; put(b, 2); }
  else if (c < 0x20 || c == 0x7f) { snprintf(b, sizeof b, "\\u%04x", c); put(b, 6); }
  else if (c < 0x80) { b[0] = (char)c; put(b, 1); }
  else if (c < 0x800) { b[0] = (char)(0xC0 | (c >> 6)); b[1] = (char)(0x80 | (c & 0x3F)); put(b, 2); }
  else if (c < 0x10000) {
    b[0] = (char)(0xE0 | (c >> 12)); b[1] = (char)(0x80 | ((c >> 6) & 0x3F)); b[2] = (char)(0x80 | (c & 0x3F)); put(b, 3);
  } else {
    b[0] = (char)(0xF0 | (c >> 18)); b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    b[2] = (char)(0x80 | ((c >> 6) & 0x3F)); b[3] = (char)(0x80 | (c & 0x3F)); put(b, 4);
  }
}

void out_wstr(const char *key, const WCHAR *s, size_t units, size_t max)
{
  int cut = 0;
  out_key(key);
  puts_("\"");
  for (size_t i = 0; i < units; i++) {
    if (i >= max) { cut = 1; break; }
    unsigned c = s[i];
    if (c >= 0xD800 && c <= 0xDBFF) {
      if (i + 1 < units && s[i + 1] >= 0xDC00 && s[i + 1] <= 0xDFFF) {
        if (i + 1 >= max) { cut = 1; break; }
        c = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00u);
        i++;
      } else c = 0xFFFD; /* a lone surrogate is not text */
    } else if (c >= 0xDC00 && c <= 0xDFFF) c = 0xFFFD;
    put_cp(c);
  }
  puts_("\"");
  if (cut) { puts_(",\""); puts_(key); puts_("_truncated\":true"); }
}

