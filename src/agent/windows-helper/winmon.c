/*
 * aviary-winmon: the process, connection and registry monitor of Aviary's Windows analyzer.
 *
 * Started by the analyzer (src/agent/analyzer/windows-monitor.ts) before the sample, with the
 * analyzer's own pid as --parent. It follows every process descending from that pid (except
 * itself), polling Toolhelp32 every --interval ms (25 by default: a Windows or Wine process lives
 * longer than that even when it does nothing), and writes one JSON line per event:
 *
 *   {"t":"hello","version":1,"pid":..,"parent":..,"time":..}
 *   {"t":"process","pid":..,"ppid":..,"created":ms|null,"exe":"..","cmd":"..","time":..}
 *   {"t":"exit","pid":..,"code":n|null,"time":..}
 *   {"t":"connection","proto":"tcp","src":"..","sport":..,"dst":"..","dport":..,"pid":..,"time":..}
 *   {"t":"registry","op":"written"|"deleted","key":"HKEY_...\\Run","name":"..","data":"..","time":..}
 *   {"t":"limit","what":"processes"|"connections"|"registry"|"snapshot","max":n}
 *   {"t":"bye","time":..}
 *
 * Command lines come from NtQueryInformationProcess(ProcessCommandLineInformation) (Windows 8.1
 * and later, Wine) or else from the process's PEB; connections from GetExtendedTcpTable with the
 * owning pid (UDP tables carry no remote address, so UDP is left to the packet capture). It
 * stops when the parent exits or, with --stdin, when its standard input closes, after one last
 * poll of everything.
 *
 * The guest is hostile: every string is cut (MAX_* in winmon.h) and escaped here, the tables are
 * fixed in size, and what does not fit is said once in a `limit` line. Written in C, not in the
 * analyzer's JavaScript, because Windows gives these facts only through Win32 calls that Node
 * cannot make, and PowerShell (what the analyzer used before) is a stub under Wine and costs
 * ~300 ms of CPU per poll on Windows.
 */
#include "winmon.h"
#include <tlhelp32.h>
#include <winternl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* ---- processes ------------------------------------------------------------------------- */

typedef struct {
  DWORD pid;
  HANDLE h;          /* held until the exit is seen: Windows does not reuse the pid meanwhile */
  long long created; /* 0 when the OS would not say */
  long long exited;  /* 0 while alive */
} Proc;

#define HASH_SIZE 16384 /* > 2 x the largest table: open addressing stays short */
#define MAX_SNAPSHOT 8192

static Proc *procs;
static int nprocs, max_procs = 4096, *alive, nalive;
static int pid_index[HASH_SIZE]; /* pid -> latest index in procs, -1 empty */
static DWORD self_pid;
static int said_procs_limit, said_snapshot_limit;

typedef NTSTATUS(NTAPI *NtQip)(HANDLE, ULONG, PVOID, ULONG, PULONG);
static NtQip ntqip;

static unsigned slot_of(DWORD pid)
{
  unsigned s = (pid * 2654435761u) & (HASH_SIZE - 1);
  while (pid_index[s] >= 0 && procs[pid_index[s]].pid != pid) s = (s + 1) & (HASH_SIZE - 1);
  return s;
}

static int lookup(DWORD pid) { return pid_index[slot_of(pid)]; }

static WCHAR *cmd_buf;
static size_t cmd_cap;

static WCHAR *cmd_space(size_t bytes)
{
  if (bytes > cmd_cap) {
    WCHAR *p = realloc(cmd_buf, bytes);
    if (p == NULL) return NULL;
    cmd_buf = p;
    cmd_cap = bytes;
  }
  return cmd_buf;
}

/*
 * The command line ends at its first NUL, as the process itself sees it (GetCommandLineW's
 * string). Under Wine a process just created has its parameters' length set before their text is
 * copied in: the text read then is all NULs (conhost.exe's was 47 of them), or empty.
 */
static long to_nul(long units)
{
  if (units < 0) return units;
  for (long i = 0; i < units; i++) if (cmd_buf[i] == 0) return i;
  return units;
}

