#include <stddef.h>

/* Scalar baseline: one multiply per element. */
void softmax_scale_f32(const float *x, float *y, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] * scale;
}
