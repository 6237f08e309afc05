/*
 * The interpreter's values: integer operations (firmware/lib/bignum.c; Python's floor division
 * and modulo), string concatenation, comparisons, and decimal output. Every operation works on
 * the value stack and puts its result in a temporary (or points at a constant): allocating may
 * compact the heap and move an operand, so operands are read again after each talloc.
 */
#include "interp.h"

const uint32_t V_ZERO_W[2] = {V_POS, 0};
const uint32_t V_ONE_W[3] = {V_POS, 1, 1};

#define TOP(k) ((val *)R.sp[-(k)])

static inline uint32_t mulhi(uint32_t a, uint32_t b) {
  return (uint32_t)(((uint64_t)a * b) >> 32);
}

static uint32_t clz(uint32_t x) {
  uint32_t n = 0;
  while (!(x & 0x80000000u)) {
    x <<= 1;
    n++;
  }
  return n;
}

static void type_error(void) __attribute__((noreturn));
static void type_error(void) {
  fail("type error");
}

static void too_large(void) __attribute__((noreturn));
static void too_large(void) {
  fail("number too large");
}

/* ---- decimal output ------------------------------------------------------------------------ */

/* Writes g > 0, g < 10^9, in decimal without leading zeros (the top base-10^9 digit of a number). */
static void out_top(uint32_t g) {
  char buf[9];
  uint32_t i = 9;
  do {
    uint32_t q = mulhi(g, 0xCCCCCCCDu) >> 3; /* g / 10 */
    buf[--i] = (char)('0' + (g - q * 10u));
    g = q;
  } while (g != 0);
  while (i < 9) outc(buf[i++]);
}

/* Writes x < 10^4 as 4 digits, from the top: F = x * ceil(2^28 / 1000) is x / 1000 in 4.28 fixed
 * point (exact enough for 4 digits), so each digit is F >> 28, then F = frac(F) * 10. */
#define NEXT_DIGIT(f) ((f) = ((f) & 0x0fffffffu) * 5u * 2u)
static inline __attribute__((always_inline)) void out4(uint32_t x) {
  uint32_t f = x * 268436u;
  outc((int)('0' + (f >> 28)));
  NEXT_DIGIT(f);
  outc((int)('0' + (f >> 28)));
  NEXT_DIGIT(f);
  outc((int)('0' + (f >> 28)));
  NEXT_DIGIT(f);
  outc((int)('0' + (f >> 28)));
}

/* Writes g < 10^9 as exactly 9 digits: the top one, then two halves of 4 (divisions by constants
 * as multiplications: mulhu(g, ceil(2^58 / 10^8)) >> 26 = g / 10^8 for g < 2^30, and
 * mulhu(r, ceil(2^45 / 10^4)) >> 13 = r / 10^4 for r < 10^8). */
static __attribute__((noinline)) void out9(uint32_t g) {
  uint32_t d = mulhi(g, 2882303762u) >> 26, r = g - d * 100000000u;
  uint32_t h = mulhi(r, 3518437209u) >> 13;
  outc((int)('0' + d));
  out4(h);
  out4(r - h * 10000u);
}

void print_top(uint32_t k) {
  val *v = TOP(k);
  uint32_t n = v->len;
  if (v->tag == V_STR) {
    const uint8_t *s = (const uint8_t *)v->d;
    for (uint32_t i = 0; i < n; i++) outc(s[i]);
    return;
  }
  if (n == 0) {
    outc('0');
    return;
  }
  uint32_t *save = R.temp_top;
  uint32_t *w = talloc(2 * n + (n >> 3) + 2); /* a copy, then the base-10^9 digits (<= 1.07 n + 1) */
  v = TOP(k);
  uint32_t *g = w + n, ng = 0;
  wcopy(w, v->d, n);
  do {
    g[ng++] = bnu_divmod_1e9(w, n); /* firmware/lib/bignum.h */
    if (w[n - 1] == 0) n--;
  } while (n > 0);
  if (v->tag == V_NEG) outc('-');
  out_top(g[--ng]);
  while (ng > 0) out9(g[--ng]);
  R.temp_top = save;
}

/* ---- integers ---------------------------------------------------------------------------------- */

static void check_len(const val *r) {
  if (r->len > MAX_LIMBS) too_large();
}

static val *add_sub(uint32_t op) {
  val *a = TOP(2), *b = TOP(1);
  uint32_t n = (a->len > b->len ? a->len : b->len) + 1u;
  val *r = (val *)talloc(2 + n);
  a = TOP(2);
  b = TOP(1);
  if (op == OP_ADD) {
    bn_add((bn_t *)r, (const bn_t *)a, (const bn_t *)b);
  } else {
    bn_sub((bn_t *)r, (const bn_t *)a, (const bn_t *)b);
  }
  check_len(r);
  return r;
}

