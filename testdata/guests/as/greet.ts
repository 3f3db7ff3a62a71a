// asgreet: the greet tool as an ABI 1 package in AssemblyScript, written
// straight against three wasi_snapshot_preview1 imports (fd_read, fd_write,
// proc_exit): AssemblyScript has no WASI stdio of its own, and no packages
// beyond the compiler are used.
//
// It is a stateless MCP 2026-07-28 server on stdio: one request a line on
// stdin, one compact JSON response a line on stdout, logs on stderr, exit
// code 0 at end of input. Messages without an id are ignored; the id is
// echoed as the exact JSON text it arrived as.
//
// The top-level code is the module's start function, which the compiler
// exports as _start (--exportStart _start), so nothing runs at
// instantiation and the module is a WASI command. abort is replaced
// (--use abort=...) so the module imports nothing from "env".
//
// Build: make -C testdata/guests/as fixtures

// ---- WASI ----

@external("wasi_snapshot_preview1", "fd_read")
declare function fd_read(fd: i32, iovs: usize, iovsLen: i32, nread: usize): i32;

@external("wasi_snapshot_preview1", "fd_write")
declare function fd_write(fd: i32, iovs: usize, iovsLen: i32, nwritten: usize): i32;

@external("wasi_snapshot_preview1", "proc_exit")
declare function proc_exit(code: i32): void;

const ERRNO_INTR = 27;

// One iovec and one size_t result, reused by every call.
const IOV: usize = memory.data(8);
const NRES: usize = memory.data(4);

function writeAll(fd: i32, ptr: usize, len: i32): bool {
  while (len > 0) {
    store<u32>(IOV, <u32>ptr);
    store<u32>(IOV, <u32>len, 4);
    const errno = fd_write(fd, IOV, 1, NRES);
    if (errno == ERRNO_INTR) continue;
    if (errno != 0) return false;
    const n = load<u32>(NRES);
    ptr += n;
    len -= <i32>n;
  }
  return true;
}

function writeString(fd: i32, s: string): bool {
  const b = String.UTF8.encode(s, false);
  return writeAll(fd, changetype<usize>(b), b.byteLength);
}

function log(s: string): void {
  writeString(2, "asgreet: " + s + "\n");
}

// asAbort replaces AssemblyScript's abort, which would otherwise be the
// import env.abort; a failed assertion or a bounds check ends the call
// with a message on stderr and exit code 1.
function asAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  let m = "asgreet: abort";
  if (message !== null) m += ": " + message;
  if (fileName !== null) m += " at " + fileName + ":" + line.toString() + ":" + column.toString();
  writeString(2, m + "\n");
  proc_exit(1);
  unreachable();
}

// ---- a minimal JSON reader over UTF-8 bytes ----
// Functions take a position and return the position after what they read,
// or -1 when the input is not valid JSON.

const MAX_DEPTH = 128;

function isWS(c: u8): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}

function ws(b: Uint8Array, i: i32): i32 {
  while (i < b.length && isWS(b[i])) i++;
  return i;
}

function isDigit(c: u8): bool {
  return c >= 0x30 && c <= 0x39;
}

function hexVal(c: u8): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

function hex4(b: Uint8Array, i: i32): i32 {
  if (i + 4 > b.length) return -1;
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const h = hexVal(b[i + k]);
    if (h < 0) return -1;
    v = (v << 4) | h;
  }
  return v;
}

// skipString expects b[i] == '"'.
function skipString(b: Uint8Array, i: i32): i32 {
  i++;
  while (i < b.length) {
    const c = b[i];
    if (c == 0x22) return i + 1;
    if (c < 0x20) return -1;
    if (c == 0x5c) {
      if (i + 1 >= b.length) return -1;
      const e = b[i + 1];
      if (e == 0x75) {
        if (hex4(b, i + 2) < 0) return -1;
        i += 6;
        continue;
      }
      if (e != 0x22 && e != 0x5c && e != 0x2f && e != 0x62 && e != 0x66 && e != 0x6e && e != 0x72 && e != 0x74) return -1;
      i += 2;
      continue;
    }
    i++;
  }
  return -1;
}

function skipDigits(b: Uint8Array, i: i32): i32 {
  const s = i;
  while (i < b.length && isDigit(b[i])) i++;
  return i > s ? i : -1;
}

function skipNumber(b: Uint8Array, i: i32): i32 {
  if (b[i] == 0x2d) i++;
  i = skipDigits(b, i);
  if (i < 0) return -1;
  if (i < b.length && b[i] == 0x2e) {
    i = skipDigits(b, i + 1);
    if (i < 0) return -1;
  }
  if (i < b.length && (b[i] == 0x65 || b[i] == 0x45)) {
    i++;
    if (i < b.length && (b[i] == 0x2b || b[i] == 0x2d)) i++;
    i = skipDigits(b, i);
  }
  return i;
}

