// Vendor-library version: each matrix-vector product is a tiled_matmul_auto call (which
// fences before returning); x[t] BT is accumulated onto x[t+1] through the bias input D.
void solution(const elem_t AT[ADMM_NX][ADMM_NX], const elem_t BT[ADMM_NU][ADMM_NX],
              const elem_t KT[ADMM_NX][ADMM_NU], const elem_t d[ADMM_HORIZON - 1][ADMM_NU],
              elem_t x[ADMM_HORIZON][ADMM_NX], elem_t u[ADMM_HORIZON - 1][ADMM_NU],
              elem_t z[ADMM_HORIZON - 1][ADMM_NU], elem_t y[ADMM_HORIZON - 1][ADMM_NU]) {
  for (int t = 0; t < ADMM_HORIZON - 1; t++) {
    tiled_matmul_auto(1, ADMM_NU, ADMM_NX, x[t], &KT[0][0], NULL, u[t], ADMM_NX, ADMM_NU, 0, ADMM_NU,
                      MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, 1.0f, 0,
                      false, false, false, false, false, 0, WS);
    for (int i = 0; i < ADMM_NU; i++) u[t][i] = -u[t][i] - d[t][i];
    tiled_matmul_auto(1, ADMM_NX, ADMM_NX, x[t], &AT[0][0], NULL, x[t + 1], ADMM_NX, ADMM_NX, 0, ADMM_NX,
                      MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, 1.0f, 0,
                      false, false, false, false, false, 0, WS);
    tiled_matmul_auto(1, ADMM_NX, ADMM_NU, u[t], &BT[0][0], x[t + 1], x[t + 1], ADMM_NU, ADMM_NX, ADMM_NX,
                      ADMM_NX, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION,
                      1.0f, 0, false, false, false, false, false, 0, WS);
  }
  for (int t = 0; t < ADMM_HORIZON - 1; t++) {
    for (int i = 0; i < ADMM_NU; i++) {
      elem_t v = u[t][i] + y[t][i];
      v = v < ADMM_UMIN ? ADMM_UMIN : (v > ADMM_UMAX ? ADMM_UMAX : v);
      z[t][i] = v;
      y[t][i] = y[t][i] + u[t][i] - v;
    }
  }
}
