#include <riscv_vector.h>

/* Each output row j is column j of the input: one strided load, one unit-stride store. */
void transpose_f32(size_t rows, size_t cols, const float *in, float *out) {
  ptrdiff_t stride = (ptrdiff_t)(cols * sizeof(float));
  for (size_t j = 0; j < cols; j++) {
    const float *src = in + j;
    float *dst = out + j * rows;
    for (size_t n = rows, vl; n > 0; n -= vl, src += vl * cols, dst += vl) {
      vl = __riscv_vsetvl_e32m4(n);
      __riscv_vse32_v_f32m4(dst, __riscv_vlse32_v_f32m4(src, stride, vl), vl);
    }
  }
}
