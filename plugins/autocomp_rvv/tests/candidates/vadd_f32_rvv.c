#include <riscv_vector.h>

/* Strip-mined with LMUL=8: one vsetvl per chunk handles the tail. */
void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    vfloat32m8_t va = __riscv_vle32_v_f32m8(a, vl);
    vfloat32m8_t vb = __riscv_vle32_v_f32m8(b, vl);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(va, vb, vl), vl);
  }
}
