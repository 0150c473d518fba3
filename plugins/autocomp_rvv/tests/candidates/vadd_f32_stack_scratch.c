/* Honest but unusual: stages each chunk in a scratch array on its own stack, asks the hardware
 * for VLEN through the vlenb CSR (an intrinsic) and sizes its chunks from it. */
#include <riscv_vector.h>

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  float scratch[256];
  size_t chunk = __riscv_vlenb() / sizeof(float) * 8;  /* one LMUL=8 register group */
  if (chunk > 256) chunk = 256;
  while (n > 0) {
    size_t todo = n < chunk ? n : chunk;
    for (size_t done = 0, vl; done < todo; done += vl) {
      vl = __riscv_vsetvl_e32m8(todo - done);
      __riscv_vse32_v_f32m8(scratch + done, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(a + done, vl),
                                                                   __riscv_vle32_v_f32m8(b + done, vl), vl), vl);
    }
    for (size_t i = 0; i < todo; i++) c[i] = scratch[i];
    a += todo; b += todo; c += todo; n -= todo;
  }
}
