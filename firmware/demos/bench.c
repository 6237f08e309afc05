/*
 * bench: sieve of Eratosthenes over the odd numbers below 100000 (bit i stands for 2i + 1,
 * a 6.25 KiB bitset indexed by word: sh2add), then counts and sums the primes.
 * Self-check: pi(100000) = 9592, the sum of the primes below 100000 is 454396537 and the
 * largest is 99991 (known values). Exit status: bitmask of failed checks.
 */
#include "chipc.h"

#define LIMIT 100000u
#define ODD_BITS (LIMIT / 2u)

static uint32_t composite[(ODD_BITS + 31u) / 32u];

int main(void) {
  /* Odd i >= 3 with i*i < LIMIT: mark i*i, i*i + 2i, ... (bit index (m - 1) / 2). */
  for (uint32_t i = 3; i * i < LIMIT; i += 2) {
    if (composite[(i >> 1) >> 5] & (1u << ((i >> 1) & 31u))) continue;
    for (uint32_t m = i * i; m < LIMIT; m += 2 * i) composite[(m >> 1) >> 5] |= 1u << ((m >> 1) & 31u);
  }
  uint32_t count = 1, sum = 2, largest = 2; /* the prime 2 */
  for (uint32_t k = 1; k < ODD_BITS; k++) {
    if (!(composite[k >> 5] & (1u << (k & 31u)))) {
      uint32_t p = 2 * k + 1;
      count++;
      sum += p;
      largest = p;
    }
  }
  print_str("primes below ");
  print_u32(LIMIT);
  print_str(": ");
  print_u32(count);
  print_str("\nsum: ");
  print_u32(sum);
  print_str("\nlargest: ");
  print_u32(largest);
  putchar('\n');
  int failed = 0;
  if (count != 9592u) failed |= 1;
  if (sum != 454396537u) failed |= 2;
  if (largest != 99991u) failed |= 4;
  puts(failed ? "bench: FAIL" : "bench: ok");
  return failed;
}
