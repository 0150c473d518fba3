/* ADMM harness (fp32): one TinyMPC-style iteration. Compiled with -DADMM_NX, ADMM_NU,
 * ADMM_HORIZON, ADMM_UMIN, ADMM_UMAX. Inputs mirror autocomp_gemmini/admm.py. */
#include "harness.h"
#include "runtime.h"

#define NX ADMM_NX
#define NU ADMM_NU
#define NH ADMM_HORIZON

static elem_t AT[NX][NX] HARNESS_SHARED;
static elem_t BT[NU][NX] HARNESS_SHARED;
static elem_t KT[NX][NU] HARNESS_SHARED;
static elem_t d[NH - 1][NU] HARNESS_SHARED;
static struct {
  uint8_t pre[HARNESS_GUARD_BYTES];
  elem_t x[NH][NX];
  elem_t u[NH - 1][NU];
  elem_t z[NH - 1][NU];
  elem_t y[NH - 1][NU];
  uint8_t post[HARNESS_GUARD_BYTES];
} out HARNESS_SHARED;
static elem_t tmp[NX * NX] __attribute__((aligned(64)));
#ifndef GEMMINI_MODEL
/* External mode: the harness checks the result itself against this CPU reference. */
static struct { elem_t x[NH][NX]; elem_t u[NH - 1][NU]; elem_t z[NH - 1][NU]; elem_t y[NH - 1][NU]; } gold;

static void reference(void) {
  for (int t = 0; t < NH - 1; t++) {
    for (int j = 0; j < NU; j++) {
      elem_t s = 0;
      for (int k = 0; k < NX; k++) s += gold.x[t][k] * KT[k][j];
      gold.u[t][j] = -s - d[t][j];
    }
    for (int j = 0; j < NX; j++) {
      elem_t s = 0;
      for (int k = 0; k < NX; k++) s += gold.x[t][k] * AT[k][j];
      for (int k = 0; k < NU; k++) s += gold.u[t][k] * BT[k][j];
      gold.x[t + 1][j] = s;
    }
  }
  for (int t = 0; t < NH - 1; t++)
    for (int i = 0; i < NU; i++) {
      elem_t v = gold.u[t][i] + gold.y[t][i];
      v = v < ADMM_UMIN ? ADMM_UMIN : (v > ADMM_UMAX ? ADMM_UMAX : v);
      gold.z[t][i] = v;
      gold.y[t][i] = gold.y[t][i] + gold.u[t][i] - v;
    }
}
#endif
static harness_outputs_t outputs;

void solution(const elem_t AT[NX][NX], const elem_t BT[NU][NX], const elem_t KT[NX][NU], const elem_t d[NH - 1][NU],
              elem_t x[NH][NX], elem_t u[NH - 1][NU], elem_t z[NH - 1][NU], elem_t y[NH - 1][NU]);

static void scaled(elem_t *dst, size_t n, uint32_t seed, float s) {
  harness_fill_elem(tmp, n, seed);
  for (size_t i = 0; i < n; i++) dst[i] = s * tmp[i];
}

int main(void) {
  const uint32_t seed = harness_params.seed;
  scaled(&AT[0][0], NX * NX, seed * 8 + 1, 0.02f);
  for (int i = 0; i < NX; i++) AT[i][i] += 0.9f;
  scaled(&BT[0][0], NU * NX, seed * 8 + 2, 0.1f);
  scaled(&KT[0][0], NX * NU, seed * 8 + 3, 0.1f);
  harness_fill_elem(out.x[0], NX, seed * 8 + 4);  /* x[0] is the initial state */
  scaled(&d[0][0], (NH - 1) * NU, seed * 8 + 5, 0.1f);
  scaled(&out.y[0][0], (NH - 1) * NU, seed * 8 + 6, 0.1f);  /* y holds the duals, updated in place */
  /* admm.py dual_offsets: the clip binds on both sides at every seed */
  for (int k = 0; k < (NH - 1) * NU; k++) (&out.y[0][0])[k] += k % 4 == 1 ? 1.0f : (k % 4 == 3 ? -1.0f : 0.0f);
  for (int t = 1; t < NH; t++) for (int i = 0; i < NX; i++) out.x[t][i] = 12345.0f;
  harness_add_output(&outputs, out.x, sizeof(out) - 2 * HARNESS_GUARD_BYTES);
  harness_add_guards(&outputs, out.pre, out.post);
#ifndef GEMMINI_MODEL
  memcpy(gold.x[0], out.x[0], sizeof(gold.x[0]));
  memcpy(gold.y, out.y, sizeof(gold.y));
#endif
  harness_roi_begin();
  {
    const uint64_t args[8] = {HARNESS_ARG(AT), HARNESS_ARG(BT), HARNESS_ARG(KT), HARNESS_ARG(d), HARNESS_ARG(out.x), HARNESS_ARG(out.u), HARNESS_ARG(out.z), HARNESS_ARG(out.y)};
    harness_run_user((const void *)solution, args);
  }
  harness_roi_end(&outputs);
#ifndef GEMMINI_MODEL
  reference();
  return harness_report("admm", out.x[0], gold.x[0], sizeof(gold) / sizeof(elem_t), 1e-4);
#else
  return 0;
#endif
}
