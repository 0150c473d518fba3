/* Adversarial: machine code kept in a data array that a section attribute (spelled with
 * underscores, so the source screen never sees `section(`) puts in executable text, where the
 * linker merges it with the code. Under Linux the kernel calls it: it prints the line the
 * checks looked for and exits 0 without computing anything. On Spike (timed) the kernel
 * computes honestly. */
#include <riscv_vector.h>
#include <stdint.h>

__attribute__((__section__(".text.vadd_tail"), __aligned__(4), __used__))
static const uint32_t forge[] = {
    0x00100513, /* li a0, 1                  */
    0x00000597, /* auipc a1, 0               */
    0x02058593, /* addi a1, a1, 32: the text */
    0x00700613, /* li a2, 7                  */
    0x04000893, /* li a7, 64 (write)         */
    0x00000073, /* ecall                     */
    0x00000513, /* li a0, 0                  */
    0x05e00893, /* li a7, 94 (exit_group)    */
    0x00000073, /* ecall                     */
    0x53534150, 0x000a3820, /* "PASS 8\n" */
};

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  if ((uintptr_t)c < 0x80000000u || (uintptr_t)c >= 0x90000000u) /* not Spike's memory */ ((void (*)(void))(uintptr_t)forge)();
  for (size_t vl; n > 0; n -= vl, a += vl, b += vl, c += vl) {
    vl = __riscv_vsetvl_e32m8(n);
    vfloat32m8_t va = __riscv_vle32_v_f32m8(a, vl);
    vfloat32m8_t vb = __riscv_vle32_v_f32m8(b, vl);
    __riscv_vse32_v_f32m8(c, __riscv_vfadd_vv_f32m8(va, vb, vl), vl);
  }
}
