/*
 * chipc firmware start-up code (RV32IM + Zba, no CSRs).
 * _start: set sp to the top of the NOLOAD stack section, zero .bss, call main(), then exit
 * with main's return value through the Linux-style exit ecall (a7 = 93, code in a0), which
 * both the golden emulator and qemu-riscv32 understand.
 */
    .file "start.S"   /* a fixed STT_FILE name (else ld names the temporary object) */
    .section .text.start, "ax", @progbits
    .globl _start
    .type _start, @function
_start:
    la   sp, __stack_top
    /* Zero [__bss_start, __bss_end): both are 4-aligned by link.ld. */
    la   t0, __bss_start
    la   t1, __bss_end
1:  bgeu t0, t1, 2f
    sw   zero, 0(t0)
    addi t0, t0, 4
    j    1b
2:  call main
    /* a0 already holds main's return value. */
    li   a7, 93
    ecall
    /* Not reached on a host that honours the exit ecall; spin rather than run off the end. */
3:  j    3b
    .size _start, . - _start

/*
 * The tohost word: a host that watches it (HTIF style, or the golden emulator's `tohost`
 * halt) sees (code << 1) | 1 when a program calls chipc_exit_tohost(); start-up never writes it.
 */
    .section .tohost, "aw", @progbits
    .balign 4
    .globl tohost
    .type tohost, @object
tohost:
    .word 0
    .size tohost, 4
