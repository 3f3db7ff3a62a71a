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
//   - Paths are resolved by os.Root beneath the directory fd they are
//     relative to; one that would leave it gets ENOTCAPABLE (76), as in
//     wasmtime. path_symlink refuses absolute targets and targets that
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
//     through a path are applied by path; setting the times of a symbolic
//     link itself (no symlink_follow) is ENOTSUP. path_link with
//     symlink_follow on a symbolic link is ENOTSUP.
//   - The fd_sync/fd_datasync and DSYNC/RSYNC/SYNC flags are accepted; sync
//     calls fsync.
package wasi