function skipLiteral(b: Uint8Array, i: i32, word: string): i32 {
  for (let k = 0; k < word.length; k++) {
    if (i + k >= b.length || <i32>b[i + k] != word.charCodeAt(k)) return -1;
  }
  return i + word.length;
}

// skipValue returns the end of the value starting at i (after whitespace).
function skipValue(b: Uint8Array, i: i32, depth: i32): i32 {
  i = ws(b, i);
  if (i >= b.length) return -1;
  const c = b[i];
  if (c == 0x22) return skipString(b, i);
  if (c == 0x7b || c == 0x5b) {
    if (depth >= MAX_DEPTH) return -1;
    const obj = c == 0x7b;
    const close: u8 = obj ? 0x7d : 0x5d;
    i = ws(b, i + 1);
    if (i < b.length && b[i] == close) return i + 1;
    while (true) {
      if (obj) {
        if (i >= b.length || b[i] != 0x22) return -1;
        i = skipString(b, i);
        if (i < 0) return -1;
        i = ws(b, i);
        if (i >= b.length || b[i] != 0x3a) return -1;
        i++;
      }
      i = skipValue(b, i, depth + 1);
      if (i < 0) return -1;
      i = ws(b, i);
      if (i >= b.length) return -1;
      if (b[i] == 0x2c) {
        i = ws(b, i + 1);
        continue;
      }
      if (b[i] == close) return i + 1;
      return -1;
    }
  }
  if (c == 0x74) return skipLiteral(b, i, "true");
  if (c == 0x66) return skipLiteral(b, i, "false");
  if (c == 0x6e) return skipLiteral(b, i, "null");
  if (c == 0x2d || isDigit(c)) return skipNumber(b, i);
  return -1;
}

// decodeString decodes the JSON string at b[i] (a quote), or returns null.
function decodeString(b: Uint8Array, i: i32): string | null {
  const end = skipString(b, i);
  if (end < 0) return null;
  const out = new Array<u8>();
  i++;
  while (i < end - 1) {
    const c = b[i];
    if (c != 0x5c) {
      out.push(c);
      i++;
      continue;
    }
    const e = b[i + 1];
    i += 2;
    if (e == 0x62) out.push(8);
    else if (e == 0x66) out.push(12);
    else if (e == 0x6e) out.push(10);
    else if (e == 0x72) out.push(13);
    else if (e == 0x74) out.push(9);
    else if (e == 0x75) {
      let cp = hex4(b, i);
      i += 4;
      if (cp >= 0xd800 && cp < 0xdc00 && i + 6 <= end - 1 && b[i] == 0x5c && b[i + 1] == 0x75) {
        const lo = hex4(b, i + 2);
        if (lo >= 0xdc00 && lo < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          i += 6;
        }
      }
      if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd; // a lone surrogate
      if (cp < 0x80) out.push(<u8>cp);
      else if (cp < 0x800) {
        out.push(<u8>(0xc0 | (cp >> 6)));
        out.push(<u8>(0x80 | (cp & 0x3f)));
      } else if (cp < 0x10000) {
        out.push(<u8>(0xe0 | (cp >> 12)));
        out.push(<u8>(0x80 | ((cp >> 6) & 0x3f)));
        out.push(<u8>(0x80 | (cp & 0x3f)));
      } else {
        out.push(<u8>(0xf0 | (cp >> 18)));
        out.push(<u8>(0x80 | ((cp >> 12) & 0x3f)));
        out.push(<u8>(0x80 | ((cp >> 6) & 0x3f)));
        out.push(<u8>(0x80 | (cp & 0x3f)));
      }
    } else out.push(e); // " \ /
  }
  return String.UTF8.decodeUnsafe(out.dataStart, out.length);
}

// findKey returns the start of the value of key in the object at i, or -1.
// The last occurrence wins, as in most decoders.
function findKey(b: Uint8Array, i: i32, key: string): i32 {
  if (i < 0) return -1;
  i = ws(b, i);
  if (i >= b.length || b[i] != 0x7b) return -1;
  i = ws(b, i + 1);
  let found = -1;
  while (i < b.length && b[i] == 0x22) {
    const k = decodeString(b, i);
    i = ws(b, skipString(b, i));
    if (i >= b.length || b[i] != 0x3a) return -1;
    i = ws(b, i + 1);
    if (k !== null && k == key) found = i;
    i = skipValue(b, i, 1);
    if (i < 0) return -1;
    i = ws(b, i);
    if (i >= b.length || b[i] != 0x2c) break;
    i = ws(b, i + 1);
  }
  return found;
}

