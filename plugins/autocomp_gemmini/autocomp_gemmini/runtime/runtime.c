/* HTIF console and exit for bare-metal programs under Spike, plus the few libc
   pieces the harnesses and gemmini.h use (-nostdlib build). */
#include <stdarg.h>
#include <stdint.h>
#include "runtime.h"

volatile uint64_t tohost __attribute__((section(".tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(64)));

extern void rt_halt(int code) __attribute__((noreturn));

static uint64_t htif_syscall(uint64_t n, uint64_t a0, uint64_t a1, uint64_t a2) {
  volatile uint64_t m[8] __attribute__((aligned(64)));
  m[0] = n; m[1] = a0; m[2] = a1; m[3] = a2;
  __sync_synchronize();
  tohost = (uint64_t)(uintptr_t)m;
  while (fromhost == 0) ;
  fromhost = 0;
  __sync_synchronize();
  return m[0];
}

static char out_buf[512];
static size_t out_len;

static void flush_out(void) {
  if (out_len) htif_syscall(64, 1, (uint64_t)(uintptr_t)out_buf, out_len);
  out_len = 0;
}

static void put_char(char c) {
  out_buf[out_len++] = c;
  if (c == '\n' || out_len == sizeof(out_buf)) flush_out();
}

void rt_exit(int code) { flush_out(); rt_halt(code); }
void exit(int code) { rt_exit(code); }

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

/* Called from the trap vector: report the exception and exit with status 99. */
void rt_trap(uint64_t mcause, uint64_t mepc, uint64_t mtval) {
  printf("trap: mcause=%lu mepc=0x%lx mtval=0x%lx\n", mcause, mepc, mtval);
  rt_exit(99);
}
