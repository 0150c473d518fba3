#include <riscv_vector.h>

/* Honest: the work is split between the vector unit, which walks up from the front in whole
 * LMUL=8 registers, and the scalar core, which adds four elements from the back in each strip
 * while the vector unit is busy (it reaches memory through its own port). */
void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  size_t lo = 0, hi = n; /* done: [0, lo) by the vector unit, [hi, n) by the scalar core */
  size_t vlmax = __riscv_vsetvlmax_e32m8();
  while (hi - lo >= vlmax + 4) {
    __riscv_vse32_v_f32m8(c + lo, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(a + lo, vlmax),
                                                           __riscv_vle32_v_f32m8(b + lo, vlmax),
                                                           vlmax), vlmax);
    lo += vlmax;
    hi -= 4;
    float s0 = a[hi] + b[hi], s1 = a[hi + 1] + b[hi + 1];
    float s2 = a[hi + 2] + b[hi + 2], s3 = a[hi + 3] + b[hi + 3];
    c[hi] = s0; c[hi + 1] = s1; c[hi + 2] = s2; c[hi + 3] = s3;
  }
  for (size_t vl; lo < hi; lo += vl) {
    vl = __riscv_vsetvl_e32m8(hi - lo);
    __riscv_vse32_v_f32m8(c + lo, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(a + lo, vl),
                                                           __riscv_vle32_v_f32m8(b + lo, vl), vl), vl);
  }
}
