/* cpu.c: the CPU-bound C guest of the fuel benchmarks: a small matrix
 * multiplication, qsort of pseudo-random records, and an FNV-1a hash over a
 * buffer, repeated; no input, one line of output (the digest, so the work
 * is not optimised away and runs can be compared).
 * Build: make -C testdata/fuel fixtures */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 96
#define RECS 20000
#define ROUNDS 8

static double a[N][N], b[N][N], c[N][N];
static uint32_t recs[RECS];
static uint8_t buf[1 << 16];

static uint32_t rng = 12345;
static uint32_t next(void) {
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static int cmp(const void *x, const void *y) {
	uint32_t p = *(const uint32_t *)x, q = *(const uint32_t *)y;
	return (p > q) - (p < q);
}

int main(void) {
	uint64_t h = 1469598103934665603ULL;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++)
			for (int j = 0; j < N; j++) {
				a[i][j] = (double)((i * j + r) % 17);
				b[i][j] = (double)((i + j * r) % 13);
			}
		for (int i = 0; i < N; i++)
			for (int j = 0; j < N; j++) {
				double s = 0;
				for (int k = 0; k < N; k++)
					s += a[i][k] * b[k][j];
				c[i][j] = s;
			}
		for (int i = 0; i < RECS; i++)
			recs[i] = next();
		qsort(recs, RECS, sizeof recs[0], cmp);
		for (size_t i = 0; i < sizeof buf; i++)
			buf[i] = (uint8_t)(recs[i % RECS] >> (i & 7));
		memcpy(buf, c, sizeof(double) * N);
		for (int k = 0; k < 8; k++)
			for (size_t i = 0; i < sizeof buf; i++) {
				h ^= buf[i];
				h *= 1099511628211ULL;
			}
	}
	printf("%016llx %.1f %u\n", (unsigned long long)h, c[N / 2][N / 3], recs[RECS / 2]);
	return 0;
}
