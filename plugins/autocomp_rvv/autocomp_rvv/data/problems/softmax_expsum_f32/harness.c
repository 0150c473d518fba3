#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 1
static const char *h_dim_names[H_DIMS] = {"n"};
static const size_t h_cases[][H_DIMS] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {64}, {65}, {100}, {127}, {257}, {513}, {1000}, {2001}};
static const size_t h_bench[H_DIMS] = {2001};

static size_t n;
static float *x, *y;
static float max, result;

static void h_setup(const size_t *shape, uint64_t seed) {
  n = shape[0];
  x = h_alloc("x", n, 4);
  y = h_alloc("y", n, 4);
  /* max over the whole range the spec allows (-40 <= x[i] - max <= 0): consecutive cases
   * (seeds) cycle through 0, the true maximum of x, a random value and a large one */
  int kind = (int)(seed % 4);
  float top = kind == 0 ? 0.0f : kind == 3 ? h_rand_f32(-1000.0f, 1000.0f) : h_rand_f32(-50.0f, 50.0f);
  for (size_t i = 0; i < n; i++) x[i] = top + h_rand_f32(-40.0f, 0.0f);
  max = top;
  if (kind == 1) {  /* the true maximum of the inputs */
    max = n ? x[0] : top;
    for (size_t i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
  }
  h_fill_unwritten_f32(y, n);
  h_seal(x);
  h_output_scalar("result", &result, sizeof result);  /* the returned value */
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