// stringAt decodes the value at i when it is a JSON string.
function stringAt(b: Uint8Array, i: i32): string | null {
  if (i < 0 || i >= b.length || b[i] != 0x22) return null;
  return decodeString(b, i);
}

// ---- a minimal JSON writer ----

function quote(s: string): string {
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

// ---- the server ----

const META = '"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"asgreet","version":"0.1.0"}}';

function result(id: string, body: string): string {
  return '{"jsonrpc":"2.0","id":' + id + ',"result":{"resultType":"complete",' + META + "," + body + "}}";
}

function rpcError(id: string, code: i32, msg: string): string {
  return '{"jsonrpc":"2.0","id":' + id + ',"error":{"code":' + code.toString() + ',"message":' + quote(msg) + "}}";
}

function toolError(id: string, msg: string): string {
  return result(id, '"content":[{"type":"text","text":' + quote(msg) + '}],"isError":true');
}

// handle answers one line; null means nothing is written (a notification
// or a line that is not JSON).
function handle(b: Uint8Array): string | null {
  const end = skipValue(b, 0, 0);
  if (end < 0 || ws(b, end) != b.length) {
    log("ignoring a line that is not JSON");
    return null;
  }
  const idAt = findKey(b, 0, "id");
  if (idAt < 0) return null; // a notification
  const idEnd = skipValue(b, idAt, 1);
  const id = String.UTF8.decodeUnsafe(b.dataStart + idAt, idEnd - idAt);
  if (id == "null") return null;
  const m = stringAt(b, findKey(b, 0, "method"));
  const method = m !== null ? m : "";
  log(method + " id=" + id);
  const params = findKey(b, 0, "params");

  if (method == "server/discover") {
    return result(id, '"ttlMs":0,"cacheScope":"public","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}');
  }
  if (method == "tools/list") {
    return result(
      id,
      '"ttlMs":0,"cacheScope":"public","tools":[{"name":"greet","description":"Greet someone by name.",' +
        '"inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"Who to greet."}},"required":["name"]}}]',
    );
  }
  if (method == "tools/call") {
    const t = stringAt(b, findKey(b, params, "name"));
    const tool = t !== null ? t : "";
    if (tool != "greet") return rpcError(id, -32602, "unknown tool: " + tool);
    const args = findKey(b, params, "arguments");
    if (args >= 0 && b[args] != 0x7b && skipLiteral(b, args, "null") < 0) {
      return toolError(id, "arguments must be an object");
    }
    const n = stringAt(b, findKey(b, args, "name"));
    if (n === null || n.trim().length == 0) return toolError(id, "name must not be empty");
    const sc = '{"message":' + quote("Hello, " + n + "!") + "}";
    return result(id, '"content":[{"type":"text","text":' + quote(sc) + '}],"structuredContent":' + sc);
  }
  return rpcError(id, -32601, "method not found: " + method);
}

// ---- the stdin loop ----

const CHUNK = 65536;
const chunk = new Uint8Array(CHUNK);
let buf = new Uint8Array(CHUNK);
let bufLen = 0;

function append(n: i32): void {
  if (bufLen + n > buf.length) {
    let cap = buf.length * 2;
    while (cap < bufLen + n) cap *= 2;
    const nb = new Uint8Array(cap);
    memory.copy(nb.dataStart, buf.dataStart, bufLen);
    buf = nb;
  }
  memory.copy(buf.dataStart + bufLen, chunk.dataStart, n);
  bufLen += n;
}

function handleLine(from: i32, to: i32): void {
  const line = buf.subarray(from, to);
  if (ws(line, 0) == line.length) return;
  const resp = handle(line);
  if (resp !== null && !writeString(1, resp + "\n")) {
    log("writing stdout failed");
    proc_exit(1);
  }
}

function main(): void {
  while (true) {
    store<u32>(IOV, <u32>chunk.dataStart);
    store<u32>(IOV, CHUNK, 4);
    const errno = fd_read(0, IOV, 1, NRES);
    if (errno == ERRNO_INTR) continue;
    if (errno != 0) {
      log("reading stdin: errno " + errno.toString());
      proc_exit(1);
    }
    const n = <i32>load<u32>(NRES);
    if (n == 0) {
      if (bufLen > 0) handleLine(0, bufLen); // a last line without a newline
      proc_exit(0);
    }
    const scanFrom = bufLen;
    append(n);
    let start = 0;
    for (let k = scanFrom; k < bufLen; k++) {
      if (buf[k] == 0x0a) {
        handleLine(start, k);
        start = k + 1;
      }
    }
    if (start > 0) {
      memory.copy(buf.dataStart, buf.dataStart + start, bufLen - start);
      bufLen -= start;
    }
  }
}

main();
