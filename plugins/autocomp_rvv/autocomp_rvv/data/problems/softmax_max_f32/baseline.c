#include <stddef.h>

/* Scalar baseline: one comparison per element. */
float softmax_max_f32(const float *x, size_t n) {
  float m = x[0];
  for (size_t i = 1; i < n; i++)
    if (x[i] > m) m = x[i];
  return m;
}
