// fsprobe runs the file-system operations named by its arguments, one per
// argument ("op:arg:arg"), and prints "<arg> ok[ result]" or
// "<arg> errno=<n>" per operation. wasi-libc's errno values are the raw
// WASI errno numbers, so the host's answers are seen exactly.
// Built by the Makefile beside it (clang --target=wasm32-wasi + wasi-libc).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <wasi/api.h>

static char *args[8];
static char result[8192];

static int split(char *s) {
	int n = 0;
	args[n++] = s;
	for (char *p = s; *p && n < 8; p++) {
		if (*p == ':') {
			*p = 0;
			args[n++] = p + 1;
		}
	}
	return n;
}

static int fail(int e) { errno = e; return -1; }

static int writen(const char *path, int flags, long long off, long long n) {
	int fd = open(path, flags, 0644);
	if (fd < 0) return -1;
	char *buf = calloc(1, n > 0 ? n : 1);
	ssize_t w = off >= 0 ? pwrite(fd, buf, n, off) : write(fd, buf, n);
	int e = errno;
	free(buf);
	close(fd);
	return w < 0 ? fail(e) : 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char **)a, *(char **)b); }

static int op(int n) {
	char *o = args[0];
	result[0] = 0;
	if (!strcmp(o, "preopens")) {
		for (int fd = 3;; fd++) {
			__wasi_prestat_t st;
			if (__wasi_fd_prestat_get(fd, &st) != 0) return 0;
			char name[256] = {0};
			int e = __wasi_fd_prestat_dir_name(fd, (uint8_t *)name, st.u.dir.pr_name_len);
			if (e) return fail(e);
			if (fd > 3) strcat(result, ",");
			strcat(result, name);
		}
	}
	if (!strcmp(o, "write")) return writen(args[1], O_WRONLY | O_CREAT | O_TRUNC, -1, atoll(args[2]));
	if (!strcmp(o, "pwrite")) return writen(args[1], O_RDWR | O_CREAT, atoll(args[2]), atoll(args[3]));
	if (!strcmp(o, "writes")) {
		int fd = open(args[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) return -1;
		long long sz = atoll(args[2]), count = atoll(args[3]);
		char *buf = calloc(1, sz);
		for (long long i = 0; i < count; i++) {
			if (write(fd, buf, sz) < 0) {
				int e = errno;
				free(buf);
				close(fd);
				return fail(e);
			}
		}
		free(buf);
		return close(fd);
	}
	if (!strcmp(o, "append")) {
		int fd = open(args[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd < 0) return -1;
		ssize_t w = write(fd, args[2], strlen(args[2]));
		int e = errno;
		close(fd);
		return w < 0 ? fail(e) : 0;
	}
	if (!strcmp(o, "truncate")) return truncate(args[1], atoll(args[2]));
	if (!strcmp(o, "allocate")) {
		int fd = open(args[1], O_RDWR | O_CREAT, 0644);
		if (fd < 0) return -1;
		int e = posix_fallocate(fd, 0, 4096);
		close(fd);
		return e ? fail(e) : 0;
	}
	if (!strcmp(o, "read")) {
		FILE *f = fopen(args[1], "r");
		if (!f) return -1;
		size_t r = fread(result, 1, sizeof result - 1, f);
		result[r] = 0;
		fclose(f);
		return 0;
	}
	if (!strcmp(o, "size") || !strcmp(o, "lstat")) {
		struct stat st;
		if ((o[0] == 's' ? stat : lstat)(args[1], &st) < 0) return -1;
		if (o[0] == 's') snprintf(result, sizeof result, "%lld", (long long)st.st_size);
		else strcpy(result, S_ISLNK(st.st_mode) ? "L---------" : S_ISDIR(st.st_mode) ? "d---------" : "----------");
		return 0;
	}
	if (!strcmp(o, "mkdir")) return mkdir(args[1], 0755);
	if (!strcmp(o, "rmdir")) return rmdir(args[1]);
	if (!strcmp(o, "unlink")) return unlink(args[1]);
	if (!strcmp(o, "rename")) return rename(args[1], args[2]);
	if (!strcmp(o, "symlink")) return symlink(args[1], args[2]);
	if (!strcmp(o, "link")) return link(args[1], args[2]);
	if (!strcmp(o, "readlink")) {
		ssize_t r = readlink(args[1], result, sizeof result - 1);
		if (r < 0) return -1;
		result[r] = 0;
		return 0;
	}
	if (!strcmp(o, "ls") || !strcmp(o, "count")) {
		DIR *d = opendir(args[1]);
		if (!d) return -1;
		static char *names[4096];
		int k = 0;
		struct dirent *de;
		while ((de = readdir(d)) && k < 4096) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
			size_t l = strlen(de->d_name);
			names[k] = malloc(l + 2);
			strcpy(names[k], de->d_name);
			if (de->d_type == DT_DIR) strcat(names[k], "/");
			k++;
		}
		closedir(d);
		qsort(names, k, sizeof names[0], cmp);
		if (o[0] == 'c') snprintf(result, sizeof result, "%d", k);
		else for (int i = 0; i < k; i++) {
			if (i) strcat(result, ",");
			strcat(result, names[i]);
		}
		for (int i = 0; i < k; i++) free(names[i]);
		return 0;
	}
	if (!strcmp(o, "seek")) {
		int fd = open(args[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) return -1;
		char b[6] = {0};
		if (write(fd, "hello world", 11) != 11 || lseek(fd, 6, SEEK_SET) != 6 || read(fd, b, 5) != 5) return -1;
		off_t end = lseek(fd, 0, SEEK_END);
		close(fd);
		snprintf(result, sizeof result, "%s %lld", b, (long long)end);
		return 0;
	}
	if (!strcmp(o, "chtimes")) {
		struct timespec ts[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
		return utimensat(AT_FDCWD, args[1], ts, 0);
	}
	if (!strcmp(o, "mkfiles")) {
		char p[512];
		for (int i = 0; i < atoi(args[2]); i++) {
			snprintf(p, sizeof p, "%s/file-%04d", args[1], i);
			int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0) return -1;
			close(fd);
		}
		return 0;
	}
	if (!strcmp(o, "rawopen") || !strcmp(o, "rawopen-nofollow")) {
		__wasi_fd_t fd;
		int e = __wasi_path_open(atoi(args[1]), o[7] ? 0 : __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, args[2], 0,
		                         __WASI_RIGHTS_FD_READ, __WASI_RIGHTS_FD_READ, 0, &fd);
		if (e) return fail(e);
		ssize_t r = read(fd, result, 63);
		result[r > 0 ? r : 0] = 0;
		close(fd);
		return 0;
	}
	if (!strcmp(o, "rawlink")) {
		int e = __wasi_path_link(atoi(args[1]), 0, args[2], atoi(args[3]), args[4]);
		return e ? fail(e) : 0;
	}
	if (!strcmp(o, "rawrename")) {
		int e = __wasi_path_rename(atoi(args[1]), args[2], atoi(args[3]), args[4]);
		return e ? fail(e) : 0;
	}
	if (!strcmp(o, "sock")) {
		int fd = atoi(args[1]);
		__wasi_fd_t r;
		__wasi_size_t sz;
		__wasi_roflags_t rf;
		__wasi_iovec_t iov = {0, 0};
		__wasi_ciovec_t ciov = {0, 0};
		snprintf(result, sizeof result, "%d,%d,%d,%d", __wasi_sock_accept(fd, 0, &r),
		         __wasi_sock_recv(fd, &iov, 1, 0, &sz, &rf), __wasi_sock_send(fd, &ciov, 1, 0, &sz),
		         __wasi_sock_shutdown(fd, __WASI_SDFLAGS_RD));
		return 0;
	}
	// C-only probes.
	if (!strcmp(o, "isatty")) {
		snprintf(result, sizeof result, "%d", isatty(atoi(args[1])));
		return 0;
	}
	if (!strcmp(o, "rights")) { // rights:path — drop fd_write, then try to get it back and to write
		int fd = open(args[1], O_RDWR | O_CREAT, 0644);
		if (fd < 0) return -1;
		__wasi_fdstat_t st;
		if (__wasi_fd_fdstat_get(fd, &st)) return -1;
		int drop = __wasi_fd_fdstat_set_rights(fd, st.fs_rights_base & ~__WASI_RIGHTS_FD_WRITE, 0);
		int regain = __wasi_fd_fdstat_set_rights(fd, st.fs_rights_base, 0);
		ssize_t w = write(fd, "x", 1);
		snprintf(result, sizeof result, "%d,%d,%d", drop, regain, w < 0 ? errno : 0);
		close(fd);
		return 0;
	}
	if (!strcmp(o, "renumber")) { // renumber:path — open twice, move the second onto the first, tell
		int a = open(args[1], O_RDWR | O_CREAT | O_TRUNC, 0644), b = open(args[1], O_RDWR);
		if (a < 0 || b < 0) return -1;
		write(b, "abc", 3);
		int e = __wasi_fd_renumber(b, a);
		__wasi_filesize_t pos = 0;
		int t = __wasi_fd_tell(a, &pos);
		int gone = __wasi_fd_tell(b, &pos) ;
		int bad = __wasi_fd_renumber(a, 1000);
		snprintf(result, sizeof result, "%d,%d,%llu,%d,%d", e, t, (unsigned long long)pos, gone, bad);
		close(a);
		return 0;
	}
	if (!strcmp(o, "oflags")) { // oflags:path — O_EXCL twice, O_DIRECTORY on a file, O_TRUNC, write on O_RDONLY, read a dir
		int r[6];
		int fd = open(args[1], O_WRONLY | O_CREAT | O_EXCL, 0644);
		r[0] = fd < 0 ? errno : 0;
		if (fd >= 0) { write(fd, "abc", 3); close(fd); }
		fd = open(args[1], O_WRONLY | O_CREAT | O_EXCL, 0644);
		r[1] = fd < 0 ? errno : 0;
		fd = open(args[1], O_RDONLY | O_DIRECTORY);
		r[2] = fd < 0 ? errno : 0;
		fd = open(args[1], O_WRONLY | O_TRUNC);
		struct stat st;
		fstat(fd, &st);
		r[3] = (int)st.st_size;
		close(fd);
		fd = open(args[1], O_RDONLY);
		r[4] = write(fd, "x", 1) < 0 ? errno : 0;
		close(fd);
		fd = open("/volume/tmp", O_RDONLY | O_DIRECTORY);
		char b[4];
		r[5] = read(fd, b, 4) < 0 ? errno : 0;
		close(fd);
		snprintf(result, sizeof result, "%d,%d,%d,%d,%d,%d", r[0], r[1], r[2], r[3], r[4], r[5]);
		return 0;
	}
	if (!strcmp(o, "sleep")) { // sleep:ms — nanosleep through poll_oneoff
		struct timespec t0, t1, d = {0, atoi(args[1]) * 1000000L};
		clock_gettime(CLOCK_MONOTONIC, &t0);
		nanosleep(&d, 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long long ms = (t1.tv_sec - t0.tv_sec) * 1000LL + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		snprintf(result, sizeof result, "%d", ms >= atoi(args[1]));
		return 0;
	}
	return fail(ENOSYS);
}

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		char *orig = strdup(argv[i]);
		int n = split(argv[i]);
		errno = 0;
		if (op(n) < 0) printf("%s errno=%d\n", orig, errno);
		else if (result[0]) printf("%s ok %s\n", orig, result);
		else printf("%s ok\n", orig);
		free(orig);
	}
	return 0;
}
