// Hostile (host files at compile time): C23 #embed, which the source screen did not know, reads
// files outside the work dir into the program, which prints them (stdout comes back with the
// result): a file every Linux has, and one of the evaluator's (HOST_FILE, defined by the test:
// the model's timing.toml). The evaluation was accepted with both printed.
static const char accounts[] = {
#embed "/etc/passwd" limit(48)
    , 0};
static const char evaluator[] = {
#embed HOST_FILE limit(48)
    , 0};

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  printf("passwd: %s\nharness: %s\n", accounts, evaluator);
  tiled_matmul_auto(GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N, GEMM_N,
                    GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
                    GEMM_SCALE, 0, true, false, false, false, false, 0, WS);
}
