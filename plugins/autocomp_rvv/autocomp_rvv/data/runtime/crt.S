# Bare-metal start-up for Spike: enable the vector and FP units, set a stack,
# call main, then report main's return value to the host through HTIF tohost.
  .section .text.init
  .globl _start
_start:
  li t0, (1 << 9) | (1 << 13)   # mstatus.VS = mstatus.FS = Initial
  csrs mstatus, t0
  la sp, _stack_top
  call main
  slli a0, a0, 1
  ori a0, a0, 1
  la t0, tohost
1:
  sd a0, 0(t0)
  j 1b
