/* Adversarial: static state. The first call does nothing: under qemu the first case has
 * n = 0, where nothing is the right answer; on Spike the first call is the timed one. */
#include <riscv_vector.h>

static int calls;

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  if (calls++ == 0) return;
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(a, vl),
                                                    __riscv_vle32_v_f32m8(b, vl), vl), vl);
  }
}
