// Package wasi is subako-runner's own wasi_snapshot_preview1: every preview-1
// function as a wazero host module, on an fd table of our own, with stdio as
// pipes, the preopens of package fsmount, and the per-call write budget of
// package limits.
//
// wazero's built-in WASI is not used because ABI 1 promises guests things it
// cannot give: EDQUOT for the write budget, EROFS on read-only mounts,
// ENOTSUP from fd_allocate, and stdin that a Go guest can poll without
// blocking its other goroutines.
//
// The module is defined once per wazero.Runtime (Instantiate); each module
// instance gets its own state (NewInstance) attached to the context passed
// to InstantiateModule or Function.Call (WithInstance). Host functions find
// it with ctx.Value.
//
// # Decisions where the witx is silent
//
//   - Paths are resolved beneath the directory fd they are relative to,
//     first by this package's walk (each component once, at most 40
//     links, ELOOP beyond, and at most 4096 lookups, ENAMETOOLONG
//     beyond), then by os.Root, which confines the last component in the
//     directory the walk ended in; one that would leave it gets
//     ENOTCAPABLE (76), as in wasmtime.
//   - The path functions, fd_readdir and poll_oneoff called after the
//     call's deadline or cancellation end the instance with the
//     context's exit code (as the long host calls do between chunks)
//     before doing anything; stopped by it midway, likewise, never EINTR.
//   - A climbing link's path_symlink, and every path_rename and
//     path_link, take the mount's lock (fsmount.Set.Lock) around the link
//     rule's check and the act, which happen in the same directories. path_symlink refuses absolute targets and targets that
//     lexically leave the mount (ENOTCAPABLE); confinement does not depend
//     on that check, since following any link is confined.
//   - Rights asked for in path_open are intersected with the directory's
//     inheriting rights, never refused. Opening with fd_write, O_CREAT or
//     O_TRUNC in a read-only mount is EROFS. Lacking fd_read or fd_write is
//     EBADF (as POSIX read/write on a wrongly opened fd); lacking any other
//     right is ENOTCAPABLE.
//   - clock ids 2 and 3 (process and thread CPU time) report the wall time
//     since the instance was created: a guest runs on one thread and never
//     waits except in poll_oneoff or stdin, so this is an upper bound of its
//     CPU time that keeps clock() working in C guests.
//   - stdio fds are character devices without seek/tell rights, so
//     wasi-libc line-buffers stdout (a response line reaches the host at its
//     newline) and Go makes stdin pollable.
//   - fd_filestat_set_times and path_filestat_set_times on a file opened
//     through a path are applied by path; without symlink_follow the times
//     of a symbolic link itself are set (utimensat, Linux; ENOTSUP
//     elsewhere). path_link with symlink_follow on a symbolic link is
//     EINVAL, as in wasmtime.
//   - A directory descriptor has no fd_seek right; fd_seek, fd_tell and
//     fd_allocate on it fail as on POSIX (EISDIR, EBADF) before fd_allocate's
//     ENOTSUP on files.
//   - path_rename onto an existing directory behaves as rename(2): a
//     directory replaces an empty one, a file gets EISDIR (renameat on
//     Linux; os.Root alone refuses every such rename with EEXIST).
//   - A path operand or a link target of fsmount.PathMax (4096) bytes or
//     more is ENAMETOOLONG (37), as Linux answers, checked before the host
//     copies it; so is a directory opened so deep that its path from the
//     mount root would reach 4096 bytes.
//   - Per call, at most 1024 iovecs (fd_read, fd_write, fd_pread,
//     fd_pwrite) and 4096 poll_oneoff subscriptions; more is EINVAL. One
//     fd_write to stdout or stderr moves at most Config.MaxStdioWrite
//     bytes and reports a short count beyond it.
//   - fd_readdir yields ".", "..", then the entries in the host
//     directory's order (not sorted: sorting would need the whole listing
//     in host memory); a cookie is the index of the next entry.
//   - The DSYNC/RSYNC/SYNC fdflags are recorded, not honoured; fd_sync and
//     fd_datasync call fsync.
//   - path_open opens only regular files and directories (anything else a
//     host put in a mount is ENOTSUP), never blocks on a FIFO, and refuses
//     more than Config.MaxFiles open descriptors with EMFILE.
//   - APPEND is emulated (seek to the end before each fd_write), so
//     fd_pwrite on an append descriptor writes at its offset and the flag
//     can be changed with fd_fdstat_set_flags.
//   - The write budget is charged before a file write, all or nothing:
//     bytes written plus any hole created past the end of file (fd_write,
//     fd_pwrite), or the growth (fd_filestat_set_size); the unused part of
//     a short write is refunded. Shrinking a file refunds nothing. The
//     budget is file data only: a new directory entry counts against the
//     budget's cap on entries (EDQUOT past it), never against its bytes.
package wasi
