/*
 * fixedpoint: Q16.16 square roots by integer Newton iteration. For a Q16.16 value A (raw
 * integer a = A * 65536) the Q16.16 root is r = floor(sqrt(a * 65536)), computed exactly on
 * 64-bit integers (mul/mulhu, and libgcc's __udivdi3 for the 64-bit division). Prints the
 * iterates for sqrt(2), a table of roots (truncated to 5 decimals), and the golden ratio
 * phi = (1 + sqrt(5)) / 2 with its reciprocal 2^32 / phi.
 * Self-checks: r*r <= a*65536 < (r+1)*(r+1) for every root; phi - 1/phi is 1 within 1 ulp.
 * Exit status: bitmask of failed checks.
 */
#include "chipc.h"

/* Writes the Q16.16 value r as "<int>.<5 decimals>", decimals = floor(frac * 100000 / 65536). */
static void print_q16(uint32_t r) {
  print_u32(r >> 16);
  putchar('.');
  uint32_t frac = (uint32_t)(((uint64_t)(r & 0xFFFFu) * 100000u) >> 16);
  for (uint32_t div = 10000; div != 0; div /= 10) putchar((char)('0' + (frac / div) % 10));
}

/* The iterates of the last isqrt64 call (64-bit entries, variable index: sh3add). */
static uint64_t history[40];
static unsigned history_len;

/*
 * floor(sqrt(n)) by Newton's method: x0 = 2^ceil(bits(n)/2) > sqrt(n), then
 * x <- floor((x + floor(n / x)) / 2) while that decreases. Records every iterate in history.
 */
static uint32_t isqrt64(uint64_t n) {
  history_len = 0;
  if (n < 2) return (uint32_t)n;
  int bits = 0;
  for (uint64_t m = n; m != 0; m >>= 1) bits++;
  uint64_t x = (uint64_t)1 << ((bits + 1) / 2);
  for (;;) {
    if (history_len < sizeof history / sizeof history[0]) history[history_len++] = x;
    uint64_t y = (x + n / x) >> 1;
    if (y >= x) return (uint32_t)x;
    x = y;
  }
}

/* Q16.16 sqrt of raw a; sets *ok to 0 unless r is exactly floor(sqrt(a * 65536)). */
static uint32_t q16_sqrt(uint32_t a, int *ok) {
  uint64_t n = (uint64_t)a << 16;
  uint32_t r = isqrt64(n);
  uint64_t lo = (uint64_t)r * r, hi = (uint64_t)(r + 1) * (r + 1);
  if (!(lo <= n && n < hi)) *ok = 0;
  return r;
}

struct sample {
  const char *name;
  uint32_t raw;
};

static const struct sample samples[] = {
  {"2", 2u << 16}, {"3", 3u << 16}, {"10", 10u << 16}, {"0.5", 1u << 15},
  {"144", 144u << 16}, {"30000", 30000u << 16}, {"2^-16", 1u},
};

int main(void) {
  int failed = 0;
  int ok = 1;
  puts("Newton iterates for sqrt(2) in Q16.16:");
  q16_sqrt(2u << 16, &ok);
  if (!ok) failed |= 1;
  for (unsigned i = 0; i < history_len; i++) {
    print_str("  x = ");
    print_q16((uint32_t)history[i]);
    putchar('\n');
  }

  for (unsigned i = 0; i < sizeof samples / sizeof samples[0]; i++) {
    ok = 1;
    uint32_t r = q16_sqrt(samples[i].raw, &ok);
    print_str("sqrt(");
    print_str(samples[i].name);
    print_str(") = ");
    print_q16(r);
    print_str("  raw 0x");
    print_hex(r);
    putchar('\n');
    if (!ok) failed |= 2;
  }

  ok = 1;
  uint32_t phi = ((1u << 16) + q16_sqrt(5u << 16, &ok)) >> 1;
  uint32_t inv = (uint32_t)(((uint64_t)1 << 32) / phi);
  if (!ok) failed |= 4;
  print_str("phi = ");
  print_q16(phi);
  print_str("  1/phi = ");
  print_q16(inv);
  putchar('\n');
  int32_t diff = (int32_t)(phi - inv) - 65536;
  if (diff < -1 || diff > 1) failed |= 8;

  puts(failed ? "fixedpoint: FAIL" : "fixedpoint: ok");
  return failed;
}