/* The command line of `h` into cmd_buf; its length in UTF-16 units, or -1 when unknown. */
static long command_line_raw(HANDLE h);
static long command_line(HANDLE h) { return to_nul(command_line_raw(h)); }
static long command_line_raw(HANDLE h)
{
  if (ntqip != NULL) {
    ULONG len = 0;
    BYTE probe[512];
    NTSTATUS st = ntqip(h, 60 /* ProcessCommandLineInformation */, probe, sizeof probe, &len);
    UNICODE_STRING *us = (UNICODE_STRING *)probe;
    if (st == (NTSTATUS)0xC0000004L && len > 0 && len <= (1u << 18)) { /* STATUS_INFO_LENGTH_MISMATCH */
      BYTE *big = malloc(len);
      if (big != NULL && ntqip(h, 60, big, len, &len) >= 0) {
        us = (UNICODE_STRING *)big;
        size_t units = us->Length / 2;
        WCHAR *dst = cmd_space(units * 2 + 2);
        if (dst != NULL) memcpy(dst, us->Buffer, units * 2);
        free(big);
        return dst == NULL ? -1 : (long)units;
      }
      free(big);
    } else if (st >= 0) {
      size_t units = us->Length / 2;
      WCHAR *dst = cmd_space(units * 2 + 2);
      if (dst == NULL) return -1;
      memcpy(dst, us->Buffer, units * 2);
      return (long)units;
    }
    /* The PEB: PEB.ProcessParameters at 0x20, RTL_USER_PROCESS_PARAMETERS.CommandLine at 0x70 (x64). */
    PROCESS_BASIC_INFORMATION pbi;
    ULONGLONG params = 0;
    UNICODE_STRING cl;
    SIZE_T got = 0;
    if (ntqip(h, ProcessBasicInformation, &pbi, sizeof pbi, NULL) < 0 || pbi.PebBaseAddress == NULL) return -1;
    if (!ReadProcessMemory(h, (BYTE *)pbi.PebBaseAddress + 0x20, &params, sizeof params, &got) || params == 0) return -1;
    if (!ReadProcessMemory(h, (BYTE *)(UINT_PTR)params + 0x70, &cl, sizeof cl, &got)) return -1;
    size_t units = cl.Length / 2;
    if (units > MAX_CMD_UNITS + 1) units = MAX_CMD_UNITS + 1; /* one more than written: marks the cut */
    WCHAR *dst = cmd_space(units * 2 + 2);
    if (dst == NULL || !ReadProcessMemory(h, cl.Buffer, dst, units * 2, &got)) return -1;
    return (long)(got / 2);
  }
  return -1;
}

static HANDLE open_process(DWORD pid)
{
  HANDLE h = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ | SYNCHRONIZE, FALSE, pid);
  if (h == NULL) h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, FALSE, pid);
  return h;
}

/* The creation time, or 0 when the OS would not say or says nonsense (a starting process on Wine). */
static long long created_of(HANDLE h)
{
  FILETIME c, e, k, u;
  long long t = h != NULL && GetProcessTimes(h, &c, &e, &k, &u) ? filetime_ms(&c) : 0;
  return t < 946684800000LL || t > now_ms() + 60000 ? 0 : t;
}

static int track(DWORD pid, HANDLE h, long long created)
{
  if (nprocs >= max_procs) {
    if (!said_procs_limit) { out_begin("limit"); out_astr("what", "processes"); out_num("max", max_procs - 1); out_end(); }
    said_procs_limit = 1;
    if (h != NULL) CloseHandle(h);
    return -1;
  }
  Proc *p = &procs[nprocs];
  p->pid = pid;
  p->h = h;
  p->created = created;
  p->exited = 0;
  pid_index[slot_of(pid)] = nprocs;
  alive[nalive++] = nprocs;
  return nprocs++;
}

typedef struct {
  DWORD pid, ppid;
  WCHAR exe[MAX_PATH];
} Ent;

