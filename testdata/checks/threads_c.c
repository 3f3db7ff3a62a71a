// A real toolchain-made shared-memory module (threads): wasi-libc on this
// machine is not built with atomics, so this is freestanding (-nostdlib) and
// calls fd_write directly. clang emits atomic RMW, wait and notify for the
// passive-data initialisation, and wasm-ld marks the memory shared.
#include <stdint.h>
typedef struct { const void *buf; uint32_t len; } ciovec;
__attribute__((import_module("wasi_snapshot_preview1"), import_name("fd_write")))
int32_t fd_write(int32_t fd, const ciovec *iovs, int32_t n, uint32_t *nwritten);
static int counter;
void _start(void) {
	__atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
	static const char msg[] = "hello from shared memory\n";
	ciovec v = {msg, sizeof msg - 1};
	uint32_t n;
	fd_write(1, &v, 1, &n);
}
