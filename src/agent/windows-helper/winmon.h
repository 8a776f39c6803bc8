/*
 * aviary-winmon: the Windows guest's process, connection and registry monitor (see winmon.c).
 * Shared by winmon.c (processes, main loop), winout.c (output), winconn.c (connections) and
 * winreg.c (registry).
 */
#ifndef AVIARY_WINMON_H
#define AVIARY_WINMON_H

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

/* The line format's version, in the hello line; the analyzer reads it (windows-helper-lines.ts). */
#define WINMON_VERSION 1

/* Caps: whatever the guest does, one line stays below ~40 KiB and the table sizes are fixed. */
#define MAX_CMD_UNITS 8192    /* UTF-16 units of a command line written out */
#define MAX_PATH_UNITS 1024   /* of an executable's path */
#define MAX_REG_NAME 512      /* of a registry value's name */
#define MAX_REG_DATA 1024     /* of a registry value's data written out (strings) */

/* windump.c: `--dump PID [--max BYTES]`, a process's memory on standard output. */
int dump_main(DWORD pid, long long max);

/* The output: JSON lines collected per poll and written in one go. */
void out_begin(const char *type);
void out_key(const char *key);
void out_num(const char *key, long long v);
void out_null(const char *key);
void out_bool(const char *key, int v);
void out_astr(const char *key, const char *s);
/* A UTF-16 string, at most `max` units (surrogate pairs kept whole), escaped; adds `<key>_truncated`. */
void out_wstr(const char *key, const WCHAR *s, size_t units, size_t max);
void out_end(void);

void out_set(HANDLE h);
/* Writes what was collected; exits the process when the reader is gone. */
void out_flush(void);

/* Milliseconds since the Unix epoch (of a FILETIME: 0 for 0). */
long long now_ms(void);
long long filetime_ms(const FILETIME *ft);

/* Processes (winmon.c): is `pid` one of the followed processes? */
int tracked_pid(DWORD pid);

/* Connections (winconn.c): a thread reading the TCP tables every `every` ms until `stop` is set. */
HANDLE conn_start(HANDLE stop, long every);
/* Writes the connections of the tables read since the last call (`now`: reads them here). */
void poll_connections(int now);

/* Registry (winreg.c): the first scan is the baseline; later scans write `registry` lines. */
void reg_init(void);
/* deep: also the keys whose subkeys are watched (services, IFEO), which cost more to read. */
void reg_scan(int deep);

#endif
