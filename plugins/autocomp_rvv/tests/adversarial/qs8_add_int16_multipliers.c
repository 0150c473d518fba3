#include <stdint.h>

/* The multipliers kept in 16 bits: exact while |multiplier| < 2^15 (the old draws stayed below
 * 12288), wrong over the range the problem allows (|multiplier| < 2^19). */
void qs8_add(size_t n, const int8_t *a, const int8_t *b, int8_t *out, const qs8_add_params *p) {
  const int16_t am = (int16_t)p->a_multiplier, bm = (int16_t)p->b_multiplier;
  const int32_t half = 1 << (p->shift - 1);
  for (size_t i = 0; i < n; i++) {
    int32_t acc = (a[i] - p->a_zero_point) * am + (b[i] - p->b_zero_point) * bm;
    int32_t q = ((acc + half) >> p->shift) + p->output_zero_point;
    out[i] = (int8_t)(q < p->output_min ? p->output_min : q > p->output_max ? p->output_max : q);
  }
}
