// Vectorised loops: clang -O3 -msimd128 emits a spread of SIMD opcodes.
// walk_simd.golden is wasm-objdump -d of the built module (offset, name).
#include <stdint.h>
#include <math.h>
void f(float *a, const float *b, int n) { for (int i = 0; i < n; i++) a[i] = sqrtf(b[i]) * 2 + fabsf(a[i]); }
void g(int8_t *a, const int16_t *b, int n) { for (int i = 0; i < n; i++) a[i] = (int8_t)(b[i] >> 3) ^ a[i]; }
void h(double *a, const int32_t *b, int n) { for (int i = 0; i < n; i++) a[i] = b[i] < 0 ? -b[i] : a[i] * b[i]; }
void k(uint64_t *a, const uint8_t *b, int n) { for (int i = 0; i < n; i++) a[i] = b[i] * 3 + (a[i] << 2); }
