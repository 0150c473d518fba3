#include <riscv_vector.h>

/* Bug: always loads and stores a full register, running past the end of the buffers. */
void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  size_t vlmax = __riscv_vsetvlmax_e32m1();
  for (size_t i = 0; i < n; i += vlmax) {
    vfloat32m1_t va = __riscv_vle32_v_f32m1(a + i, vlmax);
    vfloat32m1_t vb = __riscv_vle32_v_f32m1(b + i, vlmax);
    __riscv_vse32_v_f32m1(c + i, __riscv_vfadd_vv_f32m1(va, vb, vlmax), vlmax);
  }
}
