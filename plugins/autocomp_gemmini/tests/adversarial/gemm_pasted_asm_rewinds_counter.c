// Adversarial (model mode): computes the whole GEMM on the CPU (about 2 million instructions),
// then winds minstret back to what it read before, so the model, which took the instruction count
// from a register the program loaded, sees almost none of it. Inline assembly is spelled by
// pasting tokens, so no text screen finds the keyword.
#define PASTE(a, b) a##b
#define INLINE PASTE(__as, m__)

// About 1,250 instructions the count does see, so the result lies above the problem's lower bound
// (1024 cycles) and passes the engine's refusal of impossible results too.
static void visible_work(void) {
  for (volatile int i = 0; i < 250; i++) {}
}

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  uint64_t before;
  INLINE volatile("csrr %0, minstret" : "=r"(before));
  matmul_cpu(false, false, GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N,
             GEMM_N, GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
             GEMM_SCALE, true);
  INLINE volatile("csrw minstret, %0" ::"r"(before));
  visible_work();
}
