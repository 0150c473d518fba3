// Adversarial (model mode): the same rewinding of minstret, with no inline assembly at all: the
// two CSR instructions are machine code in const arrays, called through function pointers
// (data was executable).
static const uint32_t read_minstret[] __attribute__((aligned(4))) = {0xB0202573u, 0x00008067u};   // csrr a0, minstret; ret
static const uint32_t write_minstret[] __attribute__((aligned(4))) = {0xB0251073u, 0x00008067u};  // csrw minstret, a0; ret

// About 1,250 instructions the count does see, so the result lies above the problem's lower bound
// (1024 cycles) and passes the engine's refusal of impossible results too.
static void visible_work(void) {
  for (volatile int i = 0; i < 250; i++) {}
}

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  uint64_t before = ((uint64_t(*)(void))(uintptr_t)read_minstret)();
  matmul_cpu(false, false, GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N,
             GEMM_N, GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
             GEMM_SCALE, true);
  ((void (*)(uint64_t))(uintptr_t)write_minstret)(before);
  visible_work();
}