static val *mul(void) {
  val *a = TOP(2), *b = TOP(1);
  if (a->len == 0 || b->len == 0) return V_ZERO;
  if (a->len + b->len - 1u > MAX_LIMBS) too_large(); /* the product has at least that many limbs */
  val *r = (val *)talloc(2 + a->len + b->len);
  a = TOP(2);
  b = TOP(1);
  bn_mul((bn_t *)r, (const bn_t *)a, (const bn_t *)b);
  check_len(r);
  return r;
}

/* Floor division / modulo. One temporary [q | r | work], laid out so that the result is its top
 * part and the rest is released at once. */
static __attribute__((noinline)) val *divmod(uint32_t op) {
  val *a = TOP(2), *b = TOP(1);
  if (b->len == 0) fail("division by zero");
  uint32_t an = a->len, nb = b->len;
  uint32_t qw = 2 + (an >= nb ? an - nb + 1 : 1) + 1, rw = 2 + nb, total = qw + rw + an + nb + 1;
  uint32_t *t = talloc(total);
  a = TOP(2);
  b = TOP(1);
  val *q, *r;
  uint32_t *work;
  if (op == OP_DIV) {
    q = (val *)(t + total - qw);
    r = (val *)t;
    work = t + rw;
  } else {
    r = (val *)(t + total - rw);
    q = (val *)t;
    work = t + qw;
  }
  bn_fdivmod((bn_t *)q, (bn_t *)r, (const bn_t *)a, (const bn_t *)b, work);
  val *res = op == OP_DIV ? q : r;
  R.temp_top = (uint32_t *)res;
  return res;
}

/* a ** e, e >= 0, by squaring (left to right) between two buffers sized for the result. */
static __attribute__((noinline)) val *power(void) {
  val *a = TOP(2), *e = TOP(1);
  if (e->tag == V_NEG) fail("negative exponent");
  if (e->len == 0) return V_ONE;
  if (a->len == 0) return V_ZERO;
  uint32_t odd = e->d[0] & 1u;
  if (a->len == 1 && a->d[0] == 1) return a->tag == V_NEG && odd ? a : V_ONE;
  /* |a| >= 2: |a|^e >= 2^e, and it has at least (bl - 1) e + 1 bits (bl = bits of |a|). */
  if (e->len > 1 || e->d[0] >= 32 * MAX_LIMBS) too_large();
  uint32_t E = e->d[0];
  uint32_t bl = 32 * a->len - clz(a->d[a->len - 1]);
  if ((bl - 1) * E + 1 > 32 * MAX_LIMBS) too_large();
  uint32_t cap = (bl * E + 31) / 32 + 2; /* >= the limbs of any product below */
  uint32_t *t = talloc(2 * (cap + 2));
  a = TOP(2);
  val *x = (val *)t, *y = (val *)(t + cap + 2), *s;
  wcopy(x->d, a->d, a->len);
  x->len = a->len;
  for (int k = 30 - (int)clz(E); k >= 0; k--) {
    bnu_mul(y->d, x->d, x->len, x->d, x->len);
    y->len = bnu_norm(y->d, 2 * x->len);
    s = x, x = y, y = s;
    if ((E >> k) & 1u) {
      bnu_mul(y->d, x->d, x->len, a->d, a->len);
      y->len = bnu_norm(y->d, x->len + a->len);
      s = x, x = y, y = s;
    }
  }
  x->tag = a->tag == V_NEG && odd ? V_NEG : V_POS;
  check_len(x);
  return x;
}

/* ---- strings ----------------------------------------------------------------------------------- */

static __attribute__((noinline)) val *concat(void) {
  val *a = TOP(2), *b = TOP(1);
  uint32_t n = a->len + b->len;
  if (n > MAX_STR) fail("string too long");
  uint32_t words = (n + 3) >> 2;
  val *r = (val *)talloc(2 + words);
  a = TOP(2);
  b = TOP(1);
  r->tag = V_STR;
  r->len = n;
  if (words) r->d[words - 1] = 0;
  uint8_t *o = (uint8_t *)r->d;
  const uint8_t *p = (const uint8_t *)a->d;
  for (uint32_t i = 0; i < a->len; i++) *o++ = p[i];
  p = (const uint8_t *)b->d;
  for (uint32_t i = 0; i < b->len; i++) *o++ = p[i];
  return r;
}

