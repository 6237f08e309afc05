/*
 * store: the hashed filesystem store as a service (docs/store.md "Store firmware service";
 * the library is firmware/lib/store.c). The host writes a request into the mailbox at word
 * STORE_MAILBOX of the service area and starts the program; the answer goes to the console as
 * unsigned LEB128 varints and the exit code is the result code (0 … 6 as the model's
 * RESULT_CODES, 7 = bad request).
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

/* v as an unsigned LEB128 varint: 7 bits per byte, low group first, high bit on all but the last. */
static inline __attribute__((always_inline)) void out_varint_inline(uint32_t v) {
  while (v >= 0x80u) {
    out_byte(v | 0x80u);
    v >>= 7;
  }
  out_byte(v);
}

static void out_varint(uint32_t v) {
  out_varint_inline(v);
}

/* Each token as a varint (inlined: a call per token would cost more than its bytes). */
static void out_tokens(const uint32_t *t, uint32_t count) {
  const uint32_t *end = t + count;
  do {
    out_varint_inline(*t++);
  } while (t != end);
}

static const store_sink console_sink = { out_varint, out_tokens };

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
        out_varint(slot);
        out_varint(replaced);
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
