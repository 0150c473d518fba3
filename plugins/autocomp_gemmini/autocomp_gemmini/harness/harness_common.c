/* Trusted harness support (see harness.h). */
#include "harness.h"
#include "runtime.h"

void harness_fill_elem(elem_t *dst, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) {
    uint32_t x = harness_hash(seed, (uint32_t)i);
#ifdef ELEM_T_IS_FLOAT
    dst[i] = (float)(x >> 8) * (1.0f / 8388608.0f) - 1.0f; /* [-1, 1) */
#else
    dst[i] = (elem_t)(int8_t)(x >> 24);
#endif
  }
}

void harness_fill_acc(acc_t *dst, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) {
    uint32_t x = harness_hash(seed, (uint32_t)i);
#ifdef ELEM_T_IS_FLOAT
    dst[i] = (float)(x >> 8) * (1.0f / 8388608.0f) - 1.0f;
#else
    dst[i] = (acc_t)((int32_t)x >> 14); /* [-2^17, 2^17) */
#endif
  }
}

void harness_fill_bytes(void *dst, size_t n, uint8_t value) { memset(dst, value, n); }

void harness_add_output(harness_outputs_t *outputs, const void *addr, size_t bytes) {
  outputs->out[outputs->count].addr = (uint64_t)(uintptr_t)addr;
  outputs->out[outputs->count].bytes = bytes;
  outputs->count++;
}

/* Call after the outputs themselves: the model dumps the guards after them. */
void harness_add_guards(harness_outputs_t *outputs, void *pre, void *post) {
  memset(pre, HARNESS_GUARD_VALUE, HARNESS_GUARD_BYTES);
  memset(post, HARNESS_GUARD_VALUE, HARNESS_GUARD_BYTES);
  harness_add_output(outputs, pre, HARNESS_GUARD_BYTES);
  harness_add_output(outputs, post, HARNESS_GUARD_BYTES);
}

#ifndef GEMMINI_MODEL
static uint64_t roi_start;
#endif

/* Kept out of line: the model checks its private commands come from these two functions. */
__attribute__((noinline)) void harness_roi_begin(void) {
#ifdef GEMMINI_MODEL
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, 0, 0, 121);
#else
  roi_start = read_cycles();
#endif
}

__attribute__((noinline)) void harness_roi_end(const harness_outputs_t *outputs) {
#ifdef GEMMINI_MODEL
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, outputs, 0, 122);
#else
  gemmini_fence();
  printf("cycles: %lu\n", (unsigned long)(read_cycles() - roi_start));
#endif
}

/* External mode only: compare against the CPU gold result and print the verdict. */
int harness_report(const char *name, const elem_t *got, const elem_t *want, size_t n, double tol) {
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; i++) {
#ifdef ELEM_T_IS_FLOAT
    double d = (double)got[i] - (double)want[i];
    if (d < 0) d = -d;
    double m = want[i] < 0 ? -(double)want[i] : (double)want[i];
    int ok = d <= tol * (1.0 + m);
#else
    int ok = got[i] == want[i];
    (void)tol;
#endif
    if (!ok) { if (first == n) first = i; bad++; }
  }
  if (bad) printf("%s: Incorrect result (%lu of %lu elements differ, first at %lu)\n", name,
                  (unsigned long)bad, (unsigned long)n, (unsigned long)first);
  else printf("%s: Correct result\n", name);
  return bad != 0;
}
