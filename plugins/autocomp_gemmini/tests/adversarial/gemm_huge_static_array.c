// Hostile (resources): an 8 GiB zero-initialized array. The program cannot be linked (its
// addresses are out of range of the start-up code's relocations); the link error is the
// candidate's, not the evaluator's (it was reported as an infra error, a free retry).
static volatile unsigned char scratch[8ull << 30];

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  scratch[(8ull << 30) - 64] = A[0][0];
  tiled_matmul_auto(GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N, GEMM_N,
                    GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
                    GEMM_SCALE, 0, true, false, false, false, false, 0, WS);
}
