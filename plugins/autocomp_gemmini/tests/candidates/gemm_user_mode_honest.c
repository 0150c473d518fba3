// Honest (model mode): everything a candidate in user mode may do besides the accelerator: print,
// read the modelled cycles, keep state in its own static data, use a stack array, read its
// constants, and mvin a constant table from its read-only data (the accelerator's DMA reaches
// the user's read-only data too).
static acc_t bias_copy[GEMM_N] __attribute__((aligned(64)));
static const elem_t identity_tile[DIM][DIM] __attribute__((aligned(64))) = {{1}};
static const int announce[2] = {GEMM_M, GEMM_N};

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  elem_t scratch[512];
  memset(scratch, 1, sizeof scratch);
  memcpy(bias_copy, bias, sizeof bias_copy);
  printf("user mode: %d x %d, scratch %d, clock running %d\n", announce[0], announce[1], scratch[511],
         read_cycles() > 0);
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_mvin(&identity_tile[0][0], 0);
  gemmini_fence();
  tiled_matmul_auto(GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias_copy, &C[0][0], GEMM_K, GEMM_N, GEMM_N,
                    GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
                    GEMM_SCALE, 0, true, false, false, false, false, 0, WS);
}
