# Bare-metal entry for Spike. The trusted side (this file, machine.c, the harness) runs in machine
# mode; the candidate's solution() runs in user mode behind PMP (link.ld lays out the regions):
# it can run only the user text (not write it), read the user read-only data, and read and write
# only the user data (its own, the harness's input and output buffers, its stack). The HTIF
# mailbox, the counters' machine CSRs, the harness's code, data and stack are out of its reach.
  .section .text.init
  .globl _start
_start:
  li t0, (1 << 13)          # mstatus.FS = Initial: FP instructions are legal (in both modes)
  csrs mstatus, t0
  csrwi fcsr, 0
  la sp, _machine_stack_top
  csrw mscratch, zero       # zero while the machine mode runs (see trap_entry)
  la t0, trap_entry         # every trap (ecall, bad address, illegal instruction) comes here
  csrw mtvec, t0
  la t0, __bss_start        # zero .bss (the harness's buffers live there)
  la t1, __bss_end
1:bgeu t0, t1, 2f
  sd zero, 0(t0)
  addi t0, t0, 8
  j 1b
2:la t0, __user_bss_start   # and the user data's .bss
  la t1, __user_bss_end
3:bgeu t0, t1, 4f
  sd zero, 0(t0)
  addi t0, t0, 8
  j 3b
4:
  # PMP, top of range (TOR) entries: [text, rodata) R+X, [rodata, data) R, [data, end) R+W.
  # Nothing else matches, so a user-mode access anywhere else faults. The machine mode is not
  # bound by unlocked entries.
  la t0, __user_text_start
  srli t0, t0, 2
  csrw pmpaddr0, t0
  la t0, __user_rodata_start
  srli t0, t0, 2
  csrw pmpaddr1, t0
  la t0, __user_data_start
  srli t0, t0, 2
  csrw pmpaddr2, t0
  la t0, __user_end
  srli t0, t0, 2
  csrw pmpaddr3, t0
  li t0, 0x0b090d00         # cfg0 off, cfg1 TOR|X|R, cfg2 TOR|R, cfg3 TOR|W|R (TOR = 0x08)
  csrw pmpcfg0, t0
  li t0, 7                  # the user mode may read cycle, time and instret (not write them)
  csrw mcounteren, t0
  csrr t1, misa             # scounteren exists only with the supervisor mode (misa.S, bit 18)
  srli t1, t1, 18
  andi t1, t1, 1
  beqz t1, 8f
  csrw scounteren, t0
8:
  call main
  call rt_exit
  .globl rt_halt
rt_halt:
  slli a0, a0, 1            # HTIF exit: tohost = (code << 1) | 1
  ori a0, a0, 1
  la t0, tohost
5:sd a0, 0(t0)
  j 5b

# Traps. From the user mode, mscratch holds the machine stack pointer (harness_run_user sets it);
# in the machine mode it is zero and the trap keeps the current stack.
  .align 2
trap_entry:
  csrrw sp, mscratch, sp
  bnez sp, 6f
  csrrw sp, mscratch, sp    # from the machine mode: back to its own sp, mscratch zero again
6:addi sp, sp, -256
  .irp r, 1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  sd x\r, (\r * 8)(sp)
  .endr
  mv a0, sp
  call machine_trap         # machine.c: returns only to resume the trapped code at mepc
  .irp r, 1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  ld x\r, (\r * 8)(sp)
  .endr
  addi sp, sp, 256
  csrrw sp, mscratch, sp
  bnez sp, 7f
  csrrw sp, mscratch, sp
7:mret

# void harness_run_user(void (*fn)(), const uint64_t args[8]): fn(args...) in the user mode, on
# the user stack; returns when fn returns (its user-mode trampoline asks by ecall).
  .text
  .globl harness_run_user
harness_run_user:
  addi sp, sp, -112
  sd x1, 0(sp)
  sd x8, 8(sp)
  sd x9, 16(sp)
  sd x18, 24(sp)
  sd x19, 32(sp)
  sd x20, 40(sp)
  sd x21, 48(sp)
  sd x22, 56(sp)
  sd x23, 64(sp)
  sd x24, 72(sp)
  sd x25, 80(sp)
  sd x26, 88(sp)
  sd x27, 96(sp)
  la t0, machine_context
  sd sp, 0(t0)
  mv t0, a0
  ld a0, 0(a1)
  ld a2, 16(a1)
  ld a3, 24(a1)
  ld a4, 32(a1)
  ld a5, 40(a1)
  ld a6, 48(a1)
  ld a7, 56(a1)
  ld a1, 8(a1)
  csrw mscratch, sp
  la t1, user_entry
  csrw mepc, t1
  li t1, (3 << 11)          # mstatus.MPP = user
  csrc mstatus, t1
  la sp, _user_stack_top
  .irp r, 1,3,4,6,7,8,9,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  li x\r, 0                 # nothing of the machine side's registers goes to the user
  .endr
  mret

# Called by machine_trap when the user code is done: back to harness_run_user's caller, in the
# machine mode, with the machine stack and registers it saved.
  .globl harness_leave_user
harness_leave_user:
  la t0, machine_context
  ld sp, 0(t0)
  csrw mscratch, zero
  ld x1, 0(sp)
  ld x8, 8(sp)
  ld x9, 16(sp)
  ld x18, 24(sp)
  ld x19, 32(sp)
  ld x20, 40(sp)
  ld x21, 48(sp)
  ld x22, 56(sp)
  ld x23, 64(sp)
  ld x24, 72(sp)
  ld x25, 80(sp)
  ld x26, 88(sp)
  ld x27, 96(sp)
  addi sp, sp, 112
  ret

  .bss
  .align 3
machine_context:
  .skip 8
