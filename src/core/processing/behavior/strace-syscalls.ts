// What each traced Linux system call becomes in behavior.processes[].calls: its category and its
// arguments by name (Cuckoo's names where the monitor has one for the same thing: filepath,
// oldfilepath/newfilepath, dirpath, ip_address, port, buffer, command_line...), one table entry per
// call so a line adds one. Paths name what the kernel reached, from strace's -yy annotations where
// it prints one: the descriptor an open returned (`= 3</etc/shadow>` for a symlink /tmp/.s to it),
// the descriptor execveat ran (`execveat(3</usr/bin/true>, "", ..., AT_EMPTY_PATH)`), a socket's
// ends; else the path is made absolute against the dirfd strace annotated, or the process's working
// directory. The text as the program passed it is kept as `<name>_r` when the two differ (Cuckoo's
// filepath_r). Values are bounded: a guest can put anything in its log.
import path from 'node:path'
import {
  decorationPath, parseArray, parseFd, parseSockaddr, parseSocketDecoration, parseString, parseStruct, splitArgs, stringText, type SockAddr
} from './strace-line.js'

type Kind =
  | 'raw' | 'int' | 'str' | 'buf' | 'argv' | 'path' | 'dirfd' | 'fd' | 'sock' | 'addr' | 'msg' | 'mmsg' | 'timespec' | 'kv' | 'clone3' | 'skip'

/** [argument name, how to read it]; for 'fd' the third element names what its decoration gives. */
type ArgSpec = [string, Kind] | [string, 'fd', string]

interface Syscall {
  category: string
  args: ArgSpec[]
}

const FILE = 'file'
const PROC = 'process'
const NET = 'network'
const MEM = 'memory'
const SYS = 'system'

const at = (name: string, rest: ArgSpec[] = []): ArgSpec[] => [['dirfd', 'dirfd'], [name, 'path'], ...rest]
const sock: ArgSpec = ['socket', 'sock']

