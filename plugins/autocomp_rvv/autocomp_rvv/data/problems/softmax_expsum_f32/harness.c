#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 1
static const char *h_dim_names[H_DIMS] = {"n"};
static const size_t h_cases[][H_DIMS] = {{0}, {1}, {7}, {33}, {100}, {257}, {1000}, {2001}};
static const size_t h_bench[H_DIMS] = {2001};

static size_t n;
static float *x, *y;
static float max, result;

static void h_setup(const size_t *shape, uint64_t seed) {
  (void)seed;
  n = shape[0];
  x = h_alloc("x", n, 4);
  y = h_alloc("y", n, 4);
  max = 8.0f;
  for (size_t i = 0; i < n; i++) x[i] = h_rand_f32(-32.0f, 8.0f);
  h_fill_unwritten_f32(y, n);
  h_seal(x);
  h_output("result", &result, sizeof result);  /* the returned value */
}

static void h_call(void) { result = softmax_expsum_f32(x, y, n, max); }

#ifdef RVV_VERIFY  /* the checks: only in the trusted Linux build, never with the candidate */
static int h_verify(void) {
  double *ref = malloc((n + 1) * sizeof *ref);
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) { ref[i] = exp((double)x[i] - (double)max); sum += ref[i]; }
  int ok = h_compare_f32("y", y, ref, NULL, n, 0, H_RTOL, H_ATOL);
  free(ref);
  if (ok && !(fabs((double)result - sum) <= 1e-4 * sum)) {
    h_fail("returned sum %.9g, expected %.9g (relative tolerance 1e-4)", (double)result, sum);
    ok = 0;
  }
  return ok;
}
#endif

#include "rvv_harness_main.h"