static Ent snap[MAX_SNAPSHOT];
static int nsnap;
static unsigned char seen_in_snap[HASH_SIZE]; /* slot of a tracked pid present in this snapshot */

static void take_snapshot(void)
{
  nsnap = 0;
  HANDLE s = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (s == INVALID_HANDLE_VALUE) return;
  PROCESSENTRY32W pe;
  pe.dwSize = sizeof pe;
  for (BOOL ok = Process32FirstW(s, &pe); ok; ok = Process32NextW(s, &pe)) {
    if (nsnap >= MAX_SNAPSHOT) {
      if (!said_snapshot_limit) { out_begin("limit"); out_astr("what", "snapshot"); out_num("max", MAX_SNAPSHOT); out_end(); }
      said_snapshot_limit = 1;
      break;
    }
    snap[nsnap].pid = pe.th32ProcessID;
    snap[nsnap].ppid = pe.th32ParentProcessID;
    memcpy(snap[nsnap].exe, pe.szExeFile, sizeof pe.szExeFile);
    snap[nsnap].exe[MAX_PATH - 1] = 0;
    nsnap++;
  }
  CloseHandle(s);
}

/*
 * A process seen while it is still starting has no image name, command line or creation time
 * yet (Wine shows them so for some milliseconds): it waits here, its handle held, for up to
 * STARTING_POLLS polls or until it ends, and is then written with what there is. Holding the
 * handle keeps a process that ends at once (a PE that returns from main) from vanishing unseen.
 */
#define STARTING_POLLS 40 /* at 5 ms while any is starting: 200 ms */
#define MAX_STARTING 256
typedef struct {
  Ent e;
  HANDLE h;
  long long created;
  int polls;
} Starting;
static Starting starting[MAX_STARTING];
static int nstarting;

static int is_starting(DWORD pid)
{
  for (int i = 0; i < nstarting; i++) if (starting[i].e.pid == pid) return 1;
  return 0;
}

/* Writes the process line; returns 0 (nothing written) when it is still starting and may wait. */
static int emit_process(const Ent *e, HANDLE h, long long created, int may_wait)
{
  WCHAR path[MAX_PATH_UNITS + 2];
  DWORD plen = MAX_PATH_UNITS + 1;
  int have_path = h != NULL && QueryFullProcessImageNameW(h, 0, path, &plen) && plen > 0;
  long units = h != NULL ? command_line(h) : -1;
  /* An empty command line is one not yet copied in (see to_nul): wait for it while it starts. */
  if (may_wait && (!have_path || units <= 0 || created == 0)) return 0;
  out_begin("process");
  out_num("pid", e->pid);
  out_num("ppid", e->ppid);
  if (created) out_num("created", created); else out_null("created");
  if (have_path) out_wstr("exe", path, plen, MAX_PATH_UNITS);
  else if (e->exe[0] != 0) out_wstr("exe", e->exe, wcsnlen(e->exe, MAX_PATH), MAX_PATH_UNITS);
  else out_null("exe");
  if (units >= 0) out_wstr("cmd", cmd_buf, (size_t)units, MAX_CMD_UNITS); else out_null("cmd");
  out_num("time", now_ms());
  out_end();
  return 1;
}

/* The processes that were starting: written and tracked once they can say who they are, or ended. */
static void poll_starting(void)
{
  for (int i = 0; i < nstarting;) {
    Starting *s = &starting[i];
    int ended = s->h == NULL || WaitForSingleObject(s->h, 0) == WAIT_OBJECT_0;
    if (s->created == 0) s->created = created_of(s->h);
    if (nprocs < max_procs && !emit_process(&s->e, s->h, s->created, !ended && ++s->polls < STARTING_POLLS)) { i++; continue; }
    track(s->e.pid, s->h, s->created); /* past the limit: says so once and closes the handle */
    starting[i] = starting[--nstarting];
  }
}

