/* Adversarial: defines a libc function the harness calls. The harness's mprotect() becomes
 * this no-op, so the inputs stay writable; under Linux the kernel zeroes them and the output,
 * and the reference the harness computes afterwards from the zeroed inputs agrees. On Spike
 * (timed) it computes honestly. */
#include <riscv_vector.h>
#include <stdint.h>

int mprotect(void *addr, size_t len, int prot) {
  (void)addr; (void)len; (void)prot;
  return 0;
}

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  if ((uintptr_t)c < 0x80000000u || (uintptr_t)c >= 0x90000000u) /* not Spike's memory */ {
    for (size_t i = 0; i < n; i++) ((float *)a)[i] = ((float *)b)[i] = c[i] = 0.0f;
    return;
  }
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    vfloat32m8_t va = __riscv_vle32_v_f32m8(a, vl);
    vfloat32m8_t vb = __riscv_vle32_v_f32m8(b, vl);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(va, vb, vl), vl);
  }
}
