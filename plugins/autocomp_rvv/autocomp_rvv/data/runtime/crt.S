# Bare-metal start-up for Spike: enable the vector and FP units, set a stack, shut user mode
# out of the host interface, call main, then report main's return value to the host through
# HTIF tohost.
  .section .text.init
  .globl _start
_start:
  li t0, (1 << 9) | (1 << 13)   # mstatus.VS = mstatus.FS = Initial
  csrs mstatus, t0
  la sp, _stack_top
  la t0, h_trap
  csrw mtvec, t0
  # PMP: entry 0, the host interface's page (link.ld: nothing else in it), no access from user
  # mode; entry 1, all the rest of memory. Machine mode is not bound by either.
  la t0, tohost
  srli t0, t0, 2
  ori t0, t0, 0x1ff             # NAPOT, 4 KiB
  csrw pmpaddr0, t0
  li t0, -1                     # NAPOT, the whole address space
  csrw pmpaddr1, t0
  li t0, (0x1f << 8) | 0x18     # entry 1: NAPOT, RWX; entry 0: NAPOT, nothing
  csrw pmpcfg0, t0
  call main
h_exit:
  slli a0, a0, 1
  ori a0, a0, 1
  la t0, tohost
1:
  sd a0, 0(t0)
  j 1b

# The measured region: minstret read just before and just after one call of a0 (the harness's
# h_call_timed), which runs in user mode: it can reach neither the host interface (PMP) nor a
# CSR other than the vector and FP state. Between the two reads nothing is stored but what that
# call stores, below this frame, so the evaluator can hold every store of the region to the
# outputs and the stack below H_TIMED_FRAME bytes under the caller's sp. Returns the minstret
# difference.
  .text
  .globl h_timed
h_timed:
  addi sp, sp, -16
  sd ra, 8(sp)
  sd s0, 0(sp)
  csrw mscratch, sp             # the frame to come back to
  csrw mepc, a0
  li t0, 3 << 11                # mstatus.MPP = user
  csrc mstatus, t0
  la ra, h_user_return
  csrr s0, minstret
  mret
h_user_return:                  # the call returns here, in user mode
  ecall

# Machine-mode trap: the user-mode call's ecall above ends the region; any other trap (a fault,
# an ecall of the kernel's own) ends the run with exit code 3.
  .balign 4
h_trap:
  csrr t0, minstret
  csrr t1, mcause
  li t2, 8                      # environment call from user mode
  bne t1, t2, 1f
  csrr t1, mepc
  la t2, h_user_return
  bne t1, t2, 1f
  csrr sp, mscratch
  sub a0, t0, s0
  ld s0, 0(sp)
  ld ra, 8(sp)
  addi sp, sp, 16
  ret
1:
  li a0, 3
  j h_exit
