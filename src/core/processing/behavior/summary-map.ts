// Which Windows API calls say something an analyst reads in behavior.summary, and under which
// category: the table Cuckoo 2's BehaviorReconstructor (processing/platform/windows.py) applies
// to monitor calls, restated here as data so one line adds an API. Each entry names the category
// and the argument(s) whose value is recorded. Handle-tracking ones (NtWriteFile → file_written
// of the path opened on that handle) are marked and handled by the caller.

export type SummaryRule =
  | { category: string; arg: string; ifNonEmpty?: boolean }
  /** file_opened / file_created / file_recreated / file_failed from status_info, and remembers the handle. */
  | { special: 'create-file' }
  | { special: 'read-file' | 'write-file' | 'close-handle' }
  | { special: 'create-process' }
  | { special: 'shell-execute' }
  | { special: 'download' }

const table: [string[], SummaryRule][] = [
  [['CreateDirectoryW', 'CreateDirectoryExW'], { category: 'directory_created', arg: 'dirpath' }],
  [['RemoveDirectoryA', 'RemoveDirectoryW'], { category: 'directory_removed', arg: 'dirpath' }],
  [['DeleteFileA', 'DeleteFileW', 'NtDeleteFile'], { category: 'file_deleted', arg: 'filepath' }],
  [['FindFirstFileExA', 'FindFirstFileExW'], { category: 'directory_enumerated', arg: 'filepath' }],
  [['GetFileAttributesW', 'GetFileAttributesExW'], { category: 'file_exists', arg: 'filepath' }],
  [['LdrLoadDll', 'LoadLibraryA', 'LoadLibraryW', 'LoadLibraryExA', 'LoadLibraryExW'], { category: 'dll_loaded', arg: 'module_name' }],
  [['NtCreateFile', 'NtOpenFile'], { special: 'create-file' }],
  [['NtReadFile'], { special: 'read-file' }],
  [['NtWriteFile'], { special: 'write-file' }],
  [['NtClose'], { special: 'close-handle' }],
  [['RegOpenKeyExA', 'RegOpenKeyExW', 'RegCreateKeyExA', 'RegCreateKeyExW', 'NtOpenKey', 'NtOpenKeyEx', 'NtCreateKey'], { category: 'regkey_opened', arg: 'regkey' }],
  [['RegDeleteKeyA', 'RegDeleteKeyW', 'RegDeleteValueA', 'RegDeleteValueW', 'NtDeleteValueKey', 'NtDeleteKey'], { category: 'regkey_deleted', arg: 'regkey' }],
  [['RegQueryValueExA', 'RegQueryValueExW', 'NtQueryValueKey'], { category: 'regkey_read', arg: 'regkey' }],
  [['RegSetValueExA', 'RegSetValueExW', 'NtSetValueKey'], { category: 'regkey_written', arg: 'regkey' }],
  [['URLDownloadToFileW'], { special: 'download' }],
  [['InternetConnectA', 'InternetConnectW'], { category: 'connects_host', arg: 'hostname' }],
  [['InternetOpenUrlA', 'InternetOpenUrlW'], { category: 'fetches_url', arg: 'url' }],
  [['DnsQuery_A', 'DnsQuery_W', 'DnsQuery_UTF8', 'getaddrinfo', 'GetAddrInfoW', 'gethostbyname'], { category: 'resolves_host', arg: 'hostname', ifNonEmpty: true }],
  [['connect', 'ConnectEx'], { category: 'connects_ip', arg: 'ip_address' }],
  [['NtCreateMutant', 'NtOpenMutant'], { category: 'mutex', arg: 'mutant_name', ifNonEmpty: true }],
  [['CreateProcessInternalW'], { special: 'create-process' }],
  [['ShellExecuteExW'], { special: 'shell-execute' }],
  [['system'], { category: 'command_line', arg: 'command' }],
  [['IWbemServices_ExecQuery', 'IWbemServices_ExecQueryAsync'], { category: 'wmi_query', arg: 'query' }],
  [['CreateServiceA', 'CreateServiceW'], { category: 'service_created', arg: 'service_name' }],
  [['OpenServiceA', 'OpenServiceW'], { category: 'service_opened', arg: 'service_name' }]
]

export const SUMMARY_RULES: ReadonlyMap<string, SummaryRule> = new Map(table.flatMap(([apis, rule]) => apis.map((api): [string, SummaryRule] => [api, rule])))

/** NTSTATUS success (as Cuckoo: the unsigned value is below 0x80000000). */
export function ntSuccess(value: unknown): boolean {
  if (typeof value !== 'number') return true
  return ((value % 2 ** 32) + 2 ** 32) % 2 ** 32 < 0x80000000
}