const TABLE: Record<string, Syscall> = {
  open: { category: FILE, args: [['filepath', 'path'], ['oflag', 'raw'], ['mode', 'raw']] },
  openat: { category: FILE, args: at('filepath', [['oflag', 'raw'], ['mode', 'raw']]) },
  openat2: { category: FILE, args: at('filepath', [['how', 'raw'], ['size', 'int']]) },
  creat: { category: FILE, args: [['filepath', 'path'], ['mode', 'raw']] },
  stat: { category: FILE, args: [['filepath', 'path'], ['statbuf', 'skip']] },
  lstat: { category: FILE, args: [['filepath', 'path'], ['statbuf', 'skip']] },
  newfstatat: { category: FILE, args: at('filepath', [['statbuf', 'skip'], ['flags', 'raw']]) },
  fstatat64: { category: FILE, args: at('filepath', [['statbuf', 'skip'], ['flags', 'raw']]) },
  statx: { category: FILE, args: at('filepath', [['flags', 'raw'], ['mask', 'raw'], ['statxbuf', 'skip']]) },
  access: { category: FILE, args: [['filepath', 'path'], ['mode', 'raw']] },
  faccessat: { category: FILE, args: at('filepath', [['mode', 'raw']]) },
  faccessat2: { category: FILE, args: at('filepath', [['mode', 'raw'], ['flags', 'raw']]) },
  readlink: { category: FILE, args: [['filepath', 'path'], ['target', 'str'], ['bufsiz', 'int']] },
  readlinkat: { category: FILE, args: at('filepath', [['target', 'str'], ['bufsiz', 'int']]) },
  unlink: { category: FILE, args: [['filepath', 'path']] },
  unlinkat: { category: FILE, args: at('filepath', [['flags', 'raw']]) },
  rmdir: { category: FILE, args: [['dirpath', 'path']] },
  mkdir: { category: FILE, args: [['dirpath', 'path'], ['mode', 'raw']] },
  mkdirat: { category: FILE, args: at('dirpath', [['mode', 'raw']]) },
  rename: { category: FILE, args: [['oldfilepath', 'path'], ['newfilepath', 'path']] },
  renameat: { category: FILE, args: [['olddirfd', 'dirfd'], ['oldfilepath', 'path'], ['newdirfd', 'dirfd'], ['newfilepath', 'path']] },
  renameat2: { category: FILE, args: [['olddirfd', 'dirfd'], ['oldfilepath', 'path'], ['newdirfd', 'dirfd'], ['newfilepath', 'path'], ['flags', 'raw']] },
  link: { category: FILE, args: [['oldfilepath', 'path'], ['newfilepath', 'path']] },
  linkat: { category: FILE, args: [['olddirfd', 'dirfd'], ['oldfilepath', 'path'], ['newdirfd', 'dirfd'], ['newfilepath', 'path'], ['flags', 'raw']] },
  symlink: { category: FILE, args: [['target', 'str'], ['linkpath', 'path']] },
  symlinkat: { category: FILE, args: [['target', 'str'], ['newdirfd', 'dirfd'], ['linkpath', 'path']] },
  chmod: { category: FILE, args: [['filepath', 'path'], ['mode', 'raw']] },
  fchmod: { category: FILE, args: [['fd', 'fd', 'filepath'], ['mode', 'raw']] },
  fchmodat: { category: FILE, args: at('filepath', [['mode', 'raw'], ['flags', 'raw']]) },
  chown: { category: FILE, args: [['filepath', 'path'], ['owner', 'int'], ['group', 'int']] },
  lchown: { category: FILE, args: [['filepath', 'path'], ['owner', 'int'], ['group', 'int']] },
  fchown: { category: FILE, args: [['fd', 'fd', 'filepath'], ['owner', 'int'], ['group', 'int']] },
  fchownat: { category: FILE, args: at('filepath', [['owner', 'int'], ['group', 'int'], ['flags', 'raw']]) },
  truncate: { category: FILE, args: [['filepath', 'path'], ['length', 'int']] },
  ftruncate: { category: FILE, args: [['fd', 'fd', 'filepath'], ['length', 'int']] },
  chdir: { category: FILE, args: [['dirpath', 'path']] },
  fchdir: { category: FILE, args: [['fd', 'fd', 'dirpath']] },
  chroot: { category: FILE, args: [['dirpath', 'path']] },
  getdents: { category: FILE, args: [['fd', 'fd', 'dirpath'], ['dirp', 'skip'], ['count', 'int']] },
  getdents64: { category: FILE, args: [['fd', 'fd', 'dirpath'], ['dirp', 'skip'], ['count', 'int']] },
  utimensat: { category: FILE, args: at('filepath', [['times', 'raw'], ['flags', 'raw']]) },
  utime: { category: FILE, args: [['filepath', 'path'], ['times', 'raw']] },
  utimes: { category: FILE, args: [['filepath', 'path'], ['times', 'raw']] },
  mknod: { category: FILE, args: [['filepath', 'path'], ['mode', 'raw'], ['dev', 'raw']] },
  mknodat: { category: FILE, args: at('filepath', [['mode', 'raw'], ['dev', 'raw']]) },
  statfs: { category: FILE, args: [['filepath', 'path'], ['buf', 'skip']] },
  inotify_add_watch: { category: FILE, args: [['fd', 'fd', 'inotify'], ['filepath', 'path'], ['mask', 'raw']] },
  read: { category: FILE, args: [['fd', 'fd', 'filepath'], ['buffer', 'buf'], ['length', 'int']] },
  write: { category: FILE, args: [['fd', 'fd', 'filepath'], ['buffer', 'buf'], ['length', 'int']] },
  pread64: { category: FILE, args: [['fd', 'fd', 'filepath'], ['buffer', 'buf'], ['length', 'int'], ['offset', 'int']] },
  pwrite64: { category: FILE, args: [['fd', 'fd', 'filepath'], ['buffer', 'buf'], ['length', 'int'], ['offset', 'int']] },

  execve: { category: PROC, args: [['filepath', 'path'], ['argv', 'argv'], ['environment', 'argv']] },
  execveat: { category: PROC, args: at('filepath', [['argv', 'argv'], ['environment', 'argv'], ['flags', 'raw']]) },
  clone: { category: PROC, args: [['args', 'kv']] },
  clone3: { category: PROC, args: [['args', 'clone3'], ['size', 'int']] },
  fork: { category: PROC, args: [] },
  vfork: { category: PROC, args: [] },
  exit: { category: PROC, args: [['exit_code', 'int']] },
  exit_group: { category: PROC, args: [['exit_code', 'int']] },
  wait4: { category: PROC, args: [['pid', 'int'], ['wstatus', 'raw'], ['options', 'raw'], ['rusage', 'skip']] },
  waitid: { category: PROC, args: [['idtype', 'raw'], ['id', 'int'], ['infop', 'skip'], ['options', 'raw'], ['rusage', 'skip']] },
  kill: { category: PROC, args: [['pid', 'int'], ['signal', 'raw']] },
  tkill: { category: PROC, args: [['tid', 'int'], ['signal', 'raw']] },
  tgkill: { category: PROC, args: [['pid', 'int'], ['tid', 'int'], ['signal', 'raw']] },
  ptrace: { category: PROC, args: [['request', 'raw'], ['pid', 'int'], ['addr', 'raw'], ['data', 'raw']] },
  prctl: { category: PROC, args: [['option', 'raw'], ['arg2', 'str'], ['arg3', 'raw'], ['arg4', 'raw'], ['arg5', 'raw']] },
  setuid: { category: PROC, args: [['uid', 'int']] },
  setgid: { category: PROC, args: [['gid', 'int']] },
  setreuid: { category: PROC, args: [['ruid', 'int'], ['euid', 'int']] },
  setregid: { category: PROC, args: [['rgid', 'int'], ['egid', 'int']] },
  setresuid: { category: PROC, args: [['ruid', 'int'], ['euid', 'int'], ['suid', 'int']] },
  setresgid: { category: PROC, args: [['rgid', 'int'], ['egid', 'int'], ['sgid', 'int']] },
  setfsuid: { category: PROC, args: [['fsuid', 'int']] },
  setfsgid: { category: PROC, args: [['fsgid', 'int']] },
  capset: { category: PROC, args: [['header', 'raw'], ['data', 'raw']] },
  process_vm_readv: { category: PROC, args: [['pid', 'int'], ['local_iov', 'raw'], ['liovcnt', 'int'], ['remote_iov', 'raw'], ['riovcnt', 'int'], ['flags', 'raw']] },
  process_vm_writev: { category: PROC, args: [['pid', 'int'], ['local_iov', 'raw'], ['liovcnt', 'int'], ['remote_iov', 'raw'], ['riovcnt', 'int'], ['flags', 'raw']] },

  mmap: { category: MEM, args: [['addr', 'raw'], ['length', 'int'], ['prot', 'raw'], ['flags', 'raw'], ['fd', 'fd', 'filepath'], ['offset', 'raw']] },
  mprotect: { category: MEM, args: [['addr', 'raw'], ['length', 'int'], ['prot', 'raw']] },
  pkey_mprotect: { category: MEM, args: [['addr', 'raw'], ['length', 'int'], ['prot', 'raw'], ['pkey', 'int']] },
  memfd_create: { category: MEM, args: [['name', 'str'], ['flags', 'raw']] },

  socket: { category: NET, args: [['family', 'raw'], ['type', 'raw'], ['protocol', 'raw']] },
  socketpair: { category: NET, args: [['family', 'raw'], ['type', 'raw'], ['protocol', 'raw'], ['sv', 'raw']] },
  connect: { category: NET, args: [sock, ['addr', 'addr'], ['addrlen', 'int']] },
  bind: { category: NET, args: [sock, ['addr', 'addr'], ['addrlen', 'int']] },
  listen: { category: NET, args: [sock, ['backlog', 'int']] },
  accept: { category: NET, args: [sock, ['addr', 'addr'], ['addrlen', 'skip']] },
  accept4: { category: NET, args: [sock, ['addr', 'addr'], ['addrlen', 'skip'], ['flags', 'raw']] },
  sendto: { category: NET, args: [sock, ['buffer', 'buf'], ['length', 'int'], ['flags', 'raw'], ['addr', 'addr'], ['addrlen', 'int']] },
  recvfrom: { category: NET, args: [sock, ['buffer', 'buf'], ['length', 'int'], ['flags', 'raw'], ['addr', 'addr'], ['addrlen', 'skip']] },
  send: { category: NET, args: [sock, ['buffer', 'buf'], ['length', 'int'], ['flags', 'raw']] },
  recv: { category: NET, args: [sock, ['buffer', 'buf'], ['length', 'int'], ['flags', 'raw']] },
  sendmsg: { category: NET, args: [sock, ['msg', 'msg'], ['flags', 'raw']] },
  recvmsg: { category: NET, args: [sock, ['msg', 'msg'], ['flags', 'raw']] },
  sendmmsg: { category: NET, args: [sock, ['msgvec', 'mmsg'], ['vlen', 'int'], ['flags', 'raw']] },
  recvmmsg: { category: NET, args: [sock, ['msgvec', 'mmsg'], ['vlen', 'int'], ['flags', 'raw'], ['timeout', 'raw']] },
  setsockopt: { category: NET, args: [sock, ['level', 'raw'], ['optname', 'raw'], ['optval', 'raw'], ['optlen', 'int']] },
  getsockopt: { category: NET, args: [sock, ['level', 'raw'], ['optname', 'raw'], ['optval', 'raw'], ['optlen', 'skip']] },
  shutdown: { category: NET, args: [sock, ['how', 'raw']] },
  getsockname: { category: NET, args: [sock, ['addr', 'addr'], ['addrlen', 'skip']] },
  getpeername: { category: NET, args: [sock, ['addr', 'addr'], ['addrlen', 'skip']] },

  uname: { category: SYS, args: [['buf', 'skip']] },
  sysinfo: { category: SYS, args: [['info', 'skip']] },
  nanosleep: { category: SYS, args: [['milliseconds', 'timespec'], ['rem', 'skip']] },
  clock_nanosleep: { category: SYS, args: [['clockid', 'raw'], ['flags', 'raw'], ['milliseconds', 'timespec'], ['rem', 'skip']] },
  mount: { category: SYS, args: [['source', 'str'], ['dirpath', 'path'], ['fstype', 'str'], ['flags', 'raw'], ['data', 'raw']] },
  umount2: { category: SYS, args: [['dirpath', 'path'], ['flags', 'raw']] },
  pivot_root: { category: SYS, args: [['new_root', 'path'], ['put_old', 'path']] },
  init_module: { category: SYS, args: [['image', 'skip'], ['length', 'int'], ['params', 'str']] },
  finit_module: { category: SYS, args: [['fd', 'fd', 'filepath'], ['params', 'str'], ['flags', 'raw']] },
  delete_module: { category: SYS, args: [['name', 'str'], ['flags', 'raw']] },
  reboot: { category: SYS, args: [['magic', 'raw'], ['magic2', 'raw'], ['cmd', 'raw'], ['arg', 'raw']] },
  sethostname: { category: SYS, args: [['name', 'str'], ['length', 'int']] },
  unshare: { category: SYS, args: [['flags', 'raw']] },
  setns: { category: SYS, args: [['fd', 'fd', 'namespace'], ['nstype', 'raw']] },
  personality: { category: SYS, args: [['persona', 'raw']] },
  seccomp: { category: SYS, args: [['operation', 'raw'], ['flags', 'raw'], ['args', 'raw']] },
  bpf: { category: SYS, args: [['cmd', 'raw'], ['attr', 'raw'], ['size', 'int']] }
}

