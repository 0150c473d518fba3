/* rvv_harness_main.h: the harness entry point, included at the end of a problem harness.
 *
 * Runner:     prog SEED              (the candidate's process; no libc) for every case i of h_cases:
 *                                    set up with SEED + i, print its layout ("CASE i DESC", then
 *                                    "BUF NAME DATA BYTES MAP MAPLEN SEALED"), call the kernel, append
 *                                    each output, its lead (canary) bytes first, to RUNNER_OUTPUTS
 * Verifier:   prog verify SEED TIMED_SEED TIMED_FILE [LABEL FILE...]   (calls no kernel)
 *                                    for every runner FILE, every case set up again from SEED + i,
 *                                    lead bytes and outputs judged; then h_bench set up with
 *                                    TIMED_SEED, the outputs recorded in TIMED_FILE overlaid (per
 *                                    output: its bytes, then one 0/1 byte each: written or not), judged
 *             prog bench SEED REPS   (board mode, linked with the candidate) run h_bench REPS times,
 *                                    each on fresh inputs (seed SEED + rep) in fresh buffers, verify
 *                                    every one, print rdcycle/rdinstret minima
 * The verifier prints "PASS" or "FAIL ...", and "BADFILE ..." when a runner's file does not
 * hold exactly the cases' outputs.
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
#elif defined(RVV_RUNNER)
#define RUNNER_OUTPUTS "outputs.bin"
static char h_text[1024];
static size_t h_text_len;
static void h_puts(const char *s) {
  while (*s && h_text_len < sizeof h_text) h_text[h_text_len++] = *s++;
}
static void h_putu(uint64_t v) {
  char buf[24]; int i = 23; buf[i] = 0;
  do { buf[--i] = (char)('0' + v % 10); v /= 10; } while (v);
  h_puts(buf + i);
}

/* argv[1]: the seed. The layout is printed before each call, so a fault can be named. */
static __attribute__((noreturn, used)) void h_runner(long argc, char **argv) {
  uint64_t seed = 0;
  for (const char *p = argc > 1 ? argv[1] : ""; *p >= '0' && *p <= '9'; p++) seed = seed * 10 + (uint64_t)(*p - '0');
  int fd = (int)h_syscall(56, -100 /* AT_FDCWD */, (long)RUNNER_OUTPUTS, 01 | 0100 | 01000 /* O_WRONLY|O_CREAT|O_TRUNC */, 0644, 0, 0);
  if (fd < 0) exit(70);
  for (size_t i = 0; i < H_NCASES; i++) {
    h_seed(seed + i);
    h_setup(h_cases[i], seed + i);
    h_text_len = 0;
    h_puts("CASE "); h_putu(i);
    for (int d = 0; d < H_DIMS; d++) { h_puts(d ? ", " : " ("); h_puts(h_dim_names[d]); h_puts("="); h_putu(h_cases[i][d]); }
    h_puts(")\n");
    for (int b = 0; b < h_nbufs; b++) {
      h_puts("BUF "); h_puts(h_bufs[b].name); h_puts(" "); h_putu((uintptr_t)h_bufs[b].data);
      h_puts(" "); h_putu(h_bufs[b].bytes); h_puts(" "); h_putu(h_bufs[b].elem); h_puts(" ");
      h_putu((uintptr_t)h_bufs[b].map); h_puts(" "); h_putu(h_bufs[b].map_len); h_puts(h_bufs[b].sealed ? " 1\n" : " 0\n");
    }
    h_write(1, h_text, h_text_len);
    h_call();
    for (int o = 0; o < h_nouts; o++)
      h_write(fd, (const char *)h_outs[o].addr - h_outs[o].lead, h_outs[o].lead + h_outs[o].bytes);
    h_reset();
  }
  exit(0);
}

/* Entry from the kernel: argc and argv on the stack. */
__asm__(".text\n.globl _start\n_start:\n"
        ".option push\n.option norelax\n  la gp, __global_pointer$\n.option pop\n"
        "  ld a0, 0(sp)\n  addi a1, sp, 8\n  andi sp, sp, -16\n  call h_runner\n");
#else
static void h_describe(const char *label, const size_t *shape, int index) {
  int n = snprintf(h_case_desc, sizeof h_case_desc, "%s%s", label, *label ? ": " : "");
  n += index >= 0 ? snprintf(h_case_desc + n, sizeof h_case_desc - n, "case %d (", index)
                  : snprintf(h_case_desc + n, sizeof h_case_desc - n, "benchmark (");
  for (int d = 0; d < H_DIMS; d++)
    n += snprintf(h_case_desc + n, sizeof h_case_desc - n, "%s%s=%zu", d ? ", " : "", h_dim_names[d], shape[d]);
  snprintf(h_case_desc + n, sizeof h_case_desc - n, ")");
}