static void poll_processes(void)
{
  take_snapshot();
  poll_starting();
  /* Descendants of tracked processes, children and grandchildren alike, whatever the order. */
  for (int pass = 0, grew = 1; grew && pass < 64; pass++) {
    grew = 0;
    for (int i = 0; i < nsnap; i++) {
      const Ent *e = &snap[i];
      if (e->pid == self_pid || e->pid == 0 || e->pid == e->ppid) continue;
      int have = lookup(e->pid);
      if ((have >= 0 && procs[have].exited == 0) || is_starting(e->pid)) continue;
      int par = lookup(e->ppid);
      if (par < 0) continue;
      HANDLE h = open_process(e->pid);
      long long created = created_of(h);
      const Proc *p = &procs[par];
      /* A pid the OS reused: the parent of that name was not yet born, or had already ended. */
      int reused = (created != 0 && p->created != 0 && created < p->created) ||
                   (created != 0 && p->exited != 0 && created > p->exited) ||
                   (have >= 0 && created != 0 && created <= procs[have].created);
      if (reused) { if (h != NULL) CloseHandle(h); continue; }
      int ended = h != NULL && WaitForSingleObject(h, 0) == WAIT_OBJECT_0;
      if (nprocs >= max_procs) { track(e->pid, h, created); return; } /* says the limit once */
      if (!emit_process(e, h, created, !ended && h != NULL && nstarting < MAX_STARTING)) {
        Starting *st = &starting[nstarting++]; /* still starting: looked at again next poll */
        st->e = *e;
        st->h = h;
        st->created = created;
        st->polls = 0;
        continue;
      }
      track(e->pid, h, created);
      grew = 1;
    }
  }
  /* Exits: a handle that is signalled, or (without a handle) a pid gone from the snapshot. */
  memset(seen_in_snap, 0, sizeof seen_in_snap);
  for (int i = 0; i < nsnap; i++) {
    unsigned s = slot_of(snap[i].pid);
    if (pid_index[s] >= 0) seen_in_snap[s] = 1;
  }
  for (int k = 0; k < nalive;) {
    Proc *p = &procs[alive[k]];
    int gone;
    DWORD code = 0;
    int have_code = 0;
    if (p->h != NULL) {
      gone = WaitForSingleObject(p->h, 0) == WAIT_OBJECT_0;
      if (gone) have_code = GetExitCodeProcess(p->h, &code);
    } else gone = !seen_in_snap[slot_of(p->pid)];
    if (!gone) { k++; continue; }
    p->exited = now_ms();
    if (p->h != NULL) CloseHandle(p->h);
    p->h = NULL;
    if (alive[k] != 0) { /* the anchor (the analyzer) is never reported */
      out_begin("exit");
      out_num("pid", p->pid);
      if (have_code) out_num("code", code); else out_null("code");
      out_num("time", p->exited);
      out_end();
    }
    alive[k] = alive[--nalive];
  }
}

int tracked_pid(DWORD pid) { return lookup(pid) >= 0; }


/* ---- main loop ------------------------------------------------------------------------- */

static HANDLE stop_event;

static DWORD WINAPI watch_stdin(LPVOID arg)
{
  (void)arg;
  char b[256];
  DWORD n;
  HANDLE in = GetStdHandle(STD_INPUT_HANDLE);
  while (ReadFile(in, b, sizeof b, &n, NULL) && n > 0) {}
  SetEvent(stop_event);
  return 0;
}

static long arg_num(const WCHAR *v, long lo, long hi, long dflt)
{
  if (v == NULL) return dflt;
  long n = wcstol(v, NULL, 10);
  return n < lo ? lo : n > hi ? hi : n;
}

