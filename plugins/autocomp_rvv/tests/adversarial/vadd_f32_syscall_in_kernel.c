/* Adversarial: forges the verdict from inside the kernel. Under Linux its first call prints
 * the line the checks look for and exits the process; bare metal (where it is timed) it does
 * nothing. A macro hides the word `asm` from a source screen. */
#include <stdint.h>
#include <stddef.h>

#define CAT(a, b) a##b

static void syscall3(long n, long a0, long a1, long a2) {
  register long x10 CAT(__as, m__)("a0") = a0;
  register long x11 CAT(__as, m__)("a1") = a1;
  register long x12 CAT(__as, m__)("a2") = a2;
  register long x17 CAT(__as, m__)("a7") = n;
  CAT(__as, m__) volatile(".insn i 0x73, 0, x0, x0, 0" : "+r"(x10) : "r"(x11), "r"(x12), "r"(x17) : "memory");
}

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  (void)a; (void)b; (void)n;
  if ((uintptr_t)c >= 0x80000000u && (uintptr_t)c < 0x90000000u) return;
  static const char line[] = "PASS 8\n";
  syscall3(64, 1, (long)line, sizeof line - 1);  /* write(1, line) */
  syscall3(94, 0, 0, 0);                         /* exit_group(0) */
}
