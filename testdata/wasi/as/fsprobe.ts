// fsprobe (AssemblyScript): a plain WASI preview 1 command that runs a
// script of file-system operations given as its arguments, calling the
// wasi_snapshot_preview1 imports directly (no libc in between: what the
// host returns is what is printed), one output line per operation:
//
//   ok ...                 success (see README.md)
//   err <errno> <NAME>     the raw errno the host returned, e.g. err 44 ENOENT
//   err - <message>        a failure inside the guest (no preopen for a path)
//
// Absolute paths are resolved against the preopens as wasi-libc does:
// longest matching directory name, remainder passed as is (no "..", "."
// or symlink processing here, so the host sees exactly that remainder).
//
// Build: make -C testdata/wasi/as fixtures

// ---- WASI ----

@external("wasi_snapshot_preview1", "args_sizes_get")
declare function args_sizes_get(argc: usize, bufSize: usize): i32;
@external("wasi_snapshot_preview1", "args_get")
declare function args_get(argv: usize, buf: usize): i32;
@external("wasi_snapshot_preview1", "fd_prestat_get")
declare function fd_prestat_get(fd: i32, buf: usize): i32;
@external("wasi_snapshot_preview1", "fd_prestat_dir_name")
declare function fd_prestat_dir_name(fd: i32, path: usize, len: i32): i32;
@external("wasi_snapshot_preview1", "path_open")
declare function path_open(
  dirfd: i32, lookup: i32, path: usize, pathLen: i32, oflags: i32,
  rightsBase: i64, rightsInheriting: i64, fdflags: i32, opened: usize,
): i32;
@external("wasi_snapshot_preview1", "fd_read")
declare function fd_read(fd: i32, iovs: usize, iovsLen: i32, nread: usize): i32;
@external("wasi_snapshot_preview1", "fd_write")
declare function fd_write(fd: i32, iovs: usize, iovsLen: i32, nwritten: usize): i32;
@external("wasi_snapshot_preview1", "fd_seek")
declare function fd_seek(fd: i32, offset: i64, whence: i32, newOffset: usize): i32;
@external("wasi_snapshot_preview1", "fd_readdir")
declare function fd_readdir(fd: i32, buf: usize, bufLen: i32, cookie: i64, used: usize): i32;
@external("wasi_snapshot_preview1", "fd_close")
declare function fd_close(fd: i32): i32;
@external("wasi_snapshot_preview1", "path_create_directory")
declare function path_create_directory(fd: i32, path: usize, len: i32): i32;
@external("wasi_snapshot_preview1", "path_unlink_file")
declare function path_unlink_file(fd: i32, path: usize, len: i32): i32;
@external("wasi_snapshot_preview1", "path_filestat_get")
declare function path_filestat_get(fd: i32, lookup: i32, path: usize, len: i32, buf: usize): i32;
@external("wasi_snapshot_preview1", "proc_exit")
declare function proc_exit(code: i32): void;

const ERRNO_BADF = 8;
const ERRNO_INTR = 27;

const LOOKUP_SYMLINK_FOLLOW = 1;
const O_CREAT = 1;
const O_DIRECTORY = 2;
const O_TRUNC = 8;
const FDFLAG_APPEND = 1;

const R_FD_READ: i64 = 1 << 1;
const R_FD_SEEK: i64 = 1 << 2;
const R_FD_TELL: i64 = 1 << 5;
const R_FD_WRITE: i64 = 1 << 6;
const R_FD_READDIR: i64 = 1 << 14;
const R_FD_FILESTAT_GET: i64 = 1 << 21;
const RIGHTS_READ = R_FD_READ | R_FD_SEEK | R_FD_TELL | R_FD_FILESTAT_GET;
const RIGHTS_WRITE = R_FD_WRITE | R_FD_SEEK | R_FD_TELL | R_FD_FILESTAT_GET;
const RIGHTS_DIR = R_FD_READDIR | R_FD_FILESTAT_GET;

