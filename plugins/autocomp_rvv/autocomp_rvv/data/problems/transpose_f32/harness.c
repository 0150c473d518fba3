#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 2
static const char *h_dim_names[H_DIMS] = {"rows", "cols"};
static const size_t h_cases[][H_DIMS] = {{1, 1}, {1, 7}, {7, 1}, {5, 9}, {16, 16}, {33, 17}, {64, 60}, {1, 17}, {18, 6}, {3, 27}, {20, 16}, {5, 21}, {22, 10}, {7, 31}, {24, 4}, {9, 25}, {26, 14}, {11, 19}, {28, 8}, {13, 29}, {30, 2}, {15, 23}, {32, 12}};
static const size_t h_bench[H_DIMS] = {64, 60};

static size_t rows, cols;
static float *in, *out;

static void h_setup(const size_t *shape, uint64_t seed) {
  (void)seed;
  rows = shape[0]; cols = shape[1];
  in = h_alloc("in", rows * cols, 4);
  out = h_alloc("out", rows * cols, 4);
  for (size_t i = 0; i < rows * cols; i++) in[i] = h_rand_f32(-100, 100);
  h_fill_unwritten_f32(out, rows * cols);
  h_seal(in);
}

static void h_call(void) { transpose_f32(rows, cols, in, out); }

#ifdef RVV_VERIFY  /* the checks: only in the trusted Linux build, never with the candidate */
static int h_verify(void) {
  double *ref = malloc((rows * cols + 1) * sizeof *ref);
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++) ref[j * rows + i] = (double)in[i * cols + j];
  int ok = h_compare_f32("out", out, ref, NULL, rows * cols, rows, H_RTOL, H_ATOL);
  free(ref);
  return ok;
}
#endif

#include "rvv_harness_main.h"
