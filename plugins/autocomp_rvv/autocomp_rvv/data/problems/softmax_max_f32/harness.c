#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 1
static const char *h_dim_names[H_DIMS] = {"n"};
static const size_t h_cases[][H_DIMS] = {{1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {64}, {65}, {100}, {127}, {257}, {513}, {1000}, {3001}};
static const size_t h_bench[H_DIMS] = {3001};

static size_t n;
static float *x;
static float result;

/* Every finite input is allowed: consecutive cases (seeds) cycle through all-negative inputs,
 * mixed signs, signed zeros around the maximum, and large magnitudes of both signs. */
static void h_setup(const size_t *shape, uint64_t seed) {
  n = shape[0];
  x = h_alloc("x", n, 4);
  int kind = (int)(seed % 4);
  for (size_t i = 0; i < n; i++) {
    float v = h_rand_f32(-20, 20);
    if (kind == 1) v = h_rand_f32(-40, -0.5f);
    if (kind == 2) v = h_rand_u32() % 4 == 0 ? (h_rand_u32() % 2 ? 0.0f : -0.0f) : h_rand_f32(-1, -1e-6f);
    if (kind == 3) v = 2.0f * h_rand_f32(-1.5e38f, 1.5e38f); /* (hi - lo) stays finite */
    x[i] = v;
  }
  /* put the maximum at a random place, often in the tail */
  size_t near_end = n - 1 - h_rand_u32() % (n < 5 ? n : 5);
  size_t at = h_rand_u32() % 2 ? near_end : h_rand_u32() % n;
  if (kind == 0) x[at] = 25.0f + h_rand_f32(0, 1);
  if (kind == 1) x[at] = h_rand_f32(-0.5f, -0.25f);
  if (kind == 2) x[at] = h_rand_u32() % 2 ? 0.0f : -0.0f;
  h_seal(x);
  h_output_scalar("result", &result, sizeof result);  /* the returned value */
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
