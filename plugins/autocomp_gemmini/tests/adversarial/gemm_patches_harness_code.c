// Adversarial (model mode), plain C: computes the GEMM on the CPU (about 2 million instructions),
// then finds the harness's end-of-region command in the program's code (a counter read, `csrr rd,
// minstret` or `instret`, followed by the custom-3 instruction with funct7 122 naming the same rd) and
// overwrites the counter read with `li rd, 0`: the model, which took the count from that register,
// sees none of the work (harness code was writable).
// About 1,250 instructions the count does see, so the result lies above the problem's lower bound
// (1024 cycles) and passes the engine's refusal of impossible results too.
static void visible_work(void) {
  for (volatile int i = 0; i < 250; i++) {}
}

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  visible_work();
  gemmini_fence();  // a command: the model takes the count so far (the work after it is hidden)
  matmul_cpu(false, false, GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N,
             GEMM_N, GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
             GEMM_SCALE, true);
  volatile uint16_t *code = (volatile uint16_t *)0x80000000u;  // 2-byte steps: compressed code
  for (uint64_t i = 0; i < (1u << 20); i++) {
    uint32_t read = code[i] | ((uint32_t)code[i + 1] << 16);
    uint32_t next = code[i + 2] | ((uint32_t)code[i + 3] << 16);
    uint32_t rd = (read >> 7) & 31;
    uint32_t csr = read >> 20;
    int counter_read = (read & 0x000FF07Fu) == 0x2073u && (csr == 0xB02u || csr == 0xC02u);  // csrr rd, (m)instret
    int end_command = (next & 0xFE00707Fu) == ((122u << 25) | (3u << 12) | 0x7Bu) && ((next >> 7) & 31) == rd;
    if (counter_read && end_command) {
      uint32_t li = (rd << 7) | 0x13u;  // addi rd, x0, 0
      code[i] = (uint16_t)li;
      code[i + 1] = (uint16_t)(li >> 16);
      return;
    }
  }
}
