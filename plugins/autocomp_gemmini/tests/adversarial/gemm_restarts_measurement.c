// Adversarial (model mode): computes with the vendor library, then calls the harness's
// "begin measured region" again (its name pasted together so no source screen sees it), so
// only the instant before returning is measured.
#define CAT(a, b) a##b
void CAT(harn, ess_roi_begin)(void);

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  tiled_matmul_auto(GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N, GEMM_N,
                    GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
                    GEMM_SCALE, 0, true, false, false, false, false, 0, WS);
  gemmini_fence();
  CAT(harn, ess_roi_begin)();
}
