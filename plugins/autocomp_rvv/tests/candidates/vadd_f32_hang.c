#include <stddef.h>

/* Bug: the loop counter never advances when n > 0. */
void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  for (size_t i = 0; i < n;) c[i] = a[i] + b[i];
}
