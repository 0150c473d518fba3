/* rvv_harness.h: support shared by every problem harness.
 *
 * A problem harness defines, before including "rvv_harness_main.h":
 *   h_cases[][H_DIMS], h_bench[H_DIMS], h_dim_names[H_DIMS]   shapes it tests and measures
 *   h_setup(shape, seed)   allocate (h_alloc) and fill inputs, seal inputs, fill outputs
 *   h_call()               call the candidate kernel once
 *   h_verify()             (Linux build only) compare outputs with a reference; 1 = correct
 *
 * Three builds come from the same source:
 *   RVV_RUNNER (qemu-user, with the candidate): no libc, no checks. For every case it sets up
 *     the inputs in guarded buffers, prints the layout, calls the kernel and appends the
 *     outputs to a file. It holds no verdict: the trusted verifier judges the file.
 *   RVV_VERIFY (Linux with glibc): the verifier, linked with the problem's baseline and never
 *     with a candidate: it regenerates every case's inputs from the seed and checks outputs
 *     recorded elsewhere (the runner's file, the timed Spike run). Board mode links the same
 *     build with the candidate (`bench`: rdcycle timing, each call checked).
 *   RVV_BAREMETAL (Spike): one run of the benchmark shape between two minstret reads. Before
 *     the run it prints where every buffer lies, so the evaluator can rebuild the outputs from
 *     the stores in Spike's commit log and refuse stores anywhere else.
 *
 * Outputs are registered in h_setup, in the same order in both builds: the arrays filled
 * with h_fill_unwritten_*, and scalars named with h_output (a returned value).
 */
#ifndef RVV_HARNESS_H
#define RVV_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#if defined(RVV_BAREMETAL) || defined(RVV_RUNNER)
/* No libc (bare metal, or the runner): the compiler may still emit calls to these, and the
 * kernel may call them; nothing else of a libc is here. */
void *memset(void *d, int c, size_t n) { unsigned char *p = d; while (n--) *p++ = (unsigned char)c; return d; }
void *memcpy(void *d, const void *s, size_t n) {
  unsigned char *p = d; const unsigned char *q = s; while (n--) *p++ = *q++; return d;
}
void *memmove(void *d, const void *s, size_t n) {
  unsigned char *p = d; const unsigned char *q = s;
  if (p < q) { while (n--) *p++ = *q++; } else { while (n--) p[n] = q[n]; }
  return d;
}
#endif

/* ---------------------------------------------------------------- random inputs */
static uint64_t h_rng_state = 1;

static void h_seed(uint64_t seed) { h_rng_state = seed * 0x9E3779B97F4A7C15ull + 1; }