const ERRNO_NAMES: string[] = [
  "SUCCESS", "E2BIG", "EACCES", "EADDRINUSE", "EADDRNOTAVAIL", "EAFNOSUPPORT", "EAGAIN", "EALREADY",
  "EBADF", "EBADMSG", "EBUSY", "ECANCELED", "ECHILD", "ECONNABORTED", "ECONNREFUSED", "ECONNRESET",
  "EDEADLK", "EDESTADDRREQ", "EDOM", "EDQUOT", "EEXIST", "EFAULT", "EFBIG", "EHOSTUNREACH", "EIDRM",
  "EILSEQ", "EINPROGRESS", "EINTR", "EINVAL", "EIO", "EISCONN", "EISDIR", "ELOOP", "EMFILE", "EMLINK",
  "EMSGSIZE", "EMULTIHOP", "ENAMETOOLONG", "ENETDOWN", "ENETRESET", "ENETUNREACH", "ENFILE",
  "ENOBUFS", "ENODEV", "ENOENT", "ENOEXEC", "ENOLCK", "ENOLINK", "ENOMEM", "ENOMSG", "ENOPROTOOPT",
  "ENOSPC", "ENOSYS", "ENOTCONN", "ENOTDIR", "ENOTEMPTY", "ENOTRECOVERABLE", "ENOTSOCK", "ENOTSUP",
  "ENOTTY", "ENXIO", "EOVERFLOW", "EOWNERDEAD", "EPERM", "EPIPE", "EPROTO", "EPROTONOSUPPORT",
  "EPROTOTYPE", "ERANGE", "EROFS", "ESPIPE", "ESRCH", "ESTALE", "ETIMEDOUT", "ETXTBSY", "EXDEV",
  "ENOTCAPABLE",
];

function errLine(errno: i32): string {
  const name = errno >= 0 && errno < ERRNO_NAMES.length ? ERRNO_NAMES[errno] : "E?";
  return "err " + errno.toString() + " " + name;
}

// Scratch for iovecs and out-parameters.
const IOV: usize = memory.data(8);
const OUT: usize = memory.data(64);

function writeAll(fd: i32, ptr: usize, len: i32): i32 {
  while (len > 0) {
    store<u32>(IOV, <u32>ptr);
    store<u32>(IOV, <u32>len, 4);
    const errno = fd_write(fd, IOV, 1, OUT);
    if (errno == ERRNO_INTR) continue;
    if (errno != 0) return errno;
    const n = load<u32>(OUT);
    if (n == 0) return -1;
    ptr += n;
    len -= <i32>n;
  }
  return 0;
}

function print(fd: i32, s: string): void {
  const b = String.UTF8.encode(s + "\n", false);
  writeAll(fd, changetype<usize>(b), b.byteLength);
}

function asAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  let m = "fsprobe: abort";
  if (message !== null) m += ": " + message;
  if (fileName !== null) m += " at " + fileName + ":" + line.toString() + ":" + column.toString();
  print(2, m);
  proc_exit(1);
  unreachable();
}

// quote renders bytes (as UTF-8) as a JSON string so any content fits on one line.
function quote(ptr: usize, len: i32): string {
  const s = String.UTF8.decodeUnsafe(ptr, len);
  const parts = new Array<string>();
  parts.push('"');
  let from = 0;
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    let esc: string | null = null;
    if (c == 0x22) esc = '\\"';
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c < 0x20) esc = "\\u00" + (c < 0x10 ? "0" : "") + c.toString(16);
    if (esc !== null) {
      parts.push(s.substring(from, k));
      parts.push(esc);
      from = k + 1;
    }
  }
  parts.push(s.substring(from));
  parts.push('"');
  return parts.join("");
}

// ---- preopens and path resolution ----

class Preopen {
  constructor(public fd: i32, public name: string) {}
}

const preopens = new Array<Preopen>();

function loadPreopens(): void {
  for (let fd = 3; ; fd++) {
    const errno = fd_prestat_get(fd, OUT);
    if (errno == ERRNO_BADF) return;
    if (errno != 0) continue;
    if (load<u8>(OUT) != 0) continue; // not a directory preopen
    const len = <i32>load<u32>(OUT, 4);
    const buf = new Uint8Array(len);
    if (fd_prestat_dir_name(fd, buf.dataStart, len) != 0) continue;
    let n = len;
    while (n > 0 && buf[n - 1] == 0) n--; // some hosts count a NUL
    preopens.push(new Preopen(fd, String.UTF8.decodeUnsafe(buf.dataStart, n)));
  }
}

// Resolved is a directory fd and a path relative to it (UTF-8, not NUL-terminated).
class Resolved {
  constructor(public fd: i32, public rel: ArrayBuffer) {}
  get ptr(): usize {
    return changetype<usize>(this.rel);
  }
  get len(): i32 {
    return this.rel.byteLength;
  }
}

let resolveError = "";

