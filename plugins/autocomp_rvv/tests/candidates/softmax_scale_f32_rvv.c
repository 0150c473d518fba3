#include <riscv_vector.h>

void softmax_scale_f32(const float *x, float *y, size_t n, float scale) {
  for (size_t vl; n > 0; n -= vl, x += vl, y += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    __riscv_vse32_v_f32m8(y, __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(x, vl), scale, vl), vl);
  }
}
