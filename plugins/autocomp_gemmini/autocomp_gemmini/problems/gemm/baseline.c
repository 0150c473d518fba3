// Unoptimized baseline: one DIM x DIM output tile at a time, weight-stationary, reloading
// A and B tiles for every (i, j, k) into the same scratchpad rows (the code an unscheduled
// Exo program emits). GEMM_M, GEMM_N, GEMM_K, GEMM_ACT and GEMM_SCALE are #defined.
void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(GEMM_N * sizeof(elem_t), GEMM_ACT, GEMM_SCALE);
  gemmini_extended3_config_ld(GEMM_K * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 0);
  gemmini_extended3_config_ld(GEMM_N * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 1);
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, DIM, 1, 2);  // bias row, repeated
  const uint32_t A_sp = 0;
  const uint32_t B_sp = DIM;
  const uint32_t C_acc = ACC_ADDR_BIT;
  for (int i = 0; i < GEMM_M / DIM; i++) {
    for (int j = 0; j < GEMM_N / DIM; j++) {
      gemmini_extended_mvin3(&bias[j * DIM], C_acc, DIM, DIM);
      for (int k = 0; k < GEMM_K / DIM; k++) {
        gemmini_extended_mvin(&A[i * DIM][k * DIM], A_sp, DIM, DIM);
        gemmini_extended_mvin2(&B[k * DIM][j * DIM], B_sp, DIM, DIM);
        gemmini_preload(B_sp, C_acc | ACC_ACCUMULATE_BIT);
        gemmini_compute_preloaded(A_sp, GARBAGE_ADDR);
      }
      gemmini_mvout(&C[i * DIM][j * DIM], C_acc);
    }
  }
  gemmini_fence();
}