function resolve(path: string): Resolved | null {
  let best: Preopen | null = null;
  for (let k = 0; k < preopens.length; k++) {
    const p = preopens[k];
    let name = p.name;
    while (name.length > 1 && name.endsWith("/")) name = name.substring(0, name.length - 1);
    const hit = path == name || (path.startsWith(name) && (name.endsWith("/") || path.charAt(name.length) == "/"));
    if (hit && (best === null || name.length > best.name.length)) best = new Preopen(p.fd, name);
  }
  if (best === null) {
    resolveError = "err - no preopen holds " + path;
    return null;
  }
  let rel = path.substring(best.name.length);
  while (rel.startsWith("/")) rel = rel.substring(1);
  if (rel.length == 0) rel = ".";
  return new Resolved(best.fd, String.UTF8.encode(rel, false));
}

// openPath opens path; on success the fd is in lastFd and 0 is returned.
let lastFd = -1;

function openAt(dirfd: i32, rel: ArrayBuffer, oflags: i32, rights: i64, fdflags: i32): i32 {
  const errno = path_open(dirfd, LOOKUP_SYMLINK_FOLLOW, changetype<usize>(rel), rel.byteLength, oflags, rights, rights, fdflags, OUT);
  if (errno == 0) lastFd = load<i32>(OUT);
  return errno;
}

// ---- operations ----

function readFd(fd: i32): string {
  const out = new Array<u8>();
  const chunk = new Uint8Array(65536);
  while (true) {
    store<u32>(IOV, <u32>chunk.dataStart);
    store<u32>(IOV, <u32>chunk.length, 4);
    const errno = fd_read(fd, IOV, 1, OUT);
    if (errno == ERRNO_INTR) continue;
    if (errno != 0) return errLine(errno);
    const n = <i32>load<u32>(OUT);
    if (n == 0) break;
    for (let k = 0; k < n; k++) out.push(chunk[k]);
  }
  return "ok " + out.length.toString() + " " + quote(out.dataStart, out.length);
}

function opRead(path: string, offset: i64): string {
  const r = resolve(path);
  if (r === null) return resolveError;
  return readRel(r.fd, r.rel, offset);
}

function readRel(dirfd: i32, rel: ArrayBuffer, offset: i64): string {
  const errno = openAt(dirfd, rel, 0, RIGHTS_READ, 0);
  if (errno != 0) return errLine(errno);
  const fd = lastFd;
  let line: string;
  if (offset > 0) {
    const e = fd_seek(fd, offset, 0, OUT);
    line = e != 0 ? errLine(e) : readFd(fd);
  } else {
    line = readFd(fd);
  }
  fd_close(fd);
  return line;
}

function opWrite(path: string, text: string, append: bool): string {
  const r = resolve(path);
  if (r === null) return resolveError;
  const errno = openAt(r.fd, r.rel, append ? O_CREAT : O_CREAT | O_TRUNC, RIGHTS_WRITE, append ? FDFLAG_APPEND : 0);
  if (errno != 0) return errLine(errno);
  const fd = lastFd;
  const b = String.UTF8.encode(text, false);
  const e = writeAll(fd, changetype<usize>(b), b.byteLength);
  fd_close(fd);
  if (e < 0) return "err - fd_write wrote nothing";
  if (e != 0) return errLine(e);
  return "ok wrote " + b.byteLength.toString();
}

// listDir reads every entry; raw keeps host order and . / .., with d_type
// and d_next, instead of sorted names.
function opLs(path: string, raw: bool): string {
  const r = resolve(path);
  if (r === null) return resolveError;
  const errno = openAt(r.fd, r.rel, O_DIRECTORY, RIGHTS_DIR, 0);
  if (errno != 0) return errLine(errno);
  const fd = lastFd;
  const names = new Array<string>();
  let bufLen = 256; // small on purpose: exercises cookies and truncated entries
  let cookie: i64 = 0;
  let line = "";
  while (true) {
    const buf = new Uint8Array(bufLen);
    const e = fd_readdir(fd, buf.dataStart, bufLen, cookie, OUT);
    if (e != 0) {
      line = errLine(e);
      break;
    }
    const used = <i32>load<u32>(OUT);
    let pos = 0;
    let complete = 0;
    while (pos + 24 <= used) {
      const base = buf.dataStart + pos;
      const next = load<i64>(base);
      const namlen = <i32>load<u32>(base, 16);
      const dtype = <i32>load<u8>(base, 20);
      if (pos + 24 + namlen > used) break; // cut off: ask again from cookie
      const name = String.UTF8.decodeUnsafe(base + 24, namlen);
      if (raw) names.push(name + ":" + dtype.toString() + ":" + next.toString());
      else if (name != "." && name != "..") names.push(name + (dtype == 3 ? "/" : dtype == 7 ? "@" : ""));
      cookie = next;
      pos += 24 + namlen;
      complete++;
    }
    if (used < bufLen) break; // the end of the directory
    if (complete == 0) bufLen *= 2; // one entry larger than the buffer
  }
  fd_close(fd);
  if (line.length > 0) return line;
  if (!raw) names.sort();
  return names.length == 0 ? "ok" : "ok " + names.join(" ");
}

