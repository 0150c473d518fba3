#include <stddef.h>

/* Bug: uses the input buffer as scratch space. */
void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  float *scratch = (float *)a;
  for (size_t i = 0; i < n; i++) {
    scratch[i] = a[i] + b[i];
    c[i] = scratch[i];
  }
}
