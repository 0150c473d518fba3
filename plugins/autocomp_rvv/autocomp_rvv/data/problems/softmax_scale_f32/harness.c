#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 1
static const char *h_dim_names[H_DIMS] = {"n"};
static const size_t h_cases[][H_DIMS] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {64}, {65}, {100}, {127}, {257}, {513}, {1000}, {3001}};
static const size_t h_bench[H_DIMS] = {3001};

static size_t n;
static float *x, *y;
static float scale;

static void h_setup(const size_t *shape, uint64_t seed) {
  (void)seed;
  n = shape[0];
  x = h_alloc("x", n, 4);
  y = h_alloc("y", n, 4);
  for (size_t i = 0; i < n; i++) x[i] = h_rand_f32(0, 1);
  scale = h_rand_f32(0.001f, 0.01f);
  h_fill_unwritten_f32(y, n);
  h_seal(x);
}

static void h_call(void) { softmax_scale_f32(x, y, n, scale); }

#ifdef RVV_VERIFY  /* the checks: only in the trusted Linux build, never with the candidate */
static int h_verify(void) {
  double *ref = malloc((n + 1) * sizeof *ref);
  for (size_t i = 0; i < n; i++) ref[i] = (double)x[i] * (double)scale;
  int ok = h_compare_f32("y", y, ref, NULL, n, 0, H_RTOL, H_ATOL);
  free(ref);
  return ok;
}
#endif

#include "rvv_harness_main.h"
