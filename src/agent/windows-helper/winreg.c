/*
 * The registry part of aviary-winmon: the keys through which Windows programs start themselves
 * again (Run, RunOnce, Winlogon, services, Image File Execution Options, ...) are read at the
 * start (the baseline) and again every --reg-interval ms; each value that appeared or changed is
 * written as {"t":"registry","op":"written",...}, each that went away as "deleted". Polling and
 * diffing rather than RegNotifyChangeKeyValue: a notification says only that something changed,
 * the values still have to be read and compared, and a key that does not exist yet (RunOnce often)
 * cannot be watched at all. A value written and removed between two scans is not seen.
 * The service and IFEO keys have hundreds of subkeys, so they are read only on deep scans (every
 * second and at the end).
 */
#include "winmon.h"
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

typedef struct {
  HKEY root;
  const char *root_name;
  const WCHAR *path;
  int subkeys; /* watch the values of each direct subkey, not of the key itself */
} Watch;

#define CV L"Software\\Microsoft\\Windows\\CurrentVersion\\"
#define NTCV L"Software\\Microsoft\\Windows NT\\CurrentVersion\\"
#define HKCU HKEY_CURRENT_USER, "HKEY_CURRENT_USER"
#define HKLM HKEY_LOCAL_MACHINE, "HKEY_LOCAL_MACHINE"

static const Watch WATCHES[] = {
  { HKCU, CV L"Run", 0 }, { HKCU, CV L"RunOnce", 0 }, { HKCU, CV L"RunServices", 0 }, { HKCU, CV L"RunServicesOnce", 0 },
  { HKCU, CV L"Policies\\Explorer\\Run", 0 }, { HKCU, NTCV L"Windows", 0 }, { HKCU, NTCV L"Winlogon", 0 },
  { HKLM, CV L"Run", 0 }, { HKLM, CV L"RunOnce", 0 }, { HKLM, CV L"RunServices", 0 }, { HKLM, CV L"RunServicesOnce", 0 },
  { HKLM, CV L"Policies\\Explorer\\Run", 0 }, { HKLM, NTCV L"Windows", 0 }, { HKLM, NTCV L"Winlogon", 0 },
  { HKLM, L"Software\\Wow6432Node\\Microsoft\\Windows\\CurrentVersion\\Run", 0 },
  { HKLM, L"Software\\Wow6432Node\\Microsoft\\Windows\\CurrentVersion\\RunOnce", 0 },
  { HKLM, L"SYSTEM\\CurrentControlSet\\Services", 1 },
  { HKLM, NTCV L"Image File Execution Options", 1 },
};
#define NWATCH (int)(sizeof WATCHES / sizeof WATCHES[0])

#define MAX_VALUES 8192
#define TABLE (MAX_VALUES * 2)
#define MAX_SUBKEYS 2048
#define MAX_VALUES_PER_KEY 1024
#define MAX_DATA (1u << 20)

typedef struct {
  ULONGLONG id;    /* watch, subkey and value name */
  ULONGLONG value; /* type and data */
  unsigned gen;
  unsigned char state; /* 0 empty, 1 live, 2 removed (keeps probing chains whole) */
  unsigned char watch;
  WCHAR *where; /* "subkey\0name\0", for the deleted line */
} Val;

static Val vals[TABLE];
static int nvals, said_limit, baseline = 1;
static unsigned gen;
static BYTE *data;
static WCHAR name[16384];