/* One runner file: every case's outputs, each after its lead bytes, which must still hold the
 * canary (a write before the start of an output changes them). 0: wrong, 1: right, 2: the
 * file does not hold exactly the cases' outputs. */
static int h_check_runner_file(const char *label, const char *path, uint64_t seed) {
  FILE *f = fopen(path, "rb");
  if (!f) { printf("HARNESS ERROR: cannot open %s\n", path); exit(70); }
  int verdict = 1;
  for (size_t i = 0; i < H_NCASES && verdict == 1; i++) {
    h_describe(label, h_cases[i], (int)i);
    h_seed(seed + i);
    h_setup(h_cases[i], seed + i);
    for (int o = 0; o < h_nouts && verdict == 1; o++) {
      size_t lead = h_outs[o].lead, bytes = h_outs[o].bytes;
      unsigned char *got = malloc(lead + bytes + 1);
      if (fread(got, 1, lead + bytes, f) != lead + bytes) {
        printf("BADFILE %s: ends before the outputs of %s\n", label, h_case_desc);
        verdict = 2;
      } else {
        for (size_t k = 0; k < lead && verdict == 1; k++)
          if (got[k] != H_CANARY) {
            size_t elem = 1;
            for (int b = 0; b < h_nbufs; b++) if (h_bufs[b].data == h_outs[o].addr) elem = h_bufs[b].elem;
            h_fail("out-of-bounds write before the start of `%s` (element index -%zu)", h_outs[o].name,
                   (lead - k + elem - 1) / elem);
            verdict = 0;
          }
        memcpy(h_outs[o].addr, got + lead, bytes);
      }
      free(got);
    }
    if (verdict == 1 && !h_verify()) verdict = 0;
    h_reset();
  }
  if (verdict == 1 && fgetc(f) != EOF) { printf("BADFILE %s: holds more than the outputs\n", label); verdict = 2; }
  fclose(f);
  return verdict;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  h_install_handlers();
  if (argc < 3) { printf("usage: %s verify|bench SEED ...\n", argv[0]); return 64; }
  uint64_t seed = strtoull(argv[2], NULL, 10);
  if (strcmp(argv[1], "bench") == 0) {
    /* every timed call is checked, on inputs it has not seen: caching gains nothing */
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    uint64_t best_c = UINT64_MAX, best_i = UINT64_MAX;
    h_describe("", h_bench, -1);
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
  if (strcmp(argv[1], "verify") == 0 && argc > 4) {
    /* the runners' files first (their failures name a case and a VLEN), then the timed run */
    uint64_t timed_seed = strtoull(argv[3], NULL, 10);
    for (int a = 5; a + 1 < argc; a += 2) {
      int verdict = h_check_runner_file(argv[a], argv[a + 1], seed);
      if (verdict != 1) return verdict == 2 ? 2 : 1;
    }
    h_describe("", h_bench, -1);
    h_seed(timed_seed);
    h_setup(h_bench, timed_seed);
    FILE *f = fopen(argv[4], "rb");
    if (!f) { printf("HARNESS ERROR: cannot open %s\n", argv[4]); return 70; }
    for (int o = 0; o < h_nouts; o++) {
      unsigned char *dst = h_outs[o].addr, *got = malloc(h_outs[o].bytes + 1), *mask = malloc(h_outs[o].bytes + 1);
      if (fread(got, 1, h_outs[o].bytes, f) != h_outs[o].bytes || fread(mask, 1, h_outs[o].bytes, f) != h_outs[o].bytes) {
        printf("HARNESS ERROR: %s holds too few bytes for `%s`\n", argv[4], h_outs[o].name);
        return 70;
      }
      for (size_t i = 0; i < h_outs[o].bytes; i++) {
        if (mask[i]) dst[i] = got[i];
        else if (h_outs[o].scalar) {
          h_fail("the returned value `%s` was never written by the timed call", h_outs[o].name);
          return 1;
        }
      }
      free(got);
      free(mask);
    }
    if (fgetc(f) != EOF) { printf("HARNESS ERROR: %s holds more than the outputs\n", argv[4]); return 70; }
    fclose(f);
    if (!h_verify()) return 1;
    printf("PASS\n");
    return 0;
  }
  printf("unknown mode %s\n", argv[1]);
  return 64;
}
#endif

#endif /* RVV_HARNESS_MAIN_H */
