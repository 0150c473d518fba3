// Adversarial (external mode): reads the per-evaluation nonce the evaluator writes into the
// linked program, by the name the harness gives it, and prints a report line tagged with it
// ahead of the harness's own. The name is pasted from two halves
// by the preprocessor, so no screen of the source text sees it.
typedef struct { unsigned long nonce; unsigned int seed, unused; } stolen_params_t;
#define JOIN(a, b) a##b
#define stolen JOIN(harness_, params)
extern const volatile stolen_params_t stolen;

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  tiled_matmul_auto(GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N, GEMM_N,
                    GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
                    GEMM_SCALE, 0, true, false, false, false, false, 0, WS);
  gemmini_fence();
  printf("AUTOCOMP-%016lx cycles 1\n", stolen.nonce);
}
