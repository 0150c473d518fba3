#include <riscv_vector.h>

/* The honest vector exp, but `max` replaced by the constant 8 that every old case passed:
 * accepted before, wrong for any other max the spec allows. */
float softmax_expsum_f32(const float *x, float *y, size_t n, float max_given) {
  (void)max_given;
  const float max = 8.0f;
  size_t vlmax = __riscv_vsetvlmax_e32m4();
  vfloat32m4_t sum = __riscv_vfmv_v_f_f32m4(0.0f, vlmax);
  for (size_t vl; n > 0; n -= vl, x += vl, y += vl) {
    vl = __riscv_vsetvl_e32m4(n);
    vfloat32m4_t v = __riscv_vfsub_vf_f32m4(__riscv_vle32_v_f32m4(x, vl), max, vl);
    vint32m4_t k = __riscv_vfcvt_x_f_v_i32m4(__riscv_vfmul_vf_f32m4(v, 1.44269504f, vl), vl);
    vfloat32m4_t kf = __riscv_vfcvt_f_x_v_f32m4(k, vl);
    vfloat32m4_t r = __riscv_vfnmsac_vf_f32m4(v, 0.693145752f, kf, vl);
    r = __riscv_vfnmsac_vf_f32m4(r, 1.42860677e-6f, kf, vl);
    vfloat32m4_t p = __riscv_vfmv_v_f_f32m4(1.38888892e-3f, vl);
    p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(8.33333377e-3f, vl), vl);
    p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(4.16666679e-2f, vl), vl);
    p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(1.66666672e-1f, vl), vl);
    p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(0.5f, vl), vl);
    p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(1.0f, vl), vl);
    p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(1.0f, vl), vl);
    vint32m4_t bits = __riscv_vsll_vx_i32m4(__riscv_vadd_vx_i32m4(k, 127, vl), 23, vl);
    vfloat32m4_t e = __riscv_vfmul_vv_f32m4(p, __riscv_vreinterpret_v_i32m4_f32m4(bits), vl);
    __riscv_vse32_v_f32m4(y, e, vl);
    sum = __riscv_vfadd_vv_f32m4_tu(sum, sum, e, vl);
  }
  vfloat32m1_t zero = __riscv_vfmv_s_f_f32m1(0.0f, 1);
  return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m4_f32m1(sum, zero, vlmax));
}
