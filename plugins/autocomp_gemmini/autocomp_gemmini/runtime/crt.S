# Bare-metal entry for Spike: enable FP, set the stack, call main, report the exit code via HTIF.
  .section .text.init
  .globl _start
_start:
  li t0, (1 << 13)          # mstatus.FS = Initial: FP instructions are legal in M-mode
  csrs mstatus, t0
  csrwi fcsr, 0
  la sp, _stack_top
  la t0, trap_entry         # any exception (bad address, illegal instruction) ends the run
  csrw mtvec, t0
  la t0, __bss_start        # zero .bss (the harness's buffers live there)
  la t1, __bss_end
1:bgeu t0, t1, 2f
  sd zero, 0(t0)
  addi t0, t0, 8
  j 1b
2:call main
  call rt_exit
  .globl rt_halt
rt_halt:
  slli a0, a0, 1            # HTIF exit: tohost = (code << 1) | 1
  ori a0, a0, 1
  la t0, tohost
3:sd a0, 0(t0)
  j 3b

  .align 2
trap_entry:
  la sp, _stack_top
  csrr a0, mcause
  csrr a1, mepc
  csrr a2, mtval
  call rt_trap
