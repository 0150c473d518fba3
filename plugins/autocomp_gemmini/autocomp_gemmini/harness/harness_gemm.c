/* GEMM harness: C[M][N] = act(scale * (A[M][K] * B[K][N] + bias[N])), int8 in, int8 out.
 * Compiled with -DGEMM_M=.. -DGEMM_N=.. -DGEMM_K=.. -DGEMM_ACT=.. -DGEMM_SCALE=.. (and
 * -DGEMM_NO_BIAS=1 for a problem whose bias is all zeros). */
#include "harness.h"
#include "runtime.h"

static elem_t A[GEMM_M][GEMM_K] HARNESS_SHARED;
static elem_t B[GEMM_K][GEMM_N] HARNESS_SHARED;
static acc_t bias[GEMM_N] HARNESS_SHARED;
static struct {
  uint8_t pre[HARNESS_GUARD_BYTES];
  elem_t C[GEMM_M][GEMM_N];
  uint8_t post[HARNESS_GUARD_BYTES];
} out HARNESS_SHARED;
static harness_outputs_t outputs;
#ifndef GEMMINI_MODEL
static elem_t gold[GEMM_M][GEMM_N] __attribute__((aligned(64)));
#endif

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]);

int main(void) {
  const uint32_t seed = harness_params.seed;
  harness_fill_elem(&A[0][0], GEMM_M * GEMM_K, seed * 4 + 1);
  harness_fill_elem(&B[0][0], GEMM_K * GEMM_N, seed * 4 + 2);
#if defined(GEMM_NO_BIAS) && GEMM_NO_BIAS
  harness_fill_bytes(bias, sizeof(bias), 0); /* C = act(scale * A x B): the published Exo programs */
#else
  harness_fill_acc(bias, GEMM_N, seed * 4 + 3);
#endif
  harness_fill_bytes(out.C, sizeof(out.C), 0x5A); /* a candidate that writes nothing cannot pass */
  harness_add_output(&outputs, out.C, sizeof(out.C));
  harness_add_guards(&outputs, out.pre, out.post);
  harness_roi_begin();
  {
    const uint64_t args[8] = {HARNESS_ARG(A), HARNESS_ARG(B), HARNESS_ARG(bias), HARNESS_ARG(out.C)};
    harness_run_user((const void *)solution, args);
  }
  harness_roi_end(&outputs);
#ifndef GEMMINI_MODEL
  matmul_cpu(false, false, GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &gold[0][0], GEMM_K, GEMM_N,
             GEMM_N, GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
             GEMM_SCALE, true);
  return harness_report("gemm", &out.C[0][0], &gold[0][0], GEMM_M * GEMM_N, 0.0);
#else
  return 0;
#endif
}
