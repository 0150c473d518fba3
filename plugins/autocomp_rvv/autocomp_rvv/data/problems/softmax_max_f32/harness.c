#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 1
static const char *h_dim_names[H_DIMS] = {"n"};
static const size_t h_cases[][H_DIMS] = {{1}, {2}, {7}, {33}, {100}, {257}, {1000}, {3001}};
static const size_t h_bench[H_DIMS] = {3001};

static size_t n;
static float *x;
static float result;

static void h_setup(const size_t *shape, uint64_t seed) {
  (void)seed;
  n = shape[0];
  x = h_alloc("x", n, 4);
  for (size_t i = 0; i < n; i++) x[i] = h_rand_f32(-20, 20);
  /* put the maximum at a random place, often in the tail */
  size_t near_end = n - 1 - h_rand_u32() % (n < 5 ? n : 5);
  x[h_rand_u32() % 2 ? near_end : h_rand_u32() % n] = 25.0f + h_rand_f32(0, 1);
  h_seal(x);
  h_output("result", &result, sizeof result);  /* the returned value */
}

static void h_call(void) { result = softmax_max_f32(x, n); }

#ifdef RVV_VERIFY  /* the checks: only in the trusted Linux build, never with the candidate */
static int h_verify(void) {
  float m = x[0];
  for (size_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
  if (result != m) {
    h_fail("returned %.9g, expected the maximum %.9g", (double)result, (double)m);
    return 0;
  }
  return 1;
}
#endif

#include "rvv_harness_main.h"
