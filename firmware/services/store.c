/*
 * store: the hashed filesystem store as a service (docs/store.md "Store firmware service";
 * the library is firmware/lib/store.c). The host writes a request into the mailbox at word
 * STORE_MAILBOX of the service area and starts the program; the answer goes to the console as
 * values of three bytes each (little-endian; every value is < 2^24) and the exit code is the
 * result code (0 … 6 as the model's RESULT_CODES, 7 = bad request).
 *
 *   mailbox words             op  answer on OK
 *   1 (init) F N M C P V W    W = area words available; nothing
 *   2 (put)  n c name content slot, replaced (0/1)
 *   3 (get)  n · name         c, then the c content tokens
 *   4 (delete) n · name       nothing
 *   5 (list)                  fileCount, then per file n and its name tokens (dir slot order)
 *
 * (· = word 2, unused.) Nothing is written to the console on failure. When n > N (or, for put,
 * c > M) the host sends no tokens: the checks need only n and c.
 */
#include <stdint.h>
#include "chipc.h"
#include "store.h"

extern uint32_t __service_area[];

#define OP_INIT 1u
#define OP_PUT 2u
#define OP_GET 3u
#define OP_DELETE 4u
#define OP_LIST 5u

/* One console byte: a plain `sb` of v's low 8 bits (inline asm: C's uint8_t cast would add a
 * zero-extension per byte). */
static inline __attribute__((always_inline)) void out_byte(uint32_t v) {
  __asm__ volatile("sb %0, 0(%1)" : : "r"(v), "r"(CHIPC_CONSOLE) : "memory");
}

/* v (< 2^24) as three bytes, low byte first: one `sb` and one shift per byte. A varint would save
 * bytes on small values but costs a compare, an `or` and a branch per byte, and the store's
 * values are mostly token ids ≥ 2^14 (three varint bytes anyway). */
static inline __attribute__((always_inline)) void out_u24_inline(uint32_t v) {
  out_byte(v);
  out_byte(v >> 8);
  out_byte(v >> 16);
}

static void out_u24(uint32_t v) {
  out_u24_inline(v);
}

/* The three low bytes of the token id at b (< 2^24): one `lw`, then `sb` and a shift per byte.
 * Three `lbu`s would save a token (their results fit one `E` where the word needs `D`, `E`), but
 * each load moves the RAM's read row from its idle row and back, and that work per token costs
 * more than the token (docs/store.md "Cost"). */
static inline __attribute__((always_inline)) void out_bytes3(const uint8_t *b) {
  uint32_t v = *(const uint32_t *)b;
  out_byte(v);
  out_byte(v >> 8);
  out_byte(v >> 16);
}

/* Each token as three bytes, four tokens per iteration (inlined: a call per token would cost more
 * than its bytes; the unrolled loop pays its pointer step and branch once per four tokens). */
static void out_tokens(const uint32_t *t, uint32_t count) {
  const uint8_t *b = (const uint8_t *)t;
  const uint8_t *end = b + 4u * count;
  for (uint32_t r = count & 3u; r != 0; r--, b += 4) out_bytes3(b);
  while (b != end) {
    out_bytes3(b);
    out_bytes3(b + 4);
    out_bytes3(b + 8);
    out_bytes3(b + 12);
    b += 16;
  }
}

static const store_sink console_sink = { out_u24, out_tokens };

int main(void) {
  uint32_t *area = __service_area;
  const uint32_t *mb = area + STORE_MAILBOX;
  switch (mb[0]) {
    case OP_INIT:
      return store_init(area, mb + 1, mb[7]);
    case OP_PUT: {
      uint32_t slot, replaced;
      int r = store_put(area, mb + 3, mb[1], mb[2], &slot, &replaced);
      if (r == STORE_OK) {
        out_u24(slot);
        out_u24(replaced);
      }
      return r;
    }
    case OP_GET:
      return store_get(area, mb + 3, mb[1], &console_sink);
    case OP_DELETE:
      return store_delete(area, mb + 3, mb[1]);
    case OP_LIST:
      return store_list(area, &console_sink);
    default:
      return STORE_BAD_REQUEST;
  }
}
