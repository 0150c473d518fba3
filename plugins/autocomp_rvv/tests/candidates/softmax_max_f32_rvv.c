#include <riscv_vector.h>

/* Element-wise running maximum in an LMUL=8 accumulator, one reduction at the end.
 * The tail-undisturbed vfmax keeps lanes past vl of the last chunk intact. */
float softmax_max_f32(const float *x, size_t n) {
  size_t vlmax = __riscv_vsetvlmax_e32m8();
  vfloat32m8_t acc = __riscv_vfmv_v_f_f32m8(x[0], vlmax);
  for (size_t vl; n > 0; n -= vl, x += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    vfloat32m8_t v = __riscv_vle32_v_f32m8(x, vl);
    acc = __riscv_vfmax_vv_f32m8_tu(acc, acc, v, vl);
  }
  vfloat32m1_t init = __riscv_vfmv_s_f_f32m1(-3.4e38f, 1);
  return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredmax_vs_f32m8_f32m1(acc, init, vlmax));
}
