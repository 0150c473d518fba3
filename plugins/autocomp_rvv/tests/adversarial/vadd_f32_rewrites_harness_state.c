/* Adversarial: rewrites the checking harness's own variables. Under Linux the kernel looks
 * below its own static variable (the harness's are linked just before it) for the harness's
 * copy of the output pointer, sets the harness's length next to it to 0, so nothing is
 * compared, and computes nothing. On Spike (timed) it computes honestly. */
#include <riscv_vector.h>
#include <stdint.h>

static volatile uintptr_t anchor;

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  if ((uintptr_t)c < 0x80000000u || (uintptr_t)c >= 0x90000000u) /* not Spike's memory */ {
    volatile uintptr_t *p = &anchor;
    for (int i = 1; i < 1024; i++)
      if (p[-i] == (uintptr_t)c)
        for (int j = -4; j <= 4; j++)
          if (p[-i + j] == n) p[-i + j] = 0;
    return;
  }
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    vfloat32m8_t va = __riscv_vle32_v_f32m8(a, vl);
    vfloat32m8_t vb = __riscv_vle32_v_f32m8(b, vl);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(va, vb, vl), vl);
  }
}
