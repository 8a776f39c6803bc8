/*
 * The connections part of aviary-winmon (winmon.c): the TCP tables (IPv4 and IPv6) with each
 * connection's owning pid, read on a thread of their own and handed to the main loop, which
 * writes each new (src, sport, dst, dport, pid) of a tracked process once.
 */
#include "winmon.h"
#include <iphlpapi.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONNS 4096
static ULONGLONG conn_seen[MAX_CONNS * 2];
static int nconns, said_conns_limit;

static int conn_new(ULONGLONG key)
{
  if (key == 0) key = 1;
  unsigned s = (unsigned)(key % (MAX_CONNS * 2));
  while (conn_seen[s] != 0) {
    if (conn_seen[s] == key) return 0;
    s = (s + 1) % (MAX_CONNS * 2);
  }
  if (nconns >= MAX_CONNS) {
    if (!said_conns_limit) { out_begin("limit"); out_astr("what", "connections"); out_num("max", MAX_CONNS); out_end(); }
    said_conns_limit = 1;
    return 0;
  }
  conn_seen[s] = key;
  nconns++;
  return 1;
}

static ULONGLONG fnv(ULONGLONG h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

static void *tcp_table(ULONG family)
{
  DWORD size = 0;
  void *t = NULL;
  for (int tries = 0; tries < 4; tries++) {
    DWORD r = GetExtendedTcpTable(t, &size, FALSE, family, TCP_TABLE_OWNER_PID_ALL, 0);
    if (r == NO_ERROR) return t;
    free(t);
    t = NULL;
    if (r != ERROR_INSUFFICIENT_BUFFER || size > (8u << 20)) return NULL;
    t = malloc(size);
    if (t == NULL) return NULL;
  }
  free(t);
  return NULL;
}

static void emit_conn(const void *src, const void *dst, int family, unsigned sport, unsigned dport, DWORD pid)
{
  char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
  ULONGLONG key = 14695981039346656037ULL;
  size_t alen = family == AF_INET ? 4 : 16;
  key = fnv(key, src, alen); key = fnv(key, dst, alen);
  key = fnv(key, &sport, sizeof sport); key = fnv(key, &dport, sizeof dport); key = fnv(key, &pid, sizeof pid);
  if (!conn_new(key)) return;
  if (inet_ntop(family, (void *)src, s, sizeof s) == NULL || inet_ntop(family, (void *)dst, d, sizeof d) == NULL) return;
  out_begin("connection");
  out_astr("proto", "tcp");
  out_astr("src", s);
  out_num("sport", sport);
  out_astr("dst", d);
  out_num("dport", dport);
  out_num("pid", pid);
  out_num("time", now_ms());
  out_end();
}

/* Rows of the last tables the connection thread read (NULL: none new since the last look). */
static CRITICAL_SECTION conn_lock;
static MIB_TCPTABLE_OWNER_PID *ready4;
static MIB_TCP6TABLE_OWNER_PID *ready6;

static void emit_tables(MIB_TCPTABLE_OWNER_PID *t4, MIB_TCP6TABLE_OWNER_PID *t6)
{
  for (DWORD i = 0; t4 != NULL && i < t4->dwNumEntries; i++) {
    MIB_TCPROW_OWNER_PID *r = &t4->table[i];
    if (r->dwState == MIB_TCP_STATE_LISTEN || r->dwRemotePort == 0 || !tracked_pid(r->dwOwningPid)) continue;
    emit_conn(&r->dwLocalAddr, &r->dwRemoteAddr, AF_INET, ntohs((u_short)r->dwLocalPort), ntohs((u_short)r->dwRemotePort), r->dwOwningPid);
  }
  for (DWORD i = 0; t6 != NULL && i < t6->dwNumEntries; i++) {
    MIB_TCP6ROW_OWNER_PID *r = &t6->table[i];
    if (r->dwState == MIB_TCP_STATE_LISTEN || r->dwRemotePort == 0 || !tracked_pid(r->dwOwningPid)) continue;
    emit_conn(r->ucLocalAddr, r->ucRemoteAddr, AF_INET6, ntohs((u_short)r->dwLocalPort), ntohs((u_short)r->dwRemotePort), r->dwOwningPid);
  }
  free(t4);
  free(t6);
}

/* What the connection thread read since the last call (with `now`, reads the tables here instead). */
void poll_connections(int now)
{
  EnterCriticalSection(&conn_lock);
  MIB_TCPTABLE_OWNER_PID *t4 = ready4;
  MIB_TCP6TABLE_OWNER_PID *t6 = ready6;
  ready4 = NULL;
  ready6 = NULL;
  LeaveCriticalSection(&conn_lock);
  emit_tables(t4, t6);
  if (now) emit_tables(tcp_table(AF_INET), tcp_table(AF_INET6));
}

static HANDLE stop_event;
static long conn_every = 100;

/*
 * The tables are read on their own thread: under Wine one GetExtendedTcpTable takes 0.7-1 s (it
 * walks /proc to find each socket's owner), which would otherwise stall the process polling.
 * On Windows it takes about a millisecond.
 */
static DWORD WINAPI connection_thread(LPVOID arg)
{
  (void)arg;
  do {
    MIB_TCPTABLE_OWNER_PID *t4 = tcp_table(AF_INET);
    MIB_TCP6TABLE_OWNER_PID *t6 = tcp_table(AF_INET6);
    EnterCriticalSection(&conn_lock);
    /* Tables not looked at yet are replaced by the newer ones. */
    free(ready4);
    free(ready6);
    ready4 = t4;
    ready6 = t6;
    LeaveCriticalSection(&conn_lock);
  } while (WaitForSingleObject(stop_event, (DWORD)conn_every) == WAIT_TIMEOUT);
  return 0;
}

HANDLE conn_start(HANDLE stop, long every)
{
  stop_event = stop;
  conn_every = every;
  InitializeCriticalSection(&conn_lock);
  return CreateThread(NULL, 0, connection_thread, NULL, 0, NULL);
}

