/*
 * chipc bignum library (docs/bignum.md): exact multi-limb integer arithmetic for the RV32IM+Zba
 * firmware, no libc, no 64-bit division (the quotient digits come from 32-bit divu on 16-bit
 * halves, so nothing is pulled from libgcc).
 *
 * Two layers:
 *  - bnu_*: unsigned natural numbers as little-endian arrays of 32-bit limbs with an explicit
 *    length n (value = sum a[i] * 2^(32 i), i < n). Lengths may be 0 (the value 0). Unless a
 *    contract says otherwise an input may have zero top limbs; bnu_norm strips them.
 *  - bn_*: signed integers in sign-magnitude, the struct bn_t below: `neg` (0 or 1), `len` (limbs
 *    of the magnitude, normalized: no zero top limb), then the limbs. Zero is always neg = 0,
 *    len = 0 ("negative zero" is never produced). This is also the word layout of an operand in
 *    the service area (firmware/services/bignum.c).
 * Every result buffer must have the capacity its contract names; nothing checks it at run time.
 */
#ifndef CHIPC_BIGNUM_H
#define CHIPC_BIGNUM_H

#include <stdint.h>
#include "bn-unit.h"

/* The largest number of bits a bn_t operand may have in the service (8,192 bits = 256 limbs, so the
 * product of two 4,096-bit numbers fits). The bnu_* functions have no limit of their own. */
#define BN_MAX_BITS 8192u
#define BN_MAX_LIMBS (BN_MAX_BITS / 32u)

/* Status codes (also the service's exit codes). */
#define BN_OK 0
#define BN_EDIVZERO 1

/* A signed number: neg (0 = non-negative, 1 = negative), len limbs of magnitude d[0..len). */
typedef struct bn {
  uint32_t neg;
  uint32_t len;
  uint32_t d[];
} bn_t;

/* Static storage for a bn_t with room for `limbs` limbs: BN_STORAGE(x, 300); then bn_t *p = BN(x). */
#define BN_STORAGE(name, limbs) static uint32_t name[2u + (limbs)]
#define BN(storage) ((bn_t *)(void *)(storage))

/* ---- unsigned limb arrays ------------------------------------------------------------------ */

/* Length of a[0..n) without its zero top limbs (0 when the value is 0). */
uint32_t bnu_norm(const uint32_t *a, uint32_t n);

/* r[0..n) = a[0..n). Word copy, ascending: r may equal a, or lie below a (r <= a). */
void bnu_copy(uint32_t *r, const uint32_t *a, uint32_t n);

/* r[0..n) = 0. */
void bnu_zero(uint32_t *r, uint32_t n);

/* Compare the values a[0..an) and b[0..nb) (zero top limbs allowed): -1, 0 or 1. */
int bnu_cmp(const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t nb);

/* r[0..an) = (a + b) mod 2^(32 an), returns the carry out (0 or 1). Requires an >= nb.
 * r may equal a or b (same start), otherwise must not overlap them. */
uint32_t bnu_add(uint32_t *r, const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t nb);

/* r[0..an) = (a - b) mod 2^(32 an), returns the borrow out (1 when a < b, else 0).
 * Requires an >= nb. r may equal a or b (same start), otherwise must not overlap them. */
uint32_t bnu_sub(uint32_t *r, const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t nb);

/* r[0..an+nb) = a * b (schoolbook, mul + mulhu). r must not overlap a or b. an, nb may be 0. */
void bnu_mul(uint32_t *r, const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t nb);

/* r[0..n) = a * m mod 2^(32 n) + c, returns the high limb floor((a * m + c) / 2^(32 n)).
 * r may equal a. */
uint32_t bnu_mul_1(uint32_t *r, const uint32_t *a, uint32_t n, uint32_t m, uint32_t c);

/* q[0..n) = floor(a / d), returns a mod d, for a[0..n) and 1 <= d < 2^16 (divu on 16-bit halves).
 * q may equal a. d = 0 or d >= 2^16 is outside the contract. */
uint32_t bnu_divmod_small(uint32_t *q, const uint32_t *a, uint32_t n, uint32_t d);

/* Knuth's algorithm D. For a[0..an), b[0..nb) with the top limb b[nb-1] != 0 (nb >= 1):
 * q[0..an-nb+1) = floor(a / b) (when an < nb nothing is written to q), r[0..nb) = a mod b.
 * work: scratch of at least an + nb + 1 limbs. q, r and work must not overlap each other, a or b.
 * Returns BN_OK, or BN_EDIVZERO (nothing written) when nb == 0 or b[nb-1] == 0. */
int bnu_divmod(uint32_t *q, uint32_t *r, const uint32_t *a, uint32_t an, const uint32_t *b,
               uint32_t nb, uint32_t *work);

