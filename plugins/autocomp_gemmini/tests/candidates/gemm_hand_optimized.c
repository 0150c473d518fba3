// Hand-optimized GEMM: a block of TI row-tiles of A stays in the scratchpad (block mvins,
// each tile at its own rows); each B tile is loaded once per block and its weights are reused
// TI times with compute_accumulated; B tiles and C accumulators are double-buffered across j
// so loads and stores overlap computes.
static int pick_ti(void) {
  const int mt = GEMM_M / DIM, kt = GEMM_K / DIM;
  int best = 1;
  for (int ti = 1; ti <= mt; ti++)
    if (mt % ti == 0 && ti * kt * DIM <= SPAD_ROWS / 2 && 2 * ti * DIM <= ACC_ROWS) best = ti;
  return best;
}

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  const int KT = GEMM_K / DIM, NT = GEMM_N / DIM, MT = GEMM_M / DIM;
  const int TI = pick_ti();
  const uint32_t B_base = SPAD_ROWS / 2;
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(GEMM_N * sizeof(elem_t), GEMM_ACT, GEMM_SCALE);
  gemmini_extended3_config_ld(GEMM_K * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 0);
  gemmini_extended3_config_ld(GEMM_N * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 1);
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, DIM, 1, 2);
  for (int i0 = 0; i0 < MT; i0 += TI) {
    for (int i = 0; i < TI; i++)
      for (int k = 0; k < KT; k += MAX_BLOCK_LEN) {
        const int blocks = KT - k < MAX_BLOCK_LEN ? KT - k : MAX_BLOCK_LEN;
        gemmini_extended_mvin(&A[(i0 + i) * DIM][k * DIM], (i * KT + k) * DIM, blocks * DIM, DIM);
      }
    for (int j = 0; j < NT; j++) {
      const uint32_t c_base = ACC_ADDR_BIT | ((j % 2) * TI * DIM);
      for (int i = 0; i < TI; i++)
        gemmini_extended_mvin3(&bias[j * DIM], c_base + i * DIM, DIM, DIM);
      for (int k = 0; k < KT; k++) {
        const uint32_t b_sp = B_base + ((j % 2) * KT + k) * DIM;
        gemmini_extended_mvin2(&B[k * DIM][j * DIM], b_sp, DIM, DIM);
        for (int i = 0; i < TI; i++) {
          const uint32_t a_sp = (i * KT + k) * DIM;
          gemmini_preload(i == 0 ? b_sp : GARBAGE_ADDR, (c_base + i * DIM) | ACC_ACCUMULATE_BIT);
          if (i == 0) gemmini_compute_preloaded(a_sp, GARBAGE_ADDR);
          else gemmini_compute_accumulated(a_sp, GARBAGE_ADDR);
        }
      }
      for (int i = 0; i < TI; i++)
        gemmini_mvout(&C[(i0 + i) * DIM][j * DIM], c_base + i * DIM);
    }
  }
  gemmini_fence();
}
