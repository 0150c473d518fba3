// Hostile (symbol names): a file-local array whose name, pasted by a macro, is the one the
// evaluator finds the harness's parameters by. No link refuses a local symbol, and the
// evaluator's write of the seed then found two symbols of that name and raised (an infra error).
#define JOIN(prefix, name) prefix##name
static unsigned char JOIN(harness_, params)[16] __attribute__((used)) = {1, 2, 3, 4};

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  tiled_matmul_auto(GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N, GEMM_N,
                    GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
                    GEMM_SCALE, 0, true, false, false, false, false, 0, WS);
}