/** The category of a syscall (unknown ones are 'system'). */
export function categoryOf(name: string): string {
  return TABLE[name]?.category ?? SYS
}

/** The syscalls the table names (what the analyzer's strace may be asked to trace). */
export const KNOWN_SYSCALLS: readonly string[] = Object.keys(TABLE)

/** Longest text kept for one argument value, and most elements of one array value. */
export const MAX_VALUE = 4096
const MAX_ITEMS = 256
const MAX_ARGS = 16

const cap = (s: string): string => (s.length > MAX_VALUE ? `${s.slice(0, MAX_VALUE)}...` : s)

function raw(token: string): string | number | null {
  if (token === 'NULL') return null
  if (/^-?(?:0|[1-9]\d{0,14})$/.test(token)) return Number(token)
  return cap(token)
}

function text(token: string): string | number | null {
  const s = stringText(token)
  return s !== null ? cap(s) : raw(token)
}

/** Bytes as latin-1 text (one character per byte, as Cuckoo gives buffers). */
function buffer(token: string): string | number | null {
  const s = parseString(token)
  if (s === null) return raw(token)
  return cap(s.bytes.toString('latin1') + (s.truncated ? '...' : ''))
}

function milliseconds(token: string): number | string | null {
  const st = parseStruct(token)
  const sec = Number(st.get('tv_sec'))
  const nsec = Number(st.get('tv_nsec'))
  if (!Number.isFinite(sec) || !Number.isFinite(nsec)) return raw(token)
  return sec * 1000 + Math.round(nsec / 1e6)
}

