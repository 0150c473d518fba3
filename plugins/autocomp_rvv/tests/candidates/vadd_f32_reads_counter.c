#include <stddef.h>
#include <stdint.h>

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  uint64_t t;
  __asm__ volatile("csrr %0, minstret" : "=r"(t));
  for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
