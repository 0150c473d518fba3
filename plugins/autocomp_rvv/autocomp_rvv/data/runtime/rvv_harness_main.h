/* rvv_harness_main.h: the harness entry point, included at the end of a problem harness.
 *
 * Linux:      prog check SEED        run every case in h_cases, print "PASS <n>" or "FAIL ..."
 *             prog bench SEED REPS   run h_bench REPS times, verify, print rdcycle/rdinstret minima
 * Bare metal: one run of h_bench between two minstret reads; prints "INSTRET <n>".
 */
#ifndef RVV_HARNESS_MAIN_H
#define RVV_HARNESS_MAIN_H

#define H_NCASES (sizeof h_cases / sizeof h_cases[0])

#ifdef RVV_BAREMETAL
int main(void) {
  h_seed(1);
  h_setup(h_bench, 1);
  h_roi_begin();
  h_call();
  h_roi_end();
  h_puts("INSTRET ");
  h_putu(h_roi_instret);
  h_puts("\n");
  return 0;
}
#else
static void h_describe(const size_t *shape, int index) {
  int n = index >= 0 ? snprintf(h_case_desc, sizeof h_case_desc, "case %d (", index)
                     : snprintf(h_case_desc, sizeof h_case_desc, "benchmark (");
  for (int d = 0; d < H_DIMS; d++)
    n += snprintf(h_case_desc + n, sizeof h_case_desc - n, "%s%s=%zu", d ? ", " : "", h_dim_names[d], shape[d]);
  snprintf(h_case_desc + n, sizeof h_case_desc - n, ")");
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  h_install_handlers();
  if (argc < 3) { printf("usage: %s check|bench SEED [REPS]\n", argv[0]); return 64; }
  uint64_t seed = strtoull(argv[2], NULL, 10);
  if (strcmp(argv[1], "check") == 0) {
    for (size_t i = 0; i < H_NCASES; i++) {
      h_describe(h_cases[i], (int)i);
      h_seed(seed + i);
      h_setup(h_cases[i], seed + i);
      h_call();
      if (!h_canaries_ok() || !h_verify()) return 1;
      h_reset();
    }
    printf("PASS %zu\n", (size_t)H_NCASES);
    return 0;
  }
  if (strcmp(argv[1], "bench") == 0) {
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    uint64_t best_c = UINT64_MAX, best_i = UINT64_MAX;
    h_describe(h_bench, -1);
    h_seed(seed);
    h_setup(h_bench, seed);
    for (int r = 0; r < reps; r++) {
      h_roi_begin();
      h_call();
      h_roi_end();
      if (h_roi_cycles < best_c) best_c = h_roi_cycles;
      if (h_roi_instret < best_i) best_i = h_roi_instret;
    }
    if (!h_canaries_ok() || !h_verify()) return 1;
    printf("BENCH cycles=%llu instret=%llu reps=%d\n", (unsigned long long)best_c,
           (unsigned long long)best_i, reps);
    return 0;
  }
  printf("unknown mode %s\n", argv[1]);
  return 64;
}
#endif

#endif /* RVV_HARNESS_MAIN_H */