static ULONGLONG fnv(ULONGLONG h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

static void emit(int op_written, int w, const WCHAR *sub, size_t sublen, const WCHAR *vname, size_t nlen, DWORD type, const BYTE *d, DWORD dlen)
{
  const Watch *wa = &WATCHES[w];
  /* key: ROOT\path[\subkey], written as one escaped string from pieces. */
  size_t plen = wcslen(wa->path), rlen = strlen(wa->root_name);
  size_t total = rlen + 1 + plen + (sublen ? 1 + sublen : 0);
  WCHAR *key = malloc((total + 1) * sizeof(WCHAR));
  if (key == NULL) return;
  size_t k = 0;
  for (size_t i = 0; i < rlen; i++) key[k++] = (WCHAR)wa->root_name[i];
  key[k++] = L'\\';
  memcpy(key + k, wa->path, plen * sizeof(WCHAR));
  k += plen;
  if (sublen) { key[k++] = L'\\'; memcpy(key + k, sub, sublen * sizeof(WCHAR)); k += sublen; }
  out_begin("registry");
  out_astr("op", op_written ? "written" : "deleted");
  out_wstr("key", key, k, 4096);
  out_wstr("name", vname, nlen, MAX_REG_NAME);
  free(key);
  if (op_written) {
    if (type == REG_SZ || type == REG_EXPAND_SZ || type == REG_MULTI_SZ) {
      size_t units = dlen / 2;
      const WCHAR *s = (const WCHAR *)d;
      while (units > 0 && s[units - 1] == 0) units--; /* trailing terminators */
      out_wstr("data", s, units, MAX_REG_DATA);
    } else if (type == REG_DWORD && dlen == 4) {
      out_num("data", *(const DWORD *)d);
    } else out_null("data");
    out_num("type", type);
    out_num("size", dlen);
  }
  out_num("time", now_ms());
  out_end();
}

static Val *find(ULONGLONG id, int create)
{
  unsigned s = (unsigned)(id % TABLE), free_slot = TABLE;
  while (vals[s].state != 0) {
    if (vals[s].id == id) return &vals[s];
    if (vals[s].state == 2 && free_slot == TABLE) free_slot = s;
    s = (s + 1) % TABLE;
  }
  if (!create) return NULL;
  if (nvals >= MAX_VALUES) {
    if (!said_limit) { out_begin("limit"); out_astr("what", "registry"); out_num("max", MAX_VALUES); out_end(); }
    said_limit = 1;
    return NULL;
  }
  return &vals[free_slot != TABLE ? free_slot : s];
}

static void scan_values(int w, HKEY h, const WCHAR *sub, size_t sublen)
{
  for (DWORD i = 0; i < MAX_VALUES_PER_KEY; i++) {
    DWORD nlen = sizeof name / sizeof name[0], type = 0, dlen = MAX_DATA;
    LONG r = RegEnumValueW(h, i, name, &nlen, NULL, &type, data, &dlen);
    ULONGLONG value = fnv(14695981039346656037ULL, &type, sizeof type);
    if (r == ERROR_MORE_DATA) value = fnv(value, &dlen, sizeof dlen); /* over 1 MiB: its size stands for it */
    else if (r != ERROR_SUCCESS) break;
    else value = fnv(value, data, dlen);
    ULONGLONG id = fnv(fnv(fnv(14695981039346656037ULL, &w, sizeof w), sub, sublen * 2 + 2), name, nlen * 2);
    Val *v = find(id, 1);
    if (v == NULL) continue;
    int fresh = v->state != 1, changed = fresh || v->value != value;
    if (fresh) {
      size_t bytes = (sublen + nlen + 2) * sizeof(WCHAR);
      v->where = malloc(bytes);
      if (v->where == NULL) continue;
      memcpy(v->where, sub, sublen * sizeof(WCHAR));
      v->where[sublen] = 0;
      memcpy(v->where + sublen + 1, name, nlen * sizeof(WCHAR));
      v->where[sublen + 1 + nlen] = 0;
      v->id = id;
      v->state = 1;
      v->watch = (unsigned char)w;
      nvals++;
    }
    v->value = value;
    v->gen = gen;
    if (changed && !baseline) emit(1, w, sub, sublen, name, nlen, type, data, r == ERROR_SUCCESS ? dlen : 0);
  }
}

static void scan_watch(int w)
{
  const Watch *wa = &WATCHES[w];
  HKEY h;
  if (RegOpenKeyExW(wa->root, wa->path, 0, KEY_READ | KEY_WOW64_64KEY, &h) == ERROR_SUCCESS) {
    if (!wa->subkeys) scan_values(w, h, L"", 0);
    else {
      WCHAR sub[256];
      for (DWORD i = 0; i < MAX_SUBKEYS; i++) {
        DWORD slen = sizeof sub / sizeof sub[0];
        if (RegEnumKeyExW(h, i, sub, &slen, NULL, NULL, NULL, NULL) != ERROR_SUCCESS) break;
        HKEY s;
        if (RegOpenKeyExW(h, sub, 0, KEY_READ | KEY_WOW64_64KEY, &s) != ERROR_SUCCESS) continue;
        scan_values(w, s, sub, slen);
        RegCloseKey(s);
      }
    }
    RegCloseKey(h);
  }
  /* Whatever of this key was not read again is gone (with its key, maybe). */
  for (int i = 0; i < TABLE; i++) {
    Val *v = &vals[i];
    if (v->state != 1 || v->watch != w || v->gen == gen) continue;
    if (!baseline) {
      size_t sublen = wcslen(v->where);
      const WCHAR *vname = v->where + sublen + 1;
      emit(0, w, v->where, sublen, vname, wcslen(vname), 0, NULL, 0);
    }
    free(v->where);
    v->where = NULL;
    v->state = 2;
    nvals--;
  }
}

void reg_scan(int deep)
{
  gen++;
  for (int w = 0; w < NWATCH; w++) if (deep || !WATCHES[w].subkeys) scan_watch(w);
}

void reg_init(void)
{
  data = malloc(MAX_DATA);
  if (data == NULL) ExitProcess(4);
  baseline = 1;
  reg_scan(1);
  baseline = 0;
}
