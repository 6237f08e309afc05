/*
 * crc32: CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, init and final xor 0xFFFFFFFF)
 * computed two ways, bit by bit and with a 256-entry table built at run time, over the check
 * string "123456789" (known value 0xCBF43926) and a 512-byte pseudo-random buffer.
 * Exit status: a bitmask of failed checks (0 = all passed).
 */
#include "chipc.h"

#define BUF_LEN 512

static uint32_t table[256];
static uint8_t buffer[BUF_LEN];

/* CRC-32 of buf[0..n), one bit at a time. */
static uint32_t crc32_bitwise(const uint8_t *buf, uint32_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint32_t i = 0; i < n; i++) {
    crc ^= buf[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

/* table[b] = the CRC register after shifting byte b through 8 rounds. */
static void build_table(void) {
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t c = b;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    table[b] = c;
  }
}

/* CRC-32 of buf[0..n), one byte at a time through the table (word index: sh2add). */
static uint32_t crc32_table(const uint8_t *buf, uint32_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint32_t i = 0; i < n; i++) crc = table[(crc ^ buf[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

static void report(const char *what, uint32_t crc) {
  print_str("crc32(");
  print_str(what);
  print_str(") = ");
  print_hex(crc);
  putchar('\n');
}

int main(void) {
  static const char check[] = "123456789";
  int failed = 0;
  build_table();

  uint32_t a = crc32_bitwise((const uint8_t *)check, 9);
  uint32_t b = crc32_table((const uint8_t *)check, 9);
  report("\"123456789\"", a);
  if (a != 0xCBF43926u) failed |= 1;
  if (b != 0xCBF43926u) failed |= 2;

  /* buffer[i] = bits 16..23 of the LCG x <- x * 1103515245 + 12345 (mod 2^32), x0 = 1. */
  uint32_t x = 1;
  for (uint32_t i = 0; i < BUF_LEN; i++) {
    x = x * 1103515245u + 12345u;
    buffer[i] = (uint8_t)(x >> 16);
  }
  uint32_t c = crc32_bitwise(buffer, BUF_LEN);
  uint32_t d = crc32_table(buffer, BUF_LEN);
  report("lcg[512]", c);
  if (c != d) failed |= 4;
  if (crc32_table(buffer, 0) != 0) failed |= 8;

  puts(failed ? "crc32: FAIL" : "crc32: ok");
  return failed;
}
