//! fsprobe: a plain WASI preview 1 command that runs a script of file-system
//! operations given as its arguments and prints one line per operation, so
//! a host test can assert the raw WASI errno a Rust guest saw.
//!
//!     fsprobe write /volume/tmp/a.txt hello read /volume/tmp/a.txt ls /volume/tmp
//!     ok wrote 5
//!     ok 5 "hello"
//!     ok a.txt
//!
//! Each line is `ok ...` or `err <errno> <NAME>` (the WASI errno number from
//! std::io::Error::raw_os_error and its wasi_snapshot_preview1 name, e.g.
//! `err 44 ENOENT`), or `err - <message>` for a failure that never reached
//! the host (std found no preopen for the path, a bad argument). See
//! README.md for the operations. Exit code 0 unless the script itself is
//! malformed (2) or an `exit N` operation says otherwise.
//!
//! Build: make -C testdata/wasi/rust fixtures

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::raw::{c_char, c_int};

extern "C" {
    // wasi-libc (linked into Rust's wasm32-wasi std): std's own symlink is
    // behind an unstable feature in rustc 1.63, libc's is not.
    fn symlink(target: *const c_char, link: *const c_char) -> c_int;
}

/// WASI preview 1 errno names, indexed by number.
const ERRNO: [&str; 77] = [
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

fn err_line(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => format!("err {} {}", n, ERRNO.get(n as usize).copied().unwrap_or("E?")),
        None => format!("err - {}", e),
    }
}

/// quote renders file content as a JSON string, so any bytes fit on one line.
fn quote(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn num(s: &str) -> io::Result<u64> {
    s.parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("not a number: {}", s)))
}

fn kind(ft: fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "symlink"
    } else if ft.is_dir() {
        "dir"
    } else if ft.is_file() {
        "file"
    } else {
        "other"
    }
}

fn read_from(path: &str, offset: u64) -> io::Result<String> {
    let mut f = File::open(path)?;
    if offset > 0 {
        f.seek(SeekFrom::Start(offset))?;
    }
    let mut b = Vec::new();
    f.read_to_end(&mut b)?;
    Ok(format!("ok {} {}", b.len(), quote(&b)))
}

fn write_with(mut f: File, offset: Option<u64>, text: &str) -> io::Result<String> {
    if let Some(off) = offset {
        f.seek(SeekFrom::Start(off))?;
    }
    f.write_all(text.as_bytes())?;
    Ok(format!("ok wrote {}", text.len()))
}

/// big_write writes n bytes of 'x' in 64 KiB writes; on failure the line
/// says how much was written first, so write budgets can be tested.
fn big_write(path: &str, n: u64) -> String {
    let mut f = match File::create(path) {
        Ok(f) => f,
        Err(e) => return err_line(&e),
    };
    let chunk = vec![b'x'; 64 * 1024];
    let mut done = 0u64;
    while done < n {
        let want = std::cmp::min(chunk.len() as u64, n - done) as usize;
        match f.write(&chunk[..want]) {
            Ok(0) => return format!("err - wrote zero bytes after {}", done),
            Ok(k) => done += k as u64,
            Err(e) => return format!("{} after {}", err_line(&e), done),
        }
    }
    format!("ok wrote {}", done)
}

fn ls(dir: &str) -> io::Result<String> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        match entry.file_type()? {
            t if t.is_symlink() => name.push('@'),
            t if t.is_dir() => name.push('/'),
            _ => {}
        }
        names.push(name);
    }
    names.sort();
    let mut line = String::from("ok");
    for n in names {
        line.push(' ');
        line.push_str(&n);
    }
    Ok(line)
}

fn do_symlink(target: &str, link: &str) -> io::Result<String> {
    let t = std::ffi::CString::new(target).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let l = std::ffi::CString::new(link).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if unsafe { symlink(t.as_ptr(), l.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok("ok".to_string())
}

/// Operations and how many arguments each takes.
const OPS: &[(&str, usize)] = &[
    ("write", 2),
    ("append", 2),
    ("write-at", 3),
    ("create-excl", 1),
    ("big-write", 2),
    ("read", 1),
    ("seek-read", 2),
    ("ls", 1),
    ("mkdir", 1),
    ("mkdir-all", 1),
    ("rmdir", 1),
    ("rm", 1),
    ("rename", 2),
    ("symlink", 2),
    ("readlink", 1),
    ("link", 2),
    ("stat", 1),
    ("lstat", 1),
    ("truncate", 2),
    ("exit", 1),
];

fn run(op: &str, a: &[String]) -> io::Result<String> {
    let ok = || Ok("ok".to_string());
    match op {
        "write" => write_with(File::create(&a[0])?, None, &a[1]),
        "append" => write_with(OpenOptions::new().append(true).create(true).open(&a[0])?, None, &a[1]),
        "write-at" => {
            let off = num(&a[1])?;
            write_with(OpenOptions::new().write(true).create(true).open(&a[0])?, Some(off), &a[2])
        }
        "create-excl" => OpenOptions::new().write(true).create_new(true).open(&a[0]).and_then(|_| ok()),
        "big-write" => Ok(big_write(&a[0], num(&a[1])?)),
        "read" => read_from(&a[0], 0),
        "seek-read" => read_from(&a[0], num(&a[1])?),
        "ls" => ls(&a[0]),
        "mkdir" => fs::create_dir(&a[0]).and_then(|_| ok()),
        "mkdir-all" => fs::create_dir_all(&a[0]).and_then(|_| ok()),
        "rmdir" => fs::remove_dir(&a[0]).and_then(|_| ok()),
        "rm" => fs::remove_file(&a[0]).and_then(|_| ok()),
        "rename" => fs::rename(&a[0], &a[1]).and_then(|_| ok()),
        "symlink" => do_symlink(&a[0], &a[1]),
        "readlink" => fs::read_link(&a[0]).map(|p| format!("ok {}", p.display())),
        "link" => fs::hard_link(&a[0], &a[1]).and_then(|_| ok()),
        "stat" | "lstat" => {
            let m = if op == "stat" { fs::metadata(&a[0])? } else { fs::symlink_metadata(&a[0])? };
            Ok(format!("ok {} {}", kind(m.file_type()), m.len()))
        }
        "truncate" => {
            let n = num(&a[1])?;
            OpenOptions::new().write(true).open(&a[0])?.set_len(n).and_then(|_| ok())
        }
        _ => unreachable!(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = io::stdout();
    let mut out = out.lock();
    let mut i = 0;
    while i < args.len() {
        let op = args[i].as_str();
        let arity = match OPS.iter().find(|(name, _)| *name == op) {
            Some((_, n)) => *n,
            None => {
                eprintln!("fsprobe: unknown operation {:?}", op);
                std::process::exit(2);
            }
        };
        if i + 1 + arity > args.len() {
            eprintln!("fsprobe: {} needs {} argument(s)", op, arity);
            std::process::exit(2);
        }
        let a = &args[i + 1..i + 1 + arity];
        i += 1 + arity;
        if op == "exit" {
            let _ = out.flush();
            std::process::exit(a[0].parse().unwrap_or(2));
        }
        let line = run(op, a).unwrap_or_else(|e| err_line(&e));
        let _ = writeln!(out, "{}", line);
        let _ = out.flush();
    }
}
