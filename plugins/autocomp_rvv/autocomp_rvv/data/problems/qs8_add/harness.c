#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 1
static const char *h_dim_names[H_DIMS] = {"n"};
static const size_t h_cases[][H_DIMS] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {64}, {65}, {100}, {127}, {257}, {513}, {1000}, {3001}};
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
  /* The spec allows |multiplier| < 2^19 and any bounds in [-128, 127]; consecutive cases
   * (seeds) cycle through: multipliers of a few units of 2^shift / 256 (most outputs inside
   * the int8 range), multipliers over the whole range with a shift that keeps outputs
   * varied, and the edges (+-(2^19 - 1), shift 10 or 20, any bounds). */
  const int32_t mmax = (1 << 19) - 1;
  int kind = (int)(seed % 3);
  if (kind == 0) {
    int32_t unit = (1 << p->shift) / 256;
    p->a_multiplier = h_rand_int(-unit, 3 * unit);
    p->b_multiplier = h_rand_int(unit / 2, 3 * unit);
  } else if (kind == 1) {
    p->shift = (uint32_t)h_rand_int(18, 20);
    p->a_multiplier = h_rand_int(-mmax, mmax);
    p->b_multiplier = h_rand_int(-mmax, mmax);
  } else {
    p->shift = h_rand_u32() % 2 ? 10 : 20;
    p->a_multiplier = h_rand_u32() % 2 ? mmax : -mmax;
    p->b_multiplier = h_rand_u32() % 2 ? h_rand_int(-mmax, mmax) : -mmax;
  }
  p->output_zero_point = h_rand_int(-128, 127);
  p->output_min = h_rand_int(-128, -60);
  p->output_max = h_rand_int(60, 127);
  if (kind == 2) {  /* any bounds, min <= max */
    int32_t lo = h_rand_int(-128, 127), hi = h_rand_int(-128, 127);
    p->output_min = lo < hi ? lo : hi;
    p->output_max = lo < hi ? hi : lo;
  }
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
