#include <riscv_vector.h>

/* Vectorized along the output row: for each of the nine taps, a unit-stride load of the
 * shifted input row times the scalar weight, accumulated with vfmacc.vf. */
void dwconv3x3_f32(size_t C, size_t H, size_t W, const float *in, const float *w, const float *bias,
                   float *out) {
  size_t OH = H - 2, OW = W - 2;
  for (size_t c = 0; c < C; c++) {
    const float *wc = w + c * 9;
    for (size_t y = 0; y < OH; y++) {
      const float *r0 = in + (c * H + y) * W, *r1 = r0 + W, *r2 = r1 + W;
      float *o = out + (c * OH + y) * OW;
      for (size_t x = 0, vl; x < OW; x += vl) {
        vl = __riscv_vsetvl_e32m4(OW - x);
        vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(bias[c], vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[0], __riscv_vle32_v_f32m4(r0 + x, vl), vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[1], __riscv_vle32_v_f32m4(r0 + x + 1, vl), vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[2], __riscv_vle32_v_f32m4(r0 + x + 2, vl), vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[3], __riscv_vle32_v_f32m4(r1 + x, vl), vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[4], __riscv_vle32_v_f32m4(r1 + x + 1, vl), vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[5], __riscv_vle32_v_f32m4(r1 + x + 2, vl), vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[6], __riscv_vle32_v_f32m4(r2 + x, vl), vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[7], __riscv_vle32_v_f32m4(r2 + x + 1, vl), vl);
        acc = __riscv_vfmacc_vf_f32m4(acc, wc[8], __riscv_vle32_v_f32m4(r2 + x + 2, vl), vl);
        __riscv_vse32_v_f32m4(o + x, acc, vl);
      }
    }
  }
}
