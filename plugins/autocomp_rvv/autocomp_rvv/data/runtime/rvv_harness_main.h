/* rvv_harness_main.h: the harness entry point, included at the end of a problem harness.
 *
 * Linux:      prog check SEED        run every case in h_cases, print "PASS <n>" or "FAIL ..."
 *             prog bench SEED REPS   run h_bench REPS times, each on fresh inputs (seed SEED + rep)
 *                                    in fresh buffers, verify every one, print rdcycle/rdinstret minima
 *             prog verify SEED FILE  set up h_bench with SEED, overlay the outputs recorded in FILE
 *                                    (per output: its bytes, then one 0/1 byte each: written or not),
 *                                    verify without calling the kernel
 * Bare metal: one run of h_bench with the seed the linker put in h_bm_seed, between two minstret
 *             reads; prints the buffer layout before it and "INSTRET <n>" after it.
 */
#ifndef RVV_HARNESS_MAIN_H
#define RVV_HARNESS_MAIN_H

#define H_NCASES (sizeof h_cases / sizeof h_cases[0])

#ifdef RVV_BAREMETAL
extern const volatile uint64_t h_bm_seed; /* link.ld: a fresh value for every evaluation */

static void h_call_timed(void) { h_call(); }

int main(void) {
  uint64_t seed = h_bm_seed, sp;
  h_seed(seed);
  h_setup(h_bench, seed);
  __asm__ volatile("mv %0, sp" : "=r"(sp));
  h_print_layout(sp - H_TIMED_FRAME);
  uint64_t instret = h_timed(h_call_timed);
  h_puts("INSTRET ");
  h_putu(instret);
  h_puts("\n");
  h_flush();
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
    /* every timed call is checked, on inputs it has not seen: caching gains nothing */
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    uint64_t best_c = UINT64_MAX, best_i = UINT64_MAX;
    h_describe(h_bench, -1);
    for (int r = 0; r < reps; r++) {
      h_seed(seed + (uint64_t)r);
      h_setup(h_bench, seed + (uint64_t)r);
      h_roi_begin();
      h_call();
      h_roi_end();
      if (h_roi_cycles < best_c) best_c = h_roi_cycles;
      if (h_roi_instret < best_i) best_i = h_roi_instret;
      if (!h_canaries_ok() || !h_verify()) return 1;
      h_reset();
    }
    printf("BENCH cycles=%llu instret=%llu reps=%d\n", (unsigned long long)best_c,
           (unsigned long long)best_i, reps);
    return 0;
  }
  if (strcmp(argv[1], "verify") == 0 && argc > 3) {
    h_describe(h_bench, -1);
    h_seed(seed);
    h_setup(h_bench, seed);
    FILE *f = fopen(argv[3], "rb");
    if (!f) { printf("HARNESS ERROR: cannot open %s\n", argv[3]); return 70; }
    for (int o = 0; o < h_nouts; o++) {
      unsigned char *dst = h_outs[o].addr, *got = malloc(h_outs[o].bytes + 1), *mask = malloc(h_outs[o].bytes + 1);
      if (fread(got, 1, h_outs[o].bytes, f) != h_outs[o].bytes || fread(mask, 1, h_outs[o].bytes, f) != h_outs[o].bytes) {
        printf("HARNESS ERROR: %s holds too few bytes for `%s`\n", argv[3], h_outs[o].name);
        return 70;
      }
      for (size_t i = 0; i < h_outs[o].bytes; i++) if (mask[i]) dst[i] = got[i];
      free(got);
      free(mask);
    }
    if (fgetc(f) != EOF) { printf("HARNESS ERROR: %s holds more than the outputs\n", argv[3]); return 70; }
    fclose(f);
    if (!h_verify()) return 1;
    printf("PASS 1\n");
    return 0;
  }
  printf("unknown mode %s\n", argv[1]);
  return 64;
}
#endif

#endif /* RVV_HARNESS_MAIN_H */
