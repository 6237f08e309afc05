/*
 * bignum service (docs/bignum.md): one big-integer operation per request, for testing the
 * firmware bignum library (firmware/lib/bignum.c) against BigInt on the golden emulator and
 * through the weights. Request, in 32-bit words at __service_area:
 *   [0] op   [1] area size in words (from __service_area to the end of data RAM)
 *   [2..] operand A: neg, len, len limbs; then operand B: neg, len, len limbs.
 * On success (exit 0) the result is written from word [2] on: one number (neg, len, limbs), or
 * for the divmod ops the quotient then the remainder. cmp results are the number -1, 0 or 1.
 * Exit 1: division by zero; exit 2: bad request (unknown op, neg not 0/1, a negative operand to
 * an unsigned op, an operand over BN_MAX_LIMBS limbs, or the area too small for the operation).
 * After exit 1 or 2 the area is unchanged. No state is kept between requests.
 */
#include "bignum.h"

extern uint32_t __service_area[];

enum {
  OP_UADD = 1, OP_USUB = 2, OP_UMUL = 3, OP_UDIVMOD = 4, OP_UCMP = 5,
  OP_ADD = 6, OP_SUB = 7, OP_MUL = 8, OP_DIVMOD = 9, OP_CMP = 10, OP_FDIVMOD = 11,
};

#define EXIT_OK 0
#define EXIT_DIVZERO 1
#define EXIT_BAD 2

/* Moves the number at src down to dst (dst <= src), returns the word after it. */
static uint32_t *put(uint32_t *dst, const bn_t *src) {
  uint32_t n = 2 + src->len;
  bnu_copy(dst, (const uint32_t *)src, n);
  return dst + n;
}

int main(void) {
  uint32_t *area = __service_area;
  uint32_t op = area[0], size = area[1];
  if (op < OP_UADD || op > OP_FDIVMOD || size < 6) return EXIT_BAD;
  bn_t *a = (bn_t *)(area + 2);
  if (a->neg > 1 || a->len > BN_MAX_LIMBS || 4 + a->len + 2 > size) return EXIT_BAD;
  bn_t *b = (bn_t *)(a->d + a->len);
  if (b->neg > 1 || b->len > BN_MAX_LIMBS) return EXIT_BAD;
  if (op <= OP_UCMP && (a->neg | b->neg) != 0) return EXIT_BAD;
  uint32_t la = a->len, lb = b->len;
  uint32_t *free = b->d + lb; /* first word after the request */
  uint32_t used = (uint32_t)(free - area);
  uint32_t big = la > lb ? la : lb;
  /* Scratch each op needs after the request, in words (bn_t headers included). */
  uint32_t need;
  switch (op) {
    case OP_UMUL: case OP_MUL: need = 2 + la + lb; break;
    case OP_UDIVMOD: case OP_DIVMOD: case OP_FDIVMOD:
      need = (2 + (la > lb ? la - lb + 1 : 1) + 1) + (2 + lb) + (la + lb + 1);
      break;
    case OP_UCMP: case OP_CMP: need = 0; break;
    default: need = 2 + big + 1; break;
  }
  if (used > size || need > size - used) return EXIT_BAD;

  bn_t *r = (bn_t *)free;
  switch (op) {
    case OP_UCMP: case OP_CMP: {
      int c = bn_cmp(a, b);
      area[2] = c < 0;
      area[3] = c != 0;
      area[4] = 1;
      return EXIT_OK;
    }
    case OP_UADD: case OP_ADD: bn_add(r, a, b); break;
    case OP_SUB: bn_sub(r, a, b); break;
    case OP_USUB: {
      /* (a - b) mod 2^(32 max(la, lb)); neg holds the borrow out (1 when a < b). */
      uint32_t borrow;
      if (la >= lb) {
        borrow = bnu_sub(r->d, a->d, la, b->d, lb);
      } else {
        bnu_zero(r->d, lb);
        bnu_copy(r->d, a->d, la);
        borrow = bnu_sub(r->d, r->d, lb, b->d, lb);
      }
      r->len = bnu_norm(r->d, big);
      r->neg = borrow;
      break;
    }
    case OP_UMUL: case OP_MUL: bn_mul(r, a, b); break;
    default: { /* the divmod ops */
      bn_t *q = r;
      bn_t *rem = (bn_t *)(q->d + (la > lb ? la - lb + 1 : 1) + 1);
      uint32_t *work = rem->d + lb;
      int st = op == OP_FDIVMOD ? bn_fdivmod(q, rem, a, b, work) : bn_divmod(q, rem, a, b, work);
      if (st != BN_OK) return EXIT_DIVZERO;
      put(put(area + 2, q), rem);
      return EXIT_OK;
    }
  }
  put(area + 2, r);
  return EXIT_OK;
}
