#include <stddef.h>
#include <stdint.h>

/* Scalar baseline: the reference definition, one element per iteration. */
void qs8_add(size_t n, const int8_t *a, const int8_t *b, int8_t *out, const qs8_add_params *p) {
  const int32_t rounding = 1 << (p->shift - 1);
  for (size_t i = 0; i < n; i++) {
    int32_t acc = (a[i] - p->a_zero_point) * p->a_multiplier + (b[i] - p->b_zero_point) * p->b_multiplier;
    int32_t q = ((acc + rounding) >> p->shift) + p->output_zero_point;
    if (q < p->output_min) q = p->output_min;
    if (q > p->output_max) q = p->output_max;
    out[i] = (int8_t)q;
  }
}
