#include <stddef.h>
#include <stdint.h>

/* exp(v) for -87 < v <= 0: v = k*ln2 + r with |r| <= ln2/2, exp(v) = 2^k * p(r). */
static float exp_scalar(float v) {
  float t = v * 1.44269504f;
  int k = (int)(t - 0.5f); /* round to nearest for t <= 0 */
  float kf = (float)k;
  float r = v - kf * 0.693145752f; /* ln2 split in two parts: hi ... */
  r = r - kf * 1.42860677e-6f;      /* ... and lo, so r stays accurate */
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666672e-1f + r * (4.16666679e-2f +
            r * (8.33333377e-3f + r * 1.38888892e-3f)))));
  union { uint32_t u; float f; } s = {(uint32_t)(k + 127) << 23};
  return p * s.f;
}

/* Scalar baseline: one exp and one add per element. */
float softmax_expsum_f32(const float *x, float *y, size_t n, float max) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; i++) {
    y[i] = exp_scalar(x[i] - max);
    sum += y[i];
  }
  return sum;
}