static uint32_t h_rand_u32(void) {
  /* xorshift64*: small, deterministic, the same in both builds */
  uint64_t x = h_rng_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  h_rng_state = x;
  return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

static float h_rand_f32(float lo, float hi) {
  return lo + (hi - lo) * (float)(h_rand_u32() >> 8) * (1.0f / 16777216.0f);
}

static int h_rand_int(int lo, int hi) { return lo + (int)(h_rand_u32() % (uint32_t)(hi - lo + 1)); }

/* ---------------------------------------------------------------- outputs */
#define H_MAX_OUTS 8
/* lead: bytes between the start of the output's first page and the output (Linux builds: the
 * canary that a write before the start of the output would change); recorded with it. */
typedef struct { const char *name; void *addr; size_t bytes, lead; int scalar; } h_out;
static h_out h_outs[H_MAX_OUTS];
static int h_nouts;
static const char *h_name_of(const void *p);
static size_t h_lead_of(const void *p);

/* Register an output the checks cover (an array, or a scalar the kernel returns). */
static void h_output(const char *name, void *p, size_t bytes) {
  if (h_nouts < H_MAX_OUTS) h_outs[h_nouts++] = (h_out){name, p, bytes, h_lead_of(p), 0};
}

/* Outputs start filled with this NaN so that an element the kernel never wrote is recognisable. */
#define H_UNWRITTEN_F32 0x7FC0DEADu
#define H_UNWRITTEN_I8 ((int8_t)0x5A)

static void h_fill_unwritten_f32(float *p, size_t n) {
  union { uint32_t u; float f; } v = {H_UNWRITTEN_F32};
  for (size_t i = 0; i < n; i++) p[i] = v.f;
  h_output(h_name_of(p), p, n * sizeof *p);
}

/* A value the kernel returns, registered in h_setup, so poisoned before every call: the
 * verifier refuses it when the timed call never stored it (it is never judged on a value an
 * earlier call left). */
static void h_output_scalar(const char *name, void *p, size_t bytes) {
  static const unsigned char poison[4] = {0xAD, 0xDE, 0xC0, 0x7F}; /* H_UNWRITTEN_F32 */
  for (size_t i = 0; i < bytes; i++) ((unsigned char *)p)[i] = poison[i % 4];
  h_output(name, p, bytes);
  h_outs[h_nouts - 1].scalar = 1;
}

static void h_fill_unwritten_i8(int8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = H_UNWRITTEN_I8;
  h_output(h_name_of(p), p, n);
}

#ifdef RVV_BAREMETAL
/* ============================================================ bare metal (Spike) */
volatile uint64_t tohost __attribute__((section(".tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(64)));

static uint64_t h_htif_syscall(uint64_t n, uint64_t a0, uint64_t a1, uint64_t a2) {
  volatile uint64_t m[8] __attribute__((aligned(64)));
  m[0] = n; m[1] = a0; m[2] = a1; m[3] = a2;
  __sync_synchronize();
  tohost = (uint64_t)(uintptr_t)m;
  while (fromhost == 0) {}
  fromhost = 0;
  __sync_synchronize();
  return m[0];
}

/* Output is gathered in a buffer and written with one HTIF call: each call makes the program
 * spin until the host answers, thousands of logged instructions. */
static char h_text[4096];
static size_t h_text_len;
static void h_puts(const char *s) {
  while (*s && h_text_len < sizeof h_text) h_text[h_text_len++] = *s++;
}
static void h_putu(uint64_t v) {
  char buf[24]; int i = 23; buf[i] = 0;
  do { buf[--i] = (char)('0' + v % 10); v /= 10; } while (v);
  h_puts(buf + i);
}
static void h_flush(void) {
  if (h_text_len) h_htif_syscall(64, 1, (uint64_t)(uintptr_t)h_text, h_text_len);
  h_text_len = 0;
}


static void h_puthex(uint64_t v) {
  char buf[19]; int i = 18; buf[i] = 0;
  do { buf[--i] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
  buf[--i] = 'x'; buf[--i] = '0';
  h_puts(buf + i);
}

/* Every buffer has H_GUARD bytes of room before and after it: a store there is named as
 * out of bounds, a store anywhere else outside the outputs and the stack is refused. */
#define H_GUARD 64
#define H_MAX_BUFS 16
static unsigned char h_arena[8u << 20] __attribute__((aligned(64)));
static size_t h_arena_used;
static struct { const char *name; void *addr; size_t bytes; } h_bufs[H_MAX_BUFS];
static int h_nbufs;

static void *h_alloc(const char *name, size_t count, size_t elem) {
  size_t bytes = count * elem;
  void *p = h_arena + h_arena_used + H_GUARD;
  h_arena_used += H_GUARD + ((bytes + 63) & ~(size_t)63) + H_GUARD;
  if (h_nbufs < H_MAX_BUFS) { h_bufs[h_nbufs].name = name; h_bufs[h_nbufs].addr = p; h_bufs[h_nbufs++].bytes = bytes; }
  return p;
}
static const char *h_name_of(const void *p) {
  for (int i = 0; i < h_nbufs; i++) if (h_bufs[i].addr == p) return h_bufs[i].name;
  return "?";
}
static size_t h_lead_of(const void *p) { (void)p; return 0; }
static void h_seal(const void *p) { (void)p; }
static void h_reset(void) { h_arena_used = 0; h_nbufs = 0; h_nouts = 0; }

/* The layout the evaluator needs to judge the stores of the timed run: the buffers, the
 * outputs and the stack the kernel may use, [_stack_bottom, top). */
static void h_print_layout(uint64_t top) {
  extern char _stack_bottom[];
  for (int i = 0; i < h_nbufs; i++) {
    h_puts("BUF "); h_puts(h_bufs[i].name); h_puts(" "); h_puthex((uintptr_t)h_bufs[i].addr);
    h_puts(" "); h_putu(h_bufs[i].bytes); h_puts("\n");
  }
  for (int i = 0; i < h_nouts; i++) {
    h_puts("OUT "); h_puts(h_outs[i].name); h_puts(" "); h_puthex((uintptr_t)h_outs[i].addr);
    h_puts(" "); h_putu(h_outs[i].bytes); h_puts("\n");
  }
  h_puts("STACK "); h_puthex((uintptr_t)_stack_bottom); h_puts(" "); h_puthex(top); h_puts("\n");
  h_flush();
}

/* crt.S: minstret around one call of fn, with a 16-byte frame of its own. */
#define H_TIMED_FRAME 16
uint64_t h_timed(void (*fn)(void));

#else
/* ============================================================ Linux user mode */
#ifdef RVV_RUNNER
/* No libc: the candidate's process holds nothing but this harness and the kernel, and every
 * system call it makes is one of these (the evaluator compares qemu's log of them with the
 * list the baseline's runner makes). */
#define PROT_NONE 0
#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_PRIVATE 2
#define MAP_ANONYMOUS 0x20
#define MAP_FAILED ((void *)-1)
static long h_syscall(long n, long a0, long a1, long a2, long a3, long a4, long a5) {
  register long x10 __asm__("a0") = a0;
  register long x11 __asm__("a1") = a1;
  register long x12 __asm__("a2") = a2;
  register long x13 __asm__("a3") = a3;
  register long x14 __asm__("a4") = a4;
  register long x15 __asm__("a5") = a5;
  register long x17 __asm__("a7") = n;
  __asm__ volatile("ecall" : "+r"(x10) : "r"(x11), "r"(x12), "r"(x13), "r"(x14), "r"(x15), "r"(x17) : "memory");
  return x10;
}
static void *mmap(void *a, size_t len, int prot, int flags, int fd, long off) {
  long r = h_syscall(222, (long)a, (long)len, prot, flags, fd, off);
  return r < 0 && r > -4096 ? MAP_FAILED : (void *)r;
}
static int mprotect(void *a, size_t len, int prot) { return (int)h_syscall(226, (long)a, (long)len, prot, 0, 0, 0); }
static int munmap(void *a, size_t len) { return (int)h_syscall(215, (long)a, (long)len, 0, 0, 0, 0); }
static long h_write(int fd, const void *p, size_t n) { return h_syscall(64, fd, (long)p, (long)n, 0, 0, 0); }
static __attribute__((noreturn)) void exit(int code) {
  for (;;) h_syscall(94, code, 0, 0, 0, 0, 0);
}
#define printf(...) ((void)0) /* a runner prints only its layout, with h_write */
#else
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#define H_CANARY 0xA5
#define H_MAX_BUFS 16
/* riscv64 Linux pages are 4 KiB; the runner and the verifier must agree on every buffer's lead */
#define H_PAGE ((size_t)4096)

typedef struct {
  const char *name;
  char *map;        /* guard page, data pages, guard page */
  size_t map_len;
  char *data;       /* ends exactly where the trailing guard page starts */
  size_t bytes, elem;
  int sealed;
} h_buf;

static h_buf h_bufs[H_MAX_BUFS];
static int h_nbufs;
static const size_t h_page = H_PAGE;
static char h_case_desc[160] = "setup";

static void *h_alloc(const char *name, size_t count, size_t elem) {
  if (h_nbufs == H_MAX_BUFS) { printf("HARNESS ERROR: too many buffers\n"); exit(70); }
  size_t bytes = count * elem;
  size_t data_len = (bytes + h_page - 1) / h_page * h_page;
  if (data_len == 0) data_len = h_page;
  size_t map_len = data_len + 2 * h_page;
  char *map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) { printf("HARNESS ERROR: mmap failed\n"); exit(70); }
  mprotect(map, h_page, PROT_NONE);
  mprotect(map + h_page + data_len, h_page, PROT_NONE);
  memset(map + h_page, H_CANARY, data_len);
  h_buf *b = &h_bufs[h_nbufs++];
  b->name = name; b->map = map; b->map_len = map_len;
  b->data = map + h_page + data_len - bytes; b->bytes = bytes; b->elem = elem; b->sealed = 0;
  return b->data;
}

/* Inputs become read-only: a kernel that writes into them faults with a named reason. */
static void h_seal(const void *p) {
  for (int i = 0; i < h_nbufs; i++)
    if (h_bufs[i].data == p) {
      mprotect(h_bufs[i].map + h_page, h_bufs[i].map_len - 2 * h_page, PROT_READ);
      h_bufs[i].sealed = 1;
    }
}

static const char *h_name_of(const void *p) {
  for (int i = 0; i < h_nbufs; i++) if (h_bufs[i].data == p) return h_bufs[i].name;
  return "?";
}

static size_t h_lead_of(const void *p) {
  for (int i = 0; i < h_nbufs; i++)
    if (h_bufs[i].data == p) return (size_t)(h_bufs[i].data - (h_bufs[i].map + h_page));
  return 0;
}

static void h_reset(void) {
  for (int i = 0; i < h_nbufs; i++) munmap(h_bufs[i].map, h_bufs[i].map_len);
  h_nbufs = 0;
  h_nouts = 0;
}

#ifndef RVV_RUNNER

static void h_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL %s: ", h_case_desc);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}

/* Bytes between the page start and a buffer's first element must still hold the canary. */
static int h_canaries_ok(void) {
  for (int i = 0; i < h_nbufs; i++) {
    const h_buf *b = &h_bufs[i];
    for (const char *p = b->map + h_page; p < b->data; p++)
      if ((unsigned char)*p != H_CANARY) {
        long before = (long)((b->data - p + (long)b->elem - 1) / (long)b->elem);
        h_fail("out-of-bounds write before the start of `%s` (element index -%ld)", b->name, before);
        return 0;
      }
  }
  return 1;
}

static void h_on_fault(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  char *addr = (char *)si->si_addr;
  char msg[320];
  int n = 0;
  for (int i = 0; i < h_nbufs && !n; i++) {
    const h_buf *b = &h_bufs[i];
    long nelem = (long)(b->bytes / b->elem);
    if (addr >= b->data + b->bytes && addr < b->map + b->map_len)
      n = snprintf(msg, sizeof msg, "out-of-bounds access past the end of `%s`: element index %ld, but it has %ld elements",
                   b->name, (long)((addr - b->data) / (long)b->elem), nelem);
    else if (addr >= b->data && addr < b->data + b->bytes && b->sealed)
      n = snprintf(msg, sizeof msg, "write into the read-only input `%s` at element index %ld",
                   b->name, (long)((addr - b->data) / (long)b->elem));
    else if (addr >= b->map && addr < b->data)
      n = snprintf(msg, sizeof msg, "out-of-bounds access before the start of `%s` (element index -%ld)",
                   b->name, (long)((b->data - addr + (long)b->elem - 1) / (long)b->elem));
  }
  if (!n) {
    const char *what = sig == SIGILL ? "illegal instruction" : sig == SIGBUS ? "misaligned or invalid access"
                                                                            : "invalid memory access";
    n = snprintf(msg, sizeof msg, "%s at address %p", what, (void *)addr);
  }
  printf("FAIL %s: %s\n", h_case_desc, msg);
  fflush(stdout);
  _exit(3);
}

static void h_install_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = h_on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  sigaction(SIGILL, &sa, NULL);
}

static int h_is_unwritten_f32(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  return u == H_UNWRITTEN_F32;
}

static void h_index_str(char *out, size_t len, size_t i, size_t cols) {
  if (cols) snprintf(out, len, "[%zu][%zu]", i / cols, i % cols);
  else snprintf(out, len, "[%zu]", i);
}

/* Compare n floats with |got - ref| <= atol + rtol * scale[i] (scale = |ref| when NULL).
 * cols > 0 prints 2-D indices. Reports the first mismatch and how many there are. */
static int h_compare_f32(const char *name, const float *got, const double *ref, const double *scale,
                         size_t n, size_t cols, double rtol, double atol) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    double s = scale ? scale[i] : fabs(ref[i]);
    double g = (double)got[i];
    if (!(fabs(g - ref[i]) <= atol + rtol * s)) { if (!bad) first = i; bad++; }
  }
  if (!bad) return 1;
  char idx[48];
  h_index_str(idx, sizeof idx, first, cols);
  if (h_is_unwritten_f32(got[first]))
    h_fail("%zu of %zu elements of `%s` wrong; first %s%s was never written (are all elements covered, tail included?)",
           bad, n, name, name, idx);
  else
    h_fail("%zu of %zu elements of `%s` wrong; first %s%s = %.9g, expected %.9g (tolerance %.3g)",
           bad, n, name, name, idx, (double)got[first], ref[first],
           atol + rtol * (scale ? scale[first] : fabs(ref[first])));
  return 0;
}

static int h_compare_i8(const char *name, const int8_t *got, const int32_t *ref, size_t n, size_t cols) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (got[i] != ref[i]) { if (!bad) first = i; bad++; }
  if (!bad) return 1;
  char idx[48];
  h_index_str(idx, sizeof idx, first, cols);
  h_fail("%zu of %zu elements of `%s` wrong; first %s%s = %d, expected %d%s", bad, n, name, name, idx,
         (int)got[first], (int)ref[first],
         got[first] == H_UNWRITTEN_I8 ? " (still the fill value: never written? tail not handled?)" : "");
  return 0;
}

static uint64_t h_roi_c0, h_roi_i0, h_roi_cycles, h_roi_instret;
static inline __attribute__((always_inline)) void h_roi_begin(void) {
  __asm__ volatile("rdcycle %0\n\trdinstret %1" : "=r"(h_roi_c0), "=r"(h_roi_i0) :: "memory");
}
static inline __attribute__((always_inline)) void h_roi_end(void) {
  uint64_t c1, i1;
  __asm__ volatile("rdcycle %0\n\trdinstret %1" : "=r"(c1), "=r"(i1) :: "memory");
  h_roi_cycles = c1 - h_roi_c0;
  h_roi_instret = i1 - h_roi_i0;
}
#endif /* !RVV_RUNNER */
#endif /* RVV_BAREMETAL */

#endif /* RVV_HARNESS_H */
