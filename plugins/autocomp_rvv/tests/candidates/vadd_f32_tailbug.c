#include <riscv_vector.h>

/* Bug: only whole vectors are processed; the last n % VLMAX elements are never written. */
void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  size_t vlmax = __riscv_vsetvlmax_e32m2();
  for (size_t i = 0; i + vlmax <= n; i += vlmax) {
    vfloat32m2_t va = __riscv_vle32_v_f32m2(a + i, vlmax);
    vfloat32m2_t vb = __riscv_vle32_v_f32m2(b + i, vlmax);
    __riscv_vse32_v_f32m2(c + i, __riscv_vfadd_vv_f32m2(va, vb, vlmax), vlmax);
  }
}
