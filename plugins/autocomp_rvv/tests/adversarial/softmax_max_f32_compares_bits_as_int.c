#include <riscv_vector.h>

/* The maximum by a signed integer comparison of the float bits: right whenever the maximum is
 * positive (all the old inputs planted one above 25), wrong when every input is negative. */
float softmax_max_f32(const float *x, size_t n) {
  const int32_t *bits = (const int32_t *)x;
  size_t vlmax = __riscv_vsetvlmax_e32m4();
  vint32m4_t best = __riscv_vmv_v_x_i32m4(bits[0], vlmax);
  for (size_t i = 0, vl; i < n; i += vl) {
    vl = __riscv_vsetvl_e32m4(n - i);
    best = __riscv_vmax_vv_i32m4_tu(best, best, __riscv_vle32_v_i32m4(bits + i, vl), vl);
  }
  vint32m1_t seed = __riscv_vmv_s_x_i32m1(bits[0], 1);
  int32_t top = __riscv_vmv_x_s_i32m1_i32(__riscv_vredmax_vs_i32m4_i32m1(best, seed, vlmax));
  float out;
  __builtin_memcpy(&out, &top, sizeof out);
  return out;
}
