/* The user-mode runtime: console output (through the machine mode, machine.c) and the few libc
   pieces the harnesses and gemmini.h use (-nostdlib build). Linked into the user text. */
#include <stdarg.h>
#include <stdint.h>
#include "runtime.h"
#include "machine.h"

/* The user's way out of solution(): harness_run_user (crt.S) starts it here, in the user mode,
 * and the ecall returns to the machine mode. */
__asm__(".text\n"
        ".globl user_entry\n"
        "user_entry:\n"
        "  jalr t0\n"
        "  li a7, 2\n" /* MACHINE_CALL_DONE */
        "  ecall\n"
        "1: j 1b\n");

static char out_buf[512];
static size_t out_len;

/* Printing runs in either mode and its buffer is user data: every index is bounded here, and the
 * machine mode's handler checks the range it is asked to write. */
void rt_flush(void) {
  size_t n = out_len;
  out_len = 0;
  if (n > sizeof(out_buf)) n = sizeof(out_buf);
  if (!n) return;
  register uint64_t a0 __asm__("a0") = (uint64_t)(uintptr_t)out_buf;
  register uint64_t a1 __asm__("a1") = n;
  register uint64_t a7 __asm__("a7") = MACHINE_CALL_WRITE;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a7) : "memory");
}

static void put_char(char c) {
  size_t n = out_len;
  if (n >= sizeof(out_buf)) n = 0;
  out_buf[n++] = c;
  out_len = n;
  if (c == '\n' || n == sizeof(out_buf)) rt_flush();
}

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

void *memcpy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n--) *d++ = *s++;
  return dst;
}

int abs(int x) { return x < 0 ? -x : x; }

static void put_uint(uint64_t v, unsigned base, int width, char pad) {
  char tmp[24];
  int n = 0;
  do { tmp[n++] = "0123456789abcdef"[v % base]; v /= base; } while (v);
  while (n < width--) put_char(pad);
  while (n) put_char(tmp[--n]);
}

/* Supports %d %i %u %x %ld %lld %lu %llu %lx %s %c %f (fixed 6 digits) %%, with a width. */
int printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  for (; *fmt; fmt++) {
    if (*fmt != '%') { put_char(*fmt); continue; }
    fmt++;
    char pad = ' ';
    int width = 0, longs = 0;
    if (*fmt == '0') { pad = '0'; fmt++; }
    while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
    while (*fmt == 'l') { longs++; fmt++; }
    switch (*fmt) {
      case 'd': case 'i': {
        int64_t v = longs ? va_arg(ap, int64_t) : va_arg(ap, int);
        if (v < 0) { put_char('-'); v = -v; width--; }
        put_uint((uint64_t)v, 10, width, pad);
        break;
      }
      case 'u': put_uint(longs ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 10, width, pad); break;
      case 'x': put_uint(longs ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 16, width, pad); break;
      case 'c': put_char((char)va_arg(ap, int)); break;
      case 's': { const char *s = va_arg(ap, const char *); while (*s) put_char(*s++); break; }
      case 'f': {
        double v = va_arg(ap, double);
        if (v < 0) { put_char('-'); v = -v; }
        uint64_t ip = (uint64_t)v;
        put_uint(ip, 10, 0, ' ');
        put_char('.');
        put_uint((uint64_t)((v - (double)ip) * 1e6 + 0.5), 10, 6, '0');
        break;
      }
      case '%': put_char('%'); break;
      default: put_char('%'); put_char(*fmt); break;
    }
  }
  va_end(ap);
  return 0;
}

int puts(const char *s) {
  while (*s) put_char(*s++);
  put_char('\n');
  return 0;
}

