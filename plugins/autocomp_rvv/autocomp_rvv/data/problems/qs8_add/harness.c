#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 1
static const char *h_dim_names[H_DIMS] = {"n"};
static const size_t h_cases[][H_DIMS] = {{0}, {1}, {7}, {33}, {100}, {257}, {1000}, {3001}};
static const size_t h_bench[H_DIMS] = {3001};

static size_t n;
static int8_t *a, *b, *out;
static qs8_add_params *p;

static void h_setup(const size_t *shape, uint64_t seed) {
  (void)seed;
  n = shape[0];
  a = h_alloc("a", n, 1);
  b = h_alloc("b", n, 1);
  out = h_alloc("out", n, 1);
  p = h_alloc("p", 1, sizeof *p);
  for (size_t i = 0; i < n; i++) { a[i] = (int8_t)h_rand_int(-128, 127); b[i] = (int8_t)h_rand_int(-128, 127); }
  p->a_zero_point = h_rand_int(-128, 127);
  p->b_zero_point = h_rand_int(-128, 127);
  p->shift = (uint32_t)h_rand_int(10, 20);
  /* multipliers of a few units of 2^shift / 256 keep most outputs inside the int8 range */
  int32_t unit = (1 << p->shift) / 256;
  p->a_multiplier = h_rand_int(-unit, 3 * unit);
  p->b_multiplier = h_rand_int(unit / 2, 3 * unit);
  p->output_zero_point = h_rand_int(-128, 127);
  p->output_min = h_rand_int(-128, -60);
  p->output_max = h_rand_int(60, 127);
  h_fill_unwritten_i8(out, n);
  h_seal(a);
  h_seal(b);
  h_seal(p);
}

static void h_call(void) { qs8_add(n, a, b, out, p); }

#ifdef RVV_VERIFY  /* the checks: only in the trusted Linux build, never with the candidate */
static int h_verify(void) {
  int32_t *ref = malloc((n + 1) * sizeof *ref);
  for (size_t i = 0; i < n; i++) {
    int64_t acc = (int64_t)(a[i] - p->a_zero_point) * p->a_multiplier + (int64_t)(b[i] - p->b_zero_point) * p->b_multiplier;
    int64_t q = ((acc + ((int64_t)1 << (p->shift - 1))) >> p->shift) + p->output_zero_point;
    ref[i] = (int32_t)(q < p->output_min ? p->output_min : q > p->output_max ? p->output_max : q);
  }
  int ok = h_compare_i8("out", out, ref, n, 0);
  free(ref);
  return ok;
}
#endif

#include "rvv_harness_main.h"