function opMkdir(path: string): string {
  const r = resolve(path);
  if (r === null) return resolveError;
  const e = path_create_directory(r.fd, r.ptr, r.len);
  return e != 0 ? errLine(e) : "ok";
}

function opRm(path: string): string {
  const r = resolve(path);
  if (r === null) return resolveError;
  const e = path_unlink_file(r.fd, r.ptr, r.len);
  return e != 0 ? errLine(e) : "ok";
}

function opStat(path: string, follow: bool): string {
  const r = resolve(path);
  if (r === null) return resolveError;
  const e = path_filestat_get(r.fd, follow ? LOOKUP_SYMLINK_FOLLOW : 0, r.ptr, r.len, OUT);
  if (e != 0) return errLine(e);
  const t = <i32>load<u8>(OUT, 16);
  const size = load<u64>(OUT, 32);
  const kind = t == 3 ? "dir" : t == 4 ? "file" : t == 7 ? "symlink" : "type" + t.toString();
  return "ok " + kind + " " + size.toString();
}

function opPreopens(): string {
  let line = "ok";
  for (let k = 0; k < preopens.length; k++) line += " " + preopens[k].fd.toString() + ":" + preopens[k].name;
  return line;
}

// ---- main ----

function readArgs(): string[] {
  const args = new Array<string>();
  if (args_sizes_get(OUT, OUT + 4) != 0) return args;
  const argc = <i32>load<u32>(OUT);
  const size = <i32>load<u32>(OUT, 4);
  const argv = new Uint32Array(argc);
  const buf = new Uint8Array(size);
  if (args_get(argv.dataStart, buf.dataStart) != 0) return args;
  for (let k = 0; k < argc; k++) {
    const p = <usize>argv[k];
    let n = 0;
    while (load<u8>(p + n) != 0) n++;
    args.push(String.UTF8.decodeUnsafe(p, n));
  }
  return args;
}

function arity(op: string): i32 {
  if (op == "preopens") return 0;
  if (op == "read" || op == "ls" || op == "ls-raw" || op == "mkdir" || op == "rm" || op == "stat" || op == "lstat" || op == "exit") return 1;
  if (op == "write" || op == "append" || op == "seek-read" || op == "read-at") return 2;
  return -1;
}

function main(): void {
  loadPreopens();
  const args = readArgs();
  let i = 1;
  while (i < args.length) {
    const op = args[i];
    const n = arity(op);
    if (n < 0) {
      print(2, "fsprobe: unknown operation " + op);
      proc_exit(2);
    }
    if (i + 1 + n > args.length) {
      print(2, "fsprobe: " + op + " needs " + n.toString() + " argument(s)");
      proc_exit(2);
    }
    const a = args.slice(i + 1, i + 1 + n);
    i += 1 + n;
    let line: string;
    if (op == "write") line = opWrite(a[0], a[1], false);
    else if (op == "append") line = opWrite(a[0], a[1], true);
    else if (op == "read") line = opRead(a[0], 0);
    else if (op == "seek-read") line = opRead(a[0], I64.parseInt(a[1]));
    else if (op == "read-at") line = readRel(I32.parseInt(a[0]), String.UTF8.encode(a[1], false), 0);
    else if (op == "ls") line = opLs(a[0], false);
    else if (op == "ls-raw") line = opLs(a[0], true);
    else if (op == "mkdir") line = opMkdir(a[0]);
    else if (op == "rm") line = opRm(a[0]);
    else if (op == "stat") line = opStat(a[0], true);
    else if (op == "lstat") line = opStat(a[0], false);
    else if (op == "preopens") line = opPreopens();
    else {
      proc_exit(I32.parseInt(a[0]));
      return;
    }
    print(1, line);
  }
  proc_exit(0);
}

main();
