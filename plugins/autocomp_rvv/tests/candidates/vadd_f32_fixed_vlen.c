#include <riscv_vector.h>

/* Bug: assumes 8 floats per LMUL=1 register (VLEN=256). Correct at VLEN 256 only. */
void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    __riscv_vse32_v_f32m1(c + i, __riscv_vfadd_vv_f32m1(__riscv_vle32_v_f32m1(a + i, 8),
                                                        __riscv_vle32_v_f32m1(b + i, 8), 8), 8);
  for (; i < n; i++) c[i] = a[i] + b[i];
}
