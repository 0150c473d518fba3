#include <stddef.h>
#include <stdint.h>

float expf(float);

float softmax_expsum_f32(const float *x, float *y, size_t n, float max) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; i++) sum += (y[i] = expf(x[i] - max));
  return sum;
}
