#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 1
static const char *h_dim_names[H_DIMS] = {"n"};
static const size_t h_cases[][H_DIMS] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {64}, {65}, {100}, {127}, {257}, {513}, {1000}, {3001}};
static const size_t h_bench[H_DIMS] = {3001};

static size_t n;
static float *a, *b, *c;

static void h_setup(const size_t *shape, uint64_t seed) {
  (void)seed;
  n = shape[0];
  a = h_alloc("a", n, 4);
  b = h_alloc("b", n, 4);
  c = h_alloc("c", n, 4);
  for (size_t i = 0; i < n; i++) { a[i] = h_rand_f32(-4, 4); b[i] = h_rand_f32(-4, 4); }
  h_fill_unwritten_f32(c, n);
  h_seal(a);
  h_seal(b);
}

static void h_call(void) { vadd_f32(a, b, c, n); }

#ifdef RVV_VERIFY  /* the checks: only in the trusted Linux build, never with the candidate */
static int h_verify(void) {
  double *ref = malloc((n + 1) * sizeof *ref);
  for (size_t i = 0; i < n; i++) ref[i] = (double)(a[i] + b[i]);
  int ok = h_compare_f32("c", c, ref, NULL, n, 0, H_RTOL, H_ATOL);
  free(ref);
  return ok;
}
#endif

#include "rvv_harness_main.h"
