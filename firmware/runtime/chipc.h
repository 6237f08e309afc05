/*
 * chipc firmware runtime API (freestanding, no libc): console output through the console
 * device, exit, the few memory/string helpers gcc may call on its own, and a division by 10 that
 * divides by none (div10_u32).
 *
 * Console: by default every byte is a `sb` to the MMIO byte at CHIPC_CONSOLE (0x10000000).
 * Built with -DCHIPC_CONSOLE_LINUX, bytes go out through the Linux write syscall instead
 * (ecall a7 = 64, fd 1), so the same program prints under qemu-riscv32, which has no MMIO console.
 *
 * Console input: the bytes a host feeds after the program is loaded (docs/token-protocol.md
 * "Console input") lie in the NOLOAD `.input` area the linker scripts reserve: word 0 at
 * __input_area is the byte count n, byte i at __input_area + 4 + i, capacity __input_size - 4
 * bytes (-Wl,--defsym=__input_size=N; 1 KiB by default). getchar() reads them in order; with
 * -DCHIPC_CONSOLE_LINUX it reads standard input instead (Linux read syscall, ecall a7 = 63, fd 0).
 */
#ifndef CHIPC_H
#define CHIPC_H

#include <stddef.h>
#include <stdint.h>

#define CHIPC_CONSOLE 0x10000000u

/* Write one byte c to the console; returns c (as unsigned char). */
int putchar(int c);
/* The next console input byte (0…255), or -1 (EOF) after the last one. */
int getchar(void);
/* Console input bytes not yet read by getchar (with -DCHIPC_CONSOLE_LINUX: always 0). */
uint32_t input_remaining(void);

/* Write the NUL-terminated string s followed by '\n' (as C puts); returns 0. */
int puts(const char *s);
/* Write the NUL-terminated string s with no newline. */
void print_str(const char *s);
/* Write v in decimal, no leading zeros ("0" for 0). */
void print_u32(uint32_t v);
/* Write v in decimal with a leading '-' when v < 0 (INT32_MIN included). */
void print_i32(int32_t v);
/* Write v as exactly 8 lower-case hex digits, no prefix. */
void print_hex(uint32_t v);

/*
 * floor(v / 10) for every 32-bit v, without a division: floor(v * m / 2^35) with m = 0xcccccccd =
 * ceil(2^35 / 10). With v = 10 q + r, v m / 2^35 = v / 10 + v e / (10 * 2^35), e = 10 m - 2^35 = 2,
 * and v e < 2^33 < 2^35, so the excess stays below 1 / 10 <= (10 - r) / 10. A division costs the
 * chip 2 tokens per radix-16 quotient digit (a multiply 1 to 3), and gcc 12 compiles v / 10 and
 * v % 10 to divu and remu on RV32.
 */
static inline uint32_t div10_u32(uint32_t v) {
  return (uint32_t)(((uint64_t)v * 0xcccccccdu) >> 32) >> 3;
}

/* Halt with status code: ecall a7 = 93, a0 = code. Never returns. */
void exit(int code) __attribute__((noreturn));
/* Halt by storing (code << 1) | 1 to the tohost word (HTIF convention). Never returns. */
void exit_tohost(int code) __attribute__((noreturn));

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);

#endif
