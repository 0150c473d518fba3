#include <riscv_vector.h>

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    c[i] = a[i] + b[i]
}
