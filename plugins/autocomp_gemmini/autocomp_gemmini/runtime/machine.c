/* The machine-mode side of the runtime: the HTIF mailbox (console and exit) and the trap
 * handler. The user mode reaches the console only through ecall, with a buffer the handler
 * checks lies in the user's data (the harness and the candidate print through the same
 * runtime.c printf). */
#include <stdint.h>
#include "machine.h"

volatile uint64_t tohost __attribute__((section(".tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(64)));

extern void rt_halt(int code) __attribute__((noreturn));
extern void harness_leave_user(void) __attribute__((noreturn));
extern char __user_rodata_start[], __user_end[];

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

static void console_write(uint64_t addr, uint64_t len) {
  if (len) htif_syscall(64, 1, addr, len);
}

static void trap_report(uint64_t mcause, uint64_t mepc, uint64_t mtval) {
  /* printf's buffer is user data: the report is formatted here, on the machine stack */
  char line[96];
  const char *parts[] = {"trap: mcause=", "", " mepc=0x", "", " mtval=0x", "", "\n"};
  uint64_t values[] = {mcause, mepc, mtval};
  char numbers[3][24];
  for (int k = 0; k < 3; k++) {
    char tmp[24];
    int n = 0;
    uint64_t v = values[k];
    unsigned base = k ? 16 : 10;
    do { tmp[n++] = "0123456789abcdef"[v % base]; v /= base; } while (v);
    int j = 0;
    while (n) numbers[k][j++] = tmp[--n];
    numbers[k][j] = 0;
    parts[2 * k + 1] = numbers[k];
  }
  int len = 0;
  for (int p = 0; p < 7; p++)
    for (const char *s = parts[p]; *s && len < (int)sizeof(line); s++) line[len++] = *s;
  console_write((uint64_t)(uintptr_t)line, (uint64_t)len);
}

/* regs: x0..x31 as trap_entry saved them (x2 excepted). */
void machine_trap(uint64_t *regs) {
  uint64_t mcause, mepc, mtval, mstatus;
  __asm__ volatile("csrr %0, mcause" : "=r"(mcause));
  __asm__ volatile("csrr %0, mepc" : "=r"(mepc));
  __asm__ volatile("csrr %0, mtval" : "=r"(mtval));
  __asm__ volatile("csrr %0, mstatus" : "=r"(mstatus));
  const int from_user = ((mstatus >> 11) & 3) == 0;
  if (mcause == 8 || mcause == 11) { /* ecall from the user or the machine mode */
    const uint64_t call = regs[17], a0 = regs[10], a1 = regs[11];
    if (call == MACHINE_CALL_WRITE) {
      const uint64_t lo = (uint64_t)(uintptr_t)__user_rodata_start, hi = (uint64_t)(uintptr_t)__user_end;
      if (!from_user || (a0 >= lo && a1 <= hi - lo && a0 - lo <= (hi - lo) - a1)) {
        console_write(a0, a1);
        __asm__ volatile("csrw mepc, %0" ::"r"(mepc + 4));
        return;
      }
    } else if (call == MACHINE_CALL_DONE && from_user) {
      harness_leave_user();
    }
  }
  trap_report(mcause, mepc, mtval);
  rt_halt(99);
}

void rt_flush(void);
void rt_exit(int code) { rt_flush(); rt_halt(code); }
void exit(int code) { rt_exit(code); }