/* r[0..n+1) = a[0..n) << s for 0 <= s < 32. r may equal a. */
void bnu_shl(uint32_t *r, const uint32_t *a, uint32_t n, unsigned s);

/* r[0..n) = a[0..n) >> s for 0 <= s < 32 (bits shifted out are dropped). r may equal a. */
void bnu_shr(uint32_t *r, const uint32_t *a, uint32_t n, unsigned s);

/* Writes the decimal digits of a[0..n) to buf (no sign, no leading zeros, "0" for 0), NUL
 * terminated; returns the number of digits. a is destroyed (left 0). buf needs
 * floor(32 n log10 2) + 2 bytes; 10 n + 1 always suffices. */
uint32_t bnu_to_dec(char *buf, uint32_t *a, uint32_t n);

/* ---- signed (bn_t) ---------------------------------------------------------------------- */
/* Inputs: neg in {0, 1}; len may include zero top limbs (read as the same value; -0 reads as 0).
 * Outputs are normalized (no zero top limb, zero is neg = 0). The result must not overlap any
 * input unless stated. Capacities are in limbs of r->d. */

/* r = a (capacity a->len). r may equal a. */
void bn_copy(bn_t *r, const bn_t *a);

/* -1, 0, 1 as a < b, a == b, a > b (signed values). */
int bn_cmp(const bn_t *a, const bn_t *b);

/* r = a + b (capacity max(a->len, b->len) + 1). */
void bn_add(bn_t *r, const bn_t *a, const bn_t *b);

/* r = a - b (capacity max(a->len, b->len) + 1). */
void bn_sub(bn_t *r, const bn_t *a, const bn_t *b);

/* r = a * b (capacity a->len + b->len). */
void bn_mul(bn_t *r, const bn_t *a, const bn_t *b);

/* Truncating division like C: q = trunc(a / b), r = a - q b (r has a's sign or is 0, |r| < |b|).
 * Capacities: q max(a->len - b->len + 1, 1), r b->len. work: a->len + b->len + 1 limbs.
 * Returns BN_EDIVZERO (q and r untouched) when b == 0. */
int bn_divmod(bn_t *q, bn_t *r, const bn_t *a, const bn_t *b, uint32_t *work);

/* Floor division like Python: q = floor(a / b), r = a - q b (r has b's sign or is 0).
 * Capacities: q max(a->len - b->len + 1, 1) + 1, r b->len. work: a->len + b->len + 1 limbs.
 * Returns BN_EDIVZERO (q and r untouched) when b == 0. */
int bn_fdivmod(bn_t *q, bn_t *r, const bn_t *a, const bn_t *b, uint32_t *work);

/* Prints a in decimal ('-' first when negative) to the console. Uses work of a->len limbs and a
 * stack buffer; a is not modified. Requires a->len <= BN_MAX_LIMBS. */
void bn_print(const bn_t *a, uint32_t *work);

/*
 * a[0..n) = floor(a / 10^9) in place (n >= 1); returns a mod 10^9. No division instruction (one
 * costs the chip 2 tokens per quotient digit): per limb one two-by-one division by a precomputed
 * inverse (Moller and Granlund, "Improved division by invariant integers", algorithm 4), exact for
 * a normalized divisor and a high word below it. The divisor is d = 4 * 10^9 (top bit set), the
 * dividend shifted left by 2 on the fly: r is 4 times the running remainder, so r | (x >> 30) <=
 * d - 1, and the shift is undone at the end. Inline, so that the caller's loop (bnu_to_dec, the
 * interpreter's decimal output) keeps the constants in registers and pays no call.
 */
static inline uint32_t bnu_divmod_1e9(uint32_t *a, uint32_t n) {
  const uint32_t d = 4000000000u, inv = 316718722u; /* inv = floor((2^64 - 1) / d) - 2^32 */
  uint32_t r = 0;
#ifdef CHIPC_BN_UNIT
  bn_carry_clear();
#endif
  while (n > 0) {
    n--;
    uint32_t x = a[n];
    uint32_t u1 = r | (x >> 30), u0 = x << 2;
    /* (q1, q0) = inv * u1 + (u1 + 1, u0) */
#ifdef CHIPC_BN_UNIT
    /* the product's high word + u1 < 2^32 (u1 < d), so the unit's carry C0 ends at 0 */
    uint32_t q0 = bn_mac(u0, inv, u1);
    uint32_t q1 = bn_carry_take(u1) + 1u;
#else
    uint32_t q0 = inv * u1 + u0;
    uint32_t q1 = (uint32_t)(((uint64_t)inv * u1) >> 32) + u1 + (q0 < u0) + 1u;
#endif
    uint32_t rr = u0 - q1 * d;
    if (rr > q0) {
      q1--;
      rr += d;
    }
    if (rr >= d) {
      q1++;
      rr -= d;
    }
    a[n] = q1;
    r = rr;
  }
  return r >> 2;
}


#endif
