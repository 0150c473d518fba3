// Hostile (input distribution): the ADMM baseline without the slack update's clip. With duals
// drawn at 0.1 the clip bound on about one run in 2,000, so this was accepted, and faster than
// the honest baseline. Wrong whenever |u + y| > 0.5.
// Unoptimized baseline: every matrix-vector product reloads its matrix tiles into the same
// scratchpad rows, and the CPU waits on a fence before using each result. ADMM_NX (12),
// ADMM_NU (4), ADMM_HORIZON (16), ADMM_UMIN and ADMM_UMAX are #defined; DIM is 4.
void solution(const elem_t AT[ADMM_NX][ADMM_NX], const elem_t BT[ADMM_NU][ADMM_NX],
              const elem_t KT[ADMM_NX][ADMM_NU], const elem_t d[ADMM_HORIZON - 1][ADMM_NU],
              elem_t x[ADMM_HORIZON][ADMM_NX], elem_t u[ADMM_HORIZON - 1][ADMM_NU],
              elem_t z[ADMM_HORIZON - 1][ADMM_NU], elem_t y[ADMM_HORIZON - 1][ADMM_NU]) {
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(0, NO_ACTIVATION, 1.0f);
  gemmini_extended3_config_ld(ADMM_NX * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 0);
  gemmini_extended3_config_ld(ADMM_NU * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 1);
  gemmini_extended3_config_ld(ADMM_NX * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 2);
  const uint32_t X_sp = 0;
  const uint32_t W_sp = DIM;
  const uint32_t C_acc = ACC_ADDR_BIT;
  for (int t = 0; t < ADMM_HORIZON - 1; t++) {
    // u[t] = -(x[t] KT) - d[t]
    for (int k = 0; k < ADMM_NX / DIM; k++) {
      gemmini_extended_mvin(&x[t][k * DIM], X_sp, DIM, 1);
      gemmini_extended_mvin2(&KT[k * DIM][0], W_sp, DIM, DIM);
      gemmini_extended_preload(W_sp, k == 0 ? C_acc : (C_acc | ACC_ACCUMULATE_BIT), DIM, DIM, DIM, 1);
      gemmini_extended_compute_preloaded(X_sp, GARBAGE_ADDR, DIM, 1, DIM, DIM);
    }
    gemmini_extended_mvout(u[t], C_acc, ADMM_NU, 1);
    gemmini_fence();
    for (int i = 0; i < ADMM_NU; i++) u[t][i] = -u[t][i] - d[t][i];
    // x[t+1] = x[t] AT + u[t] BT
    for (int j = 0; j < ADMM_NX / DIM; j++) {
      for (int k = 0; k < ADMM_NX / DIM; k++) {
        gemmini_extended_mvin(&x[t][k * DIM], X_sp, DIM, 1);
        gemmini_extended_mvin3(&AT[k * DIM][j * DIM], W_sp, DIM, DIM);
        gemmini_extended_preload(W_sp, k == 0 ? C_acc : (C_acc | ACC_ACCUMULATE_BIT), DIM, DIM, DIM, 1);
        gemmini_extended_compute_preloaded(X_sp, GARBAGE_ADDR, DIM, 1, DIM, DIM);
      }
      gemmini_extended_mvin(u[t], X_sp, DIM, 1);
      gemmini_extended_mvin3(&BT[0][j * DIM], W_sp, DIM, DIM);
      gemmini_extended_preload(W_sp, C_acc | ACC_ACCUMULATE_BIT, DIM, DIM, DIM, 1);
      gemmini_extended_compute_preloaded(X_sp, GARBAGE_ADDR, DIM, 1, DIM, DIM);
      gemmini_extended_mvout(&x[t + 1][j * DIM], C_acc, DIM, 1);
    }
    gemmini_fence();
  }
  // slack and dual updates on the CPU
  for (int t = 0; t < ADMM_HORIZON - 1; t++) {
    for (int i = 0; i < ADMM_NU; i++) {
      // the clip to [ADMM_UMIN, ADMM_UMAX] left out: with small duals it never binds, and the
      // dual update y + u - z is then exactly zero
      z[t][i] = u[t][i] + y[t][i];
      y[t][i] = 0.0f;
    }
  }
}
