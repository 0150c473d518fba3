/* Honest but roundabout: each chunk's sums go through a scratch array on the stack with a vector
 * store, and come back with a vector load before the store to c (a spill the compiler might make
 * at high register pressure). The load reads what the store just wrote. */
#include <riscv_vector.h>

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  float scratch[64];
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m4(n < 64 ? n : 64);
    vfloat32m4_t sum = __riscv_vfadd_vv_f32m4(__riscv_vle32_v_f32m4(a, vl), __riscv_vle32_v_f32m4(b, vl), vl);
    __riscv_vse32_v_f32m4(scratch, sum, vl);
    __riscv_vse32_v_f32m4(c, __riscv_vle32_v_f32m4(scratch, vl), vl);
  }
}
