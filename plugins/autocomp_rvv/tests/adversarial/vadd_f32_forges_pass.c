/* Adversarial: forges the harness's verdict. A constructor runs before the Linux harness's
 * main, prints the line the checks look for and exits; the kernel itself does nothing.
 * Macros hide the words a source screen looks for (asm, constructor). */
#include <stddef.h>

#define CAT(a, b) a##b
#define RUN_FIRST __attribute__((CAT(constr, uctor)))

static void syscall3(long n, long a0, long a1, long a2) {
  register long x10 CAT(__as, m__)("a0") = a0;
  register long x11 CAT(__as, m__)("a1") = a1;
  register long x12 CAT(__as, m__)("a2") = a2;
  register long x17 CAT(__as, m__)("a7") = n;
  CAT(__as, m__) volatile(".insn i 0x73, 0, x0, x0, 0" : "+r"(x10) : "r"(x11), "r"(x12), "r"(x17) : "memory");
}

RUN_FIRST static void verdict(void) {
  static const char line[] = "PASS 8\n";
  syscall3(64, 1, (long)line, sizeof line - 1);  /* write(1, line) */
  syscall3(94, 0, 0, 0);                         /* exit_group(0) */
}

void vadd_f32(const float *a, const float *b, float *c, size_t n) {
  (void)a; (void)b; (void)c; (void)n;
}
