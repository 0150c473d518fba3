#include <riscv_vector.h>

/* Widen int8 -> int16 (subtracting the zero point), int16 -> int32 multiply-add, then round,
 * shift, add the output zero point, clamp and narrow back to int8. */
void qs8_add(size_t n, const int8_t *a, const int8_t *b, int8_t *out, const qs8_add_params *p) {
  const int32_t rounding = 1 << (p->shift - 1);
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, out += vl) {
    vl = __riscv_vsetvl_e8m1(n);
    vint16m2_t da = __riscv_vsub_vx_i16m2(__riscv_vsext_vf2_i16m2(__riscv_vle8_v_i8m1(a, vl), vl),
                                          (int16_t)p->a_zero_point, vl);
    vint16m2_t db = __riscv_vsub_vx_i16m2(__riscv_vsext_vf2_i16m2(__riscv_vle8_v_i8m1(b, vl), vl),
                                          (int16_t)p->b_zero_point, vl);
    vint32m4_t acc = __riscv_vmul_vx_i32m4(__riscv_vsext_vf2_i32m4(da, vl), p->a_multiplier, vl);
    acc = __riscv_vmacc_vx_i32m4(acc, p->b_multiplier, __riscv_vsext_vf2_i32m4(db, vl), vl);
    acc = __riscv_vsra_vx_i32m4(__riscv_vadd_vx_i32m4(acc, rounding, vl), p->shift, vl);
    acc = __riscv_vadd_vx_i32m4(acc, p->output_zero_point, vl);
    acc = __riscv_vmin_vx_i32m4(__riscv_vmax_vx_i32m4(acc, p->output_min, vl), p->output_max, vl);
    vint16m2_t q16 = __riscv_vncvt_x_x_w_i16m2(acc, vl);
    __riscv_vse8_v_i8m1(out, __riscv_vncvt_x_x_w_i8m1(q16, vl), vl);
  }
}