/** Where relative paths of a call start: the process's working directory (when known). */
export interface PathContext {
  cwd: string | null
}

/** What one traced call says, before it becomes a stored call. */
export interface BuiltCall {
  category: string
  arguments: Record<string, unknown>
  /** A DNS payload sent to port 53 (bytes of the question), for resolves_host. */
  dns: Buffer[]
  /** The working directory the call changed to, or showed (`AT_FDCWD</dir>`). */
  cwd: string | null
}

function setAddr(args: Record<string, unknown>, a: SockAddr | null | undefined): void {
  if (a === null || a === undefined) return
  if (a.ip !== undefined) args.ip_address = a.ip
  if (a.port !== undefined) args.port = a.port
  if (a.path !== undefined) args.path = cap(a.path)
  if (a.ip === undefined && a.path === undefined && args.family === undefined) args.family = a.family
}

/** The first iov_base of a msghdr text, and its msg_name address. */
function msgParts(token: string): { buffer: string | null; dns: Buffer | null; addr: SockAddr | null } {
  const st = parseStruct(token)
  const name = st.get('msg_name')
  const iov = parseArray(st.get('msg_iov') ?? '', 1)?.[0]
  const base = iov !== undefined ? parseStruct(iov).get('iov_base') : undefined
  const s = base !== undefined ? parseString(base) : null
  return {
    buffer: s !== null ? cap(s.bytes.toString('latin1') + (s.truncated ? '...' : '')) : null,
    dns: s?.bytes ?? null,
    addr: name !== undefined ? parseSockaddr(name) : null
  }
}

