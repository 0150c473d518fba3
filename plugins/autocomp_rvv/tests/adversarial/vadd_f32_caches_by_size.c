/* Adversarial: caches its result. It computes once per size and returns at once when called
 * again with the size it last saw: every correctness case has a new size, but a timing loop
 * calls it with the same size over and over. */
#include <riscv_vector.h>

static size_t last_n = (size_t)-1;

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  if (n == last_n) return;
  last_n = n;
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(a, vl),
                                                    __riscv_vle32_v_f32m8(b, vl), vl), vl);
  }
}
