#include <riscv_vector.h>

/* Bug: vl is requested for LMUL=4 but the operations use LMUL=1 registers, so each
 * instruction handles at most VLMAX(m1) elements while the loop advances by vl. */
void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m4(n);
    vfloat32m1_t va = __riscv_vle32_v_f32m1(a, vl);
    vfloat32m1_t vb = __riscv_vle32_v_f32m1(b, vl);
    __riscv_vse32_v_f32m1(c, __riscv_vfadd_vv_f32m1(va, vb, vl), vl);
  }
}
