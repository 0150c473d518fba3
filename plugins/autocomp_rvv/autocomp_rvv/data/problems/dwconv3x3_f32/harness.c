#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 3
static const char *h_dim_names[H_DIMS] = {"C", "H", "W"};
static const size_t h_cases[][H_DIMS] = {{1, 3, 3}, {2, 5, 9}, {3, 7, 20}, {2, 4, 67}, {4, 8, 50}, {1, 3, 3}, {2, 4, 20}, {3, 5, 5}, {1, 6, 22}, {2, 7, 7}, {3, 8, 24}, {1, 9, 9}, {2, 10, 26}, {3, 3, 11}, {1, 4, 28}, {2, 5, 13}, {3, 6, 30}, {1, 7, 15}, {2, 8, 32}, {3, 9, 17}, {1, 10, 34}};
static const size_t h_bench[H_DIMS] = {4, 8, 50};

static size_t C, H, W, OH, OW;
static float *in, *w, *bias, *out;

static void h_setup(const size_t *shape, uint64_t seed) {
  (void)seed;
  C = shape[0]; H = shape[1]; W = shape[2]; OH = H - 2; OW = W - 2;
  in = h_alloc("in", C * H * W, 4);
  w = h_alloc("w", C * 9, 4);
  bias = h_alloc("bias", C, 4);
  out = h_alloc("out", C * OH * OW, 4);
  for (size_t i = 0; i < C * H * W; i++) in[i] = h_rand_f32(-1, 1);
  for (size_t i = 0; i < C * 9; i++) w[i] = h_rand_f32(-1, 1);
  for (size_t i = 0; i < C; i++) bias[i] = h_rand_f32(-1, 1);
  h_fill_unwritten_f32(out, C * OH * OW);
  h_seal(in);
  h_seal(w);
  h_seal(bias);
}

static void h_call(void) { dwconv3x3_f32(C, H, W, in, w, bias, out); }

#ifdef RVV_VERIFY  /* the checks: only in the trusted Linux build, never with the candidate */
static int h_verify(void) {
  size_t total = C * OH * OW;
  double *ref = malloc((total + 1) * sizeof *ref), *mag = malloc((total + 1) * sizeof *mag);
  for (size_t c = 0; c < C; c++)
    for (size_t y = 0; y < OH; y++)
      for (size_t x = 0; x < OW; x++) {
        double acc = bias[c], m = fabs((double)bias[c]);
        for (size_t i = 0; i < 3; i++)
          for (size_t j = 0; j < 3; j++) {
            double p = (double)in[(c * H + y + i) * W + x + j] * (double)w[c * 9 + i * 3 + j];
            acc += p;
            m += fabs(p);
          }
        ref[(c * OH + y) * OW + x] = acc;
        mag[(c * OH + y) * OW + x] = m;
      }
  int ok = h_compare_f32("out", out, ref, mag, total, OW, H_RTOL, H_ATOL);
  free(ref);
  free(mag);
  return ok;
}
#endif

#include "rvv_harness_main.h"
