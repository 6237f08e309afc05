/*
 * chipc firmware runtime: console output, exit, and byte-wise memory/string helpers
 * (see chipc.h). Deliberately simple: small code beats speed on the transformer CPU.
 */
#include "chipc.h"

extern volatile uint32_t tohost;

int putchar(int c) {
#ifdef CHIPC_CONSOLE_LINUX
  unsigned char b = (unsigned char)c;
  register uint32_t a0 __asm__("a0") = 1;
  register uint32_t a1 __asm__("a1") = (uint32_t)(uintptr_t)&b;
  register uint32_t a2 __asm__("a2") = 1;
  register uint32_t a7 __asm__("a7") = 64;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
#else
  *(volatile uint8_t *)CHIPC_CONSOLE = (uint8_t)c;
#endif
  return (unsigned char)c;
}

#ifndef CHIPC_CONSOLE_LINUX
/* The console input area (link.ld): word 0 = byte count, then the bytes. */
extern volatile uint32_t __input_area[];
extern char __input_size[];
/* Bytes read so far; in .bss, so every start (every service call) reads its input from byte 0. */
static uint32_t input_pos;

/* The byte count, capped at the area's capacity so a bad count never reads past it. */
static uint32_t input_count(void) {
  uint32_t n = __input_area[0], cap = (uint32_t)(uintptr_t)__input_size - 4u;
  return n < cap ? n : cap;
}
#endif

int getchar(void) {
#ifdef CHIPC_CONSOLE_LINUX
  unsigned char b;
  register int32_t a0 __asm__("a0") = 0;
  register uint32_t a1 __asm__("a1") = (uint32_t)(uintptr_t)&b;
  register uint32_t a2 __asm__("a2") = 1;
  register uint32_t a7 __asm__("a7") = 63;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
  return a0 == 1 ? b : -1;
#else
  if (input_pos >= input_count()) return -1;
  uint32_t i = input_pos++;
  return (int)((__input_area[1u + (i >> 2)] >> (8u * (i & 3u))) & 0xffu);
#endif
}

uint32_t input_remaining(void) {
#ifdef CHIPC_CONSOLE_LINUX
  return 0;
#else
  uint32_t n = input_count();
  return input_pos < n ? n - input_pos : 0;
#endif
}

void print_str(const char *s) {
  while (*s) putchar(*s++);
}

int puts(const char *s) {
  print_str(s);
  putchar('\n');
  return 0;
}

void print_u32(uint32_t v) {
  char buf[10];
  int n = 0;
  do {
    uint32_t q = div10_u32(v);
    buf[n++] = (char)('0' + (v - q * 10u));
    v = q;
  } while (v != 0);
  while (n > 0) putchar(buf[--n]);
}

void print_i32(int32_t v) {
  if (v < 0) {
    putchar('-');
    print_u32(0u - (uint32_t)v);
  } else {
    print_u32((uint32_t)v);
  }
}

void print_hex(uint32_t v) {
  for (int shift = 28; shift >= 0; shift -= 4) putchar("0123456789abcdef"[(v >> shift) & 15u]);
}

void exit(int code) {
  register int32_t a0 __asm__("a0") = code;
  register uint32_t a7 __asm__("a7") = 93;
  __asm__ volatile("ecall" : : "r"(a0), "r"(a7) : "memory");
  for (;;) {
  }
}

void exit_tohost(int code) {
  tohost = ((uint32_t)code << 1) | 1u;
  for (;;) {
  }
}

void *memcpy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n--) *d++ = *s++;
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else {
    while (n--) d[n] = s[n];
  }
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; i++) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

int strcmp(const char *a, const char *b) {
  while (*a && *a == *b) {
    a++;
    b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}
