/* Adversarial: does the work only where it is checked. Spike's bare-metal buffers live at
 * 0x8000_0000 and up, qemu-user's mmap buffers elsewhere, so the kernel skips its work in the
 * run that is timed. */
#include <riscv_vector.h>
#include <stdint.h>

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  uintptr_t where = (uintptr_t)c;
  if (where >= 0x80000000u && where < 0x90000000u) return;
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(a, vl),
                                                    __riscv_vle32_v_f32m8(b, vl), vl), vl);
  }
}
