/* Harness support shared by every problem: seeded inputs and the measured region.
 * This file and harness_*.c are trusted code, compiled apart from the candidate. */
#ifndef AUTOCOMP_GEMMINI_HARNESS_H
#define AUTOCOMP_GEMMINI_HARNESS_H
#include <stddef.h>
#include <stdint.h>
#include "gemmini.h"

/* Counter-based hash: element i of stream `seed` (mirrored in autocomp_gemmini/catalog.py). */
static inline uint32_t harness_hash(uint32_t seed, uint32_t i) {
  uint32_t x = i * 0x9E3779B1u + seed * 0x85EBCA77u + 0x165667B1u;
  x ^= x >> 15; x *= 0x2C1B3C6Du; x ^= x >> 12; x *= 0x297A2D39u; x ^= x >> 15;
  return x;
}

/* What changes with every evaluation, kept out of the compiled harness so that its object can be
 * built once and reused: the evaluator writes the values into the linked program (elf.py:
 * write_symbol) over the placeholder, which it checks is there. */
typedef struct {
  uint64_t nonce; /* external mode: the secret that tags the report lines */
  uint32_t seed;  /* the inputs' stream */
  uint32_t unused;
} harness_params_t;
extern const volatile harness_params_t harness_params;
/* mirrored in autocomp_gemmini/evaluate.py: PARAMS_PLACEHOLDER */
#define HARNESS_PARAMS_PLACEHOLDER 0x736d61726170ull, 0x746f6e6e, 0x6c6c6966

void harness_fill_elem(elem_t *dst, size_t n, uint32_t seed);
void harness_fill_acc(acc_t *dst, size_t n, uint32_t seed);
void harness_fill_bytes(void *dst, size_t n, uint8_t value);

/* Output buffers the model dumps at the end of the measured region: {count, (addr, bytes)*}. */
typedef struct { uint64_t count; struct { uint64_t addr, bytes; } out[4]; } harness_outputs_t;

/* Guard bytes around each output array: writes past an array's ends show up in them. */
#define HARNESS_GUARD_BYTES 4096
#define HARNESS_GUARD_VALUE 0xA5
void harness_add_output(harness_outputs_t *outputs, const void *addr, size_t bytes);
void harness_add_guards(harness_outputs_t *outputs, void *pre, void *post);

/* Buffers solution() reads or writes: placed in the user data (link.ld); everything else of the
 * harness is machine-mode memory the candidate cannot touch. */
#define HARNESS_SHARED __attribute__((section(".bss.user_shared"), aligned(64)))

/* Calls fn(args[0], ..., args[7]) in the user mode, on the user stack (runtime/crt.S); returns
 * when fn does. */
void harness_run_user(const void *fn, const uint64_t args[8]);
#define HARNESS_ARG(p) ((uint64_t)(uintptr_t)(p))

void harness_roi_begin(void);
void harness_roi_end(const harness_outputs_t *outputs);
int harness_report(const char *name, const elem_t *got, const elem_t *want, size_t n, double tol);
#endif