int wmain(int argc, WCHAR **argv)
{
  DWORD parent = 0;
  long interval = 25, conn_every = 100, reg_every = 200, deep_every = 1000;
  int use_stdin = 0, registry = 1;
  const WCHAR *out_path = NULL;
  if (argc >= 3 && !wcscmp(argv[1], L"--dump")) {
    long long max = 64LL * 1024 * 1024;
    if (argc >= 5 && !wcscmp(argv[3], L"--max")) max = _wcstoi64(argv[4], NULL, 10);
    return dump_main((DWORD)arg_num(argv[2], 1, 0x7fffffff, 0), max > 0 ? max : 64LL * 1024 * 1024);
  }
  for (int i = 1; i < argc; i++) {
    const WCHAR *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!wcscmp(a, L"--parent")) { parent = (DWORD)arg_num(v, 0, 0x7fffffff, 0); i++; }
    else if (!wcscmp(a, L"--interval")) { interval = arg_num(v, 5, 10000, 25); i++; }
    else if (!wcscmp(a, L"--conn-interval")) { conn_every = arg_num(v, 5, 60000, 100); i++; }
    else if (!wcscmp(a, L"--reg-interval")) { reg_every = arg_num(v, 5, 60000, 200); i++; }
    else if (!wcscmp(a, L"--max-procs")) { max_procs = (int)arg_num(v, 1, HASH_SIZE / 2 - 1, 4096); i++; }
    else if (!wcscmp(a, L"--out")) { out_path = v; i++; }
    else if (!wcscmp(a, L"--stdin")) use_stdin = 1;
    else if (!wcscmp(a, L"--no-registry")) registry = 0;
    else { fwprintf(stderr, L"aviary-winmon: unknown argument %ls\n", a); return 2; }
  }
  if (parent == 0) { fwprintf(stderr, L"aviary-winmon: --parent PID is required\n"); return 2; }
  HANDLE hout = out_path != NULL
    ? CreateFileW(out_path, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL)
    : GetStdHandle(STD_OUTPUT_HANDLE);
  if (hout == INVALID_HANDLE_VALUE || hout == NULL) { fwprintf(stderr, L"aviary-winmon: cannot open the output\n"); return 2; }
  out_set(hout);

  self_pid = GetCurrentProcessId();
  ntqip = (NtQip)(void *)GetProcAddress(GetModuleHandleW(L"ntdll.dll"), "NtQueryInformationProcess");
  procs = calloc((size_t)max_procs + 1, sizeof *procs);
  alive = calloc((size_t)max_procs + 1, sizeof *alive);
  if (procs == NULL || alive == NULL) return 4;
  memset(pid_index, 0xff, sizeof pid_index);
  max_procs++; /* the anchor takes one entry */
  HANDLE ph = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, FALSE, parent);
  if (ph == NULL) { fwprintf(stderr, L"aviary-winmon: no process %lu\n", (unsigned long)parent); return 2; }
  track(parent, ph, created_of(ph));
  stop_event = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (use_stdin) CreateThread(NULL, 0, watch_stdin, NULL, 0, NULL);
  if (registry) reg_init();

  out_begin("hello");
  out_num("version", WINMON_VERSION);
  out_num("pid", self_pid);
  out_num("parent", parent);
  out_num("time", now_ms());
  out_end();
  out_flush();

  HANDLE conn_thread = conn_start(stop_event, conn_every);
  long long next_reg = now_ms() + reg_every, next_deep = now_ms() + deep_every;
  for (;;) {
    HANDLE waits[2] = { stop_event, ph };
    /* While a process is starting, look again every 5 ms: its command line can be read only
       while it runs, and some (cmd.exe /c under Wine) run for 20-30 ms. */
    DWORD w = WaitForMultipleObjects(2, waits, FALSE, nstarting > 0 ? 5 : (DWORD)interval);
    int last = w == WAIT_OBJECT_0 || w == WAIT_OBJECT_0 + 1 || procs[0].exited != 0;
    long long t = now_ms();
    poll_processes();
    poll_connections(last && conn_thread == NULL);
    if (registry && (last || t >= next_reg)) {
      int deep = last || t >= next_deep;
      reg_scan(deep);
      next_reg = t + reg_every;
      if (deep) next_deep = t + deep_every;
    }
    if (last) break;
    out_flush();
  }
  /* One last read of the tables, by the thread (it may be in the middle of one). */
  SetEvent(stop_event);
  if (conn_thread != NULL && WaitForSingleObject(conn_thread, 5000) == WAIT_OBJECT_0) poll_connections(0);
  out_begin("bye");
  out_num("time", now_ms());
  out_end();
  out_flush();
  return 0;
}
