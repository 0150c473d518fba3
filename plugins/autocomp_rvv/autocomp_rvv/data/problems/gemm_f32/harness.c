#include "rvv_harness.h"
#include "kernel.h"

#define H_DIMS 3
static const char *h_dim_names[H_DIMS] = {"M", "N", "K"};
static const size_t h_cases[][H_DIMS] = {{1, 1, 1}, {4, 16, 8}, {5, 23, 7}, {7, 37, 19}, {3, 100, 5}, {8, 48, 32}, {1, 1, 1}, {2, 18, 12}, {3, 35, 7}, {4, 4, 10}, {5, 21, 5}, {6, 38, 16}, {7, 7, 3}, {8, 24, 14}, {9, 41, 1}, {10, 10, 12}, {11, 27, 7}, {12, 44, 10}, {13, 13, 5}, {14, 30, 16}, {15, 47, 3}, {16, 16, 14}};
static const size_t h_bench[H_DIMS] = {8, 48, 32};

static size_t M, N, K;
static float *A, *B, *C;

static void h_setup(const size_t *shape, uint64_t seed) {
  (void)seed;
  M = shape[0]; N = shape[1]; K = shape[2];
  A = h_alloc("A", M * K, 4);
  B = h_alloc("B", K * N, 4);
  C = h_alloc("C", M * N, 4);
  for (size_t i = 0; i < M * K; i++) A[i] = h_rand_f32(-1, 1);
  for (size_t i = 0; i < K * N; i++) B[i] = h_rand_f32(-1, 1);
  h_fill_unwritten_f32(C, M * N);
  h_seal(A);
  h_seal(B);
}

static void h_call(void) { gemm_f32(M, N, K, A, B, C); }

#ifdef RVV_VERIFY  /* the checks: only in the trusted Linux build, never with the candidate */
static int h_verify(void) {
  double *ref = malloc((M * N + 1) * sizeof *ref), *mag = malloc((M * N + 1) * sizeof *mag);
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double acc = 0, m = 0;
      for (size_t k = 0; k < K; k++) {
        double p = (double)A[i * K + k] * (double)B[k * N + j];
        acc += p;
        m += fabs(p);
      }
      ref[i * N + j] = acc;
      mag[i * N + j] = m;
    }
  int ok = h_compare_f32("C", C, ref, mag, M * N, N, H_RTOL, H_ATOL);
  free(ref);
  free(mag);
  return ok;
}
#endif

#include "rvv_harness_main.h"