/* ---- operators ------------------------------------------------------------------------------- */

/* A result of at most 64 bits: sign and magnitude. */
static __attribute__((noinline)) val *small_result(uint32_t neg, uint64_t mag) {
  val *r = (val *)talloc(4);
  uint32_t lo = (uint32_t)mag, hi = (uint32_t)(mag >> 32);
  r->d[0] = lo;
  r->d[1] = hi;
  r->len = hi ? 2 : lo ? 1 : 0;
  r->tag = r->len ? neg : V_POS;
  return r;
}

/* + - * / % of integers of at most one limb (loop counters, small values): the same results as
 * the general path, in 32/64-bit arithmetic. */
static __attribute__((noinline)) val *small_arith(uint32_t op, const val *a, const val *b) {
  uint32_t ma = a->len ? a->d[0] : 0, mb = b->len ? b->d[0] : 0, sa = a->tag, sb = b->tag;
  if (op == OP_MUL) return small_result(sa ^ sb, (uint64_t)ma * mb);
  if (op >= OP_DIV) {
    if (mb == 0) fail("division by zero");
    uint32_t q = ma / mb, r = ma - q * mb;
    if (sa != sb && r != 0) { /* floor: one more, and the remainder from the other side */
      q++;
      r = mb - r;
    }
    return op == OP_DIV ? small_result(sa ^ sb, q) : small_result(sb, r);
  }
  if (op == OP_SUB) sb ^= 1u;
  if (sa == sb) return small_result(sa, (uint64_t)ma + mb);
  return ma >= mb ? small_result(sa, ma - mb) : small_result(sb, mb - ma);
}

/* -1, 0, 1 as a < b, a == b, a > b, for normalized integers (zero is never negative). */
static int cmp_int(const val *a, const val *b) {
  if (a->tag != b->tag) return a->tag == V_NEG ? -1 : 1;
  int s = a->tag == V_NEG ? -1 : 1;
  uint32_t n = a->len;
  if (n != b->len) return n < b->len ? -s : s;
  while (n > 0) {
    n--;
    if (a->d[n] != b->d[n]) return a->d[n] < b->d[n] ? -s : s;
  }
  return 0;
}

static int equal(const val *a, const val *b) {
  if (a->tag != b->tag || a->len != b->len) return 0;
  uint32_t n = val_words(a) - 2;
  for (uint32_t i = 0; i < n; i++) {
    if (a->d[i] != b->d[i]) return 0;
  }
  return 1;
}

/* Comparison results by operator (OP_EQ.. OP_GE, 3 bits each): bit c + 1 is the result for c = -1, 0, 1. */
#define CMP_BITS (02u | 05u << 3 | 01u << 6 | 03u << 9 | 04u << 12 | 06u << 15)

void do_binop(uint32_t op) {
  val *a = TOP(2), *b = TOP(1), *r;
  int ints = a->tag != V_STR && b->tag != V_STR;
  if (op >= OP_EQ) {
    int c;
    if (ints) {
      c = cmp_int(a, b);
    } else if (op <= OP_NE) {
      c = !equal(a, b);
    } else {
      type_error();
    }
    r = (CMP_BITS >> (3 * (op - OP_EQ) + (uint32_t)(c + 1))) & 1u ? V_ONE : V_ZERO;
  } else if (ints) {
    if (op == OP_POW) {
      r = power();
    } else if ((a->len | b->len) <= 1) {
      r = small_arith(op, a, b);
    } else if (op <= OP_SUB) {
      r = add_sub(op);
    } else if (op == OP_MUL) {
      r = mul();
    } else {
      r = divmod(op);
    }
  } else if (op == OP_ADD && a->tag == V_STR && b->tag == V_STR) {
    r = concat();
  } else {
    type_error();
  }
  R.sp[-2] = (uintptr_t)r;
  R.sp--;
}

void do_neg(void) {
  val *a = TOP(1);
  if (a->tag == V_STR) type_error();
  if (a->len == 0) return;
  uint32_t n = 2 + a->len;
  val *r = (val *)talloc(n);
  wcopy((uint32_t *)r, (const uint32_t *)TOP(1), n);
  r->tag ^= 1u;
  R.sp[-1] = (uintptr_t)r;
}

void do_len(void) {
  val *a = TOP(1);
  if (a->tag != V_STR) type_error();
  uint32_t n = a->len;
  val *r = V_ZERO;
  if (n != 0) {
    r = (val *)talloc(3);
    r->tag = V_POS;
    r->len = 1;
    r->d[0] = n;
  }
  R.sp[-1] = (uintptr_t)r;
}