/** Calls whose returned descriptor is the file their path argument named. */
const OPENS = new Set(['open', 'openat', 'openat2', 'creat'])
/** Calls whose returned descriptor is a connected socket. */
const ACCEPTS = new Set(['accept', 'accept4'])

/**
 * Named arguments of `name(args)` for the process whose working directory is `ctx.cwd`; `ret` is
 * strace's annotation of the returned descriptor (`/etc/shadow`, `TCP:[a:1->b:2]`), if any.
 */
export function buildCall(name: string, argTokens: string[], ctx: PathContext, ret: string | null = null): BuiltCall {
  const spec = TABLE[name]
  const out: BuiltCall = { category: spec?.category ?? SYS, arguments: {}, dns: [], cwd: null }
  const args = out.arguments
  if (spec === undefined) {
    argTokens.slice(0, MAX_ARGS).forEach((t, i) => (args[`arg${i}`] = raw(t)))
    return out
  }
  let base = ctx.cwd
  let remote: SockAddr | undefined
  let toDns = false
  const sent: Buffer[] = []
  spec.args.forEach((a, i) => {
    const token = argTokens[i]
    if (token === undefined) return
    const [argName, kind] = a
    switch (kind) {
      case 'skip':
        return
      case 'raw':
        args[argName] = raw(token)
        return
      case 'int':
        args[argName] = raw(token)
        return
      case 'str':
        args[argName] = text(token)
        return
      case 'buf': {
        args[argName] = buffer(token)
        const s = parseString(token)
        if (s !== null) sent.push(s.bytes)
        return
      }
      case 'argv': {
        const items = parseArray(token, MAX_ITEMS)
        args[argName] = items === null ? raw(token) : items.map((t) => text(t))
        return
      }
      case 'timespec':
        args[argName] = milliseconds(token)
        return
      case 'dirfd': {
        const { fd, decoration } = parseFd(token)
        args[argName] = fd
        base = decoration !== null && decoration.startsWith('/') ? decorationPath(decoration) : fd === 'AT_FDCWD' ? ctx.cwd : null
        if (fd === 'AT_FDCWD' && base !== null) out.cwd = base
        return
      }
      case 'path': {
        const given = stringText(token)
        if (given === null) {
          args[argName] = raw(token)
          return
        }
        // Relative to an unknown directory: kept as given.
        const full = given === '' || base === null ? given : path.posix.isAbsolute(given) ? path.posix.normalize(given) : path.posix.join(base, given)
        args[argName] = cap(full)
        if (args[argName] !== given) args[`${argName}_r`] = cap(given)
        base = ctx.cwd
        return
      }
      case 'fd':
      case 'sock': {
        const { fd, decoration } = parseFd(token)
        args[kind === 'sock' ? 'socket' : argName] = fd
        if (decoration === null) return
        const socket = parseSocketDecoration(decoration)
        if (socket !== null) {
          remote = socket.remote
          if (socket.remote?.port === 53) toDns = true
        } else if (decoration.startsWith('/') && a.length === 3) {
          args[a[2]] = cap(decorationPath(decoration))
        } else if (a.length === 3) {
          args[a[2]] = cap(decoration)
        }
        return
      }
      case 'addr': {
        const addr = parseSockaddr(token)
        if (addr === null) return
        setAddr(args, addr)
        if (addr.port === 53) toDns = true
        return
      }
      case 'msg': {
        const m = msgParts(token)
        if (m.buffer !== null) args.buffer = m.buffer
        if (m.dns !== null) sent.push(m.dns)
        if (m.addr !== null) {
          setAddr(args, m.addr)
          if (m.addr.port === 53) toDns = true
        }
        return
      }
      case 'mmsg': {
        const items = parseArray(token, 8) ?? []
        const parts = items.map((item) => msgParts(parseStruct(item).get('msg_hdr') ?? ''))
        const first = parts[0]
        if (first?.buffer !== undefined && first.buffer !== null) args.buffer = first.buffer
        for (const p of parts) {
          if (p.dns !== null) sent.push(p.dns)
          if (p.addr?.port === 53) toDns = true
        }
        if (first?.addr) setAddr(args, first.addr)
        return
      }
      case 'kv': {
        // clone(child_stack=NULL, flags=CLONE_...|SIGCHLD, ...): the tokens name themselves.
        for (const t of argTokens.slice(0, MAX_ARGS)) {
          const eq = t.indexOf('=')
          if (eq > 0) args[t.slice(0, eq) === 'flags' ? 'clone_flags' : t.slice(0, eq)] = raw(t.slice(eq + 1))
        }
        return
      }
      case 'clone3': {
        const before = token.split(' => ')[0] ?? ''
        const flags = parseStruct(before).get('flags')
        if (flags !== undefined) args.clone_flags = raw(flags)
        return
      }
    }
  })
  // The file an open reached, symlinks and relative paths resolved by the kernel: what the path
  // named (as given, and made absolute) stays in filepath_r.
  if (OPENS.has(name) && ret !== null && ret.startsWith('/') && typeof args.filepath === 'string') {
    const real = cap(decorationPath(ret))
    if (real !== args.filepath) {
      args.filepath_r ??= args.filepath
      args.filepath = real
    }
  }
  // fexecve: the program is the descriptor's file (its path argument is "").
  if (name === 'execveat' && args.filepath === '' && String(args.flags ?? '').includes('AT_EMPTY_PATH')) {
    const fd = parseFd(argTokens[0] ?? '')
    if (fd.decoration !== null) args.filepath = cap(decorationPath(fd.decoration))
  }
  // An accepted connection: its peer is in the returned descriptor's annotation.
  if (ACCEPTS.has(name) && ret !== null && remote === undefined) remote = parseSocketDecoration(ret)?.remote
  // send/recv on a connected socket: the peer is in the descriptor's decoration.
  if (remote !== undefined && args.ip_address === undefined && out.category === NET) setAddr(args, remote)
  if (remote !== undefined && out.category === FILE && (name === 'read' || name === 'write' || name.startsWith('p'))) {
    out.category = NET
    setAddr(args, remote)
  }
  if (toDns) out.dns = sent
  if (name === 'execve' || name === 'execveat') {
    const argv = args.argv
    if (Array.isArray(argv)) args.command_line = cap(argv.map(String).join(' '))
  }
  return out
}

/** `args) = RET`: the arguments of a call body and the text after its ')'. */
export function splitBody(body: string): { args: string[]; after: string } | null {
  const { args, end } = splitArgs(body, 0)
  if (end < 0) return null
  return { args, after: body.slice(end + 1) }
}
