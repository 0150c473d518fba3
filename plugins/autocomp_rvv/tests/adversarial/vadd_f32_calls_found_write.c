/* Adversarial: calls the system-call code it finds in its own program. Under Linux the kernel
 * scans the code linked after it for glibc's write (`li a7, 64; ecall; lui; bltu; ret`, a leaf)
 * and _exit (`li a7, 94; ecall`) and calls them through function pointers: it prints the line
 * the checks looked for and exits 0 without computing anything. No instruction of its own
 * makes a system call. On Spike (timed) it computes honestly. */
#include <riscv_vector.h>
#include <stdint.h>

void vadd_f32(const float *a, const float *b, float *c, size_t n);

static const uint16_t *find(uint32_t li_a7, int leaf) {
  /* libc's code follows the kernel's; stop before the program's data */
  const uint16_t *p = (const uint16_t *)(uintptr_t)vadd_f32;
  for (int i = 0; i < 0x30000; i++, p++)
    if (p[0] == (li_a7 & 0xffff) && p[1] == li_a7 >> 16 && p[2] == 0x0073 && p[3] == 0 &&
        (!leaf || (p[4] == 0x77fd && p[7] == 0x8082)))
      return p;
  return 0;
}

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  if ((uintptr_t)c < 0x80000000u || (uintptr_t)c >= 0x90000000u) /* not Spike's memory */ {
    const uint16_t *write = find(0x04000893, 1), *exit = find(0x05e00893, 0);
    if (write && exit) {
      static const char line[] = "PASS 8\n";
      ((long (*)(long, const char *, long))(uintptr_t)write)(1, line, 7);
      ((void (*)(long))(uintptr_t)exit)(0);
    }
    return;
  }
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    vfloat32m8_t va = __riscv_vle32_v_f32m8(a, vl);
    vfloat32m8_t vb = __riscv_vle32_v_f32m8(b, vl);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(va, vb, vl), vl);
  }
}
