/*
 * chipc bignum library: unsigned limb-array arithmetic (add, sub, schoolbook mul, Knuth D
 * divmod, shifts, decimal) and signed sign-magnitude numbers on top. Contracts in bignum.h.
 * Only 32-bit operations: mul/mulhu for products, divu on 16-bit halves for quotient digits, so
 * nothing comes from libgcc. Written for few executed instructions (each one costs tokens on
 * the transformer CPU): straight loops, no recursion. A division costs that CPU far more tokens
 * than a multiply (docs/token-protocol.md: 2 a radix-16 quotient digit, against 1 to 3 for a
 * multiply's result), so each quotient is divided once and the decimal conversion divides by
 * none: it divides by 10^9 with a precomputed inverse and by 10 with a reciprocal (chipc.h).
 */
#include "bignum.h"
#include "chipc.h"


static inline uint32_t mulhu(uint32_t a, uint32_t b) {
  return (uint32_t)(((uint64_t)a * b) >> 32);
}

/* Number of leading zero bits of x, for x != 0. */
static unsigned clz32(uint32_t x) {
  unsigned n = 0;
  if (x < 0x10000u) { n += 16; x <<= 16; }
  if (x < 0x1000000u) { n += 8; x <<= 8; }
  if (x < 0x10000000u) { n += 4; x <<= 4; }
  if (x < 0x40000000u) { n += 2; x <<= 2; }
  if (x < 0x80000000u) n += 1;
  return n;
}

uint32_t bnu_norm(const uint32_t *a, uint32_t n) {
  while (n > 0 && a[n - 1] == 0) n--;
  return n;
}

void bnu_copy(uint32_t *r, const uint32_t *a, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) r[i] = a[i];
}

void bnu_zero(uint32_t *r, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) r[i] = 0;
}

int bnu_cmp(const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t nb) {
  an = bnu_norm(a, an);
  nb = bnu_norm(b, nb);
  if (an != nb) return an < nb ? -1 : 1;
  while (an > 0) {
    an--;
    if (a[an] != b[an]) return a[an] < b[an] ? -1 : 1;
  }
  return 0;
}

uint32_t bnu_add(uint32_t *r, const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t nb) {
  uint32_t c = 0, i = 0;
  for (; i < nb; i++) {
    uint32_t s = a[i] + c;
    c = s < c;
    uint32_t t = s + b[i];
    c += t < s;
    r[i] = t;
  }
  for (; i < an; i++) {
    uint32_t s = a[i] + c;
    c = s < c;
    r[i] = s;
  }
  return c;
}

uint32_t bnu_sub(uint32_t *r, const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t nb) {
  uint32_t c = 0, i = 0;
  for (; i < nb; i++) {
    uint32_t x = a[i], y = b[i] + c;
    c = (y < c) | (x < y); /* y wrapped (b[i] = 0xffffffff, c = 1) or x < y */
    r[i] = x - y;
  }
  for (; i < an; i++) {
    uint32_t x = a[i];
    r[i] = x - c;
    c = x < c;
  }
  return c;
}

#ifdef CHIPC_BN_UNIT
/*
 * The limb loops on the bignum unit, unrolled by four: limbs are reached by immediate offsets
 * (an address is a 32-bit value, so each pointer step costs a wide result on the chip).
 */
uint32_t bnu_mul_1(uint32_t *r, const uint32_t *a, uint32_t n, uint32_t m, uint32_t c) {
  bn_carry_clear();
  for (; n >= 4; n -= 4, a += 4, r += 4) {
    r[0] = bn_mac(c, a[0], m);
    r[1] = bn_mac(0, a[1], m);
    r[2] = bn_mac(0, a[2], m);
    r[3] = bn_mac(0, a[3], m);
    c = 0;
  }
  for (; n > 0; n--, a++, r++) {
    r[0] = bn_mac(c, a[0], m);
    c = 0;
  }
  return bn_carry_take(c);
}

/* r[0..n) += a[0..n) * m + C (the unit's carry as it stands); the carry out is left in C. */
static void addmul_run(uint32_t *r, const uint32_t *a, uint32_t n, uint32_t m) {
  for (; n >= 4; n -= 4, a += 4, r += 4) {
    r[0] = bn_mac(r[0], a[0], m);
    r[1] = bn_mac(r[1], a[1], m);
    r[2] = bn_mac(r[2], a[2], m);
    r[3] = bn_mac(r[3], a[3], m);
  }
  for (; n > 0; n--, a++, r++) r[0] = bn_mac(r[0], a[0], m);
}

/* r[0..n) += a[0..n) * m, returns the carry limb. */
static uint32_t addmul_1(uint32_t *r, const uint32_t *a, uint32_t n, uint32_t m) {
  bn_carry_clear();
  addmul_run(r, a, n, m);
  return bn_carry_take(0);
}

/*
 * Two rows at once, one carry bank each: r[0..n+2) = r[0..n) + a[0..n) * (m0 + m1 * 2^32), n >= 1
 * (r[n], r[n+1] are written, not read). Each a[i] is loaded once for both rows: row 0 finishes
 * r[i] (its accumulator v already holds row 1's term from the step before), then row 1 starts on
 * r[i+1]. The sum fits n + 2 limbs, so the last limb is C1 plus row 0's final carry-out, with no
 * carry beyond it.
 */
static void addmul_2(uint32_t *r, const uint32_t *a, uint32_t n, uint32_t m0, uint32_t m1) {
  bn_carry_clear();
  bn_carry_clear1();
  uint32_t v = r[0];
  for (; n > 4; n -= 4, a += 4, r += 4) {
    uint32_t x = a[0];
    r[0] = bn_mac(v, x, m0);
    v = bn_mac1(r[1], x, m1);
    x = a[1];
    r[1] = bn_mac(v, x, m0);
    v = bn_mac1(r[2], x, m1);
    x = a[2];
    r[2] = bn_mac(v, x, m0);
    v = bn_mac1(r[3], x, m1);
    x = a[3];
    r[3] = bn_mac(v, x, m0);
    v = bn_mac1(r[4], x, m1);
  }
  for (; n > 1; n--, a++, r++) {
    uint32_t x = a[0];
    r[0] = bn_mac(v, x, m0);
    v = bn_mac1(r[1], x, m1);
  }
  uint32_t x = a[0];
  r[0] = bn_mac(v, x, m0);
  v = bn_mac1(0, x, m1);
  r[1] = bn_mac(v, 0, 0);                 /* + C0; C0 becomes its carry-out (0 or 1) */
  r[2] = bn_carry_take(bn_carry_take1(0)); /* C1 + C0 */
}

/*
 * r[0..n) -= v * m with v given complemented, nv[i] = ~v[i]; returns the borrow limb.
 * With B = 2^32: r - m*v = r + m*(B^n - 1 - v) + m - m*B^n, and B^n - 1 - v is the number whose
 * limbs are nv. So an addmul over nv that starts with C = m leaves the low limbs of r - m*v in r
 * and m + floor((r - m*v) / B^n) in C: the borrow is m - C. (C = m from m*(B - 1) + m = m*B.)
 */
static uint32_t submul_1c(uint32_t *r, const uint32_t *nv, uint32_t n, uint32_t m) {
  bn_carry_clear();
  (void)bn_mac(m, m, 0xffffffffu);
  addmul_run(r, nv, n, m);
  return m - bn_carry_take(0);
}

/* r[0..n) += v with v given complemented (nv[i] = ~v[i]); returns the carry out. */
static uint32_t add_1c(uint32_t *r, const uint32_t *nv, uint32_t n) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t x = ~nv[i];
    uint32_t s = r[i] + x;
    uint32_t c1 = s < x;
    s += c;
    c = c1 + (s < c);
    r[i] = s;
  }
  return c;
}
#else
uint32_t bnu_mul_1(uint32_t *r, const uint32_t *a, uint32_t n, uint32_t m, uint32_t c) {
  for (uint32_t i = 0; i < n; i++) {
    uint32_t x = a[i];
    uint32_t lo = x * m + c;
    c = mulhu(x, m) + (lo < c);
    r[i] = lo;
  }
  return c;
}

/* r[0..n) += a[0..n) * m, returns the carry limb. */
static uint32_t addmul_1(uint32_t *r, const uint32_t *a, uint32_t n, uint32_t m) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t x = a[i];
    uint32_t lo = x * m + c;
    uint32_t hi = mulhu(x, m) + (lo < c);
    uint32_t t = r[i] + lo;
    r[i] = t;
    c = hi + (t < lo);
  }
  return c;
}

/* r[0..n) -= a[0..n) * m, returns the borrow limb (what must still be subtracted above r[n-1]). */
static uint32_t submul_1(uint32_t *r, const uint32_t *a, uint32_t n, uint32_t m) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t x = a[i];
    uint32_t lo = x * m + c;
    uint32_t hi = mulhu(x, m) + (lo < c);
    uint32_t t = r[i];
    r[i] = t - lo;
    c = hi + (t < lo);
  }
  return c;
}
#endif

void bnu_mul(uint32_t *r, const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t nb) {
  if (an == 0 || nb == 0) {
    bnu_zero(r, an + nb);
    return;
  }
  r[an] = bnu_mul_1(r, a, an, b[0], 0);
#ifdef CHIPC_BN_UNIT
  uint32_t j = 1;
  for (; j + 1 < nb; j += 2) addmul_2(r + j, a, an, b[j], b[j + 1]);
  if (j < nb) r[an + j] = addmul_1(r + j, a, an, b[j]);
#else
  for (uint32_t j = 1; j < nb; j++) r[an + j] = addmul_1(r + j, a, an, b[j]);
#endif
}

void bnu_shl(uint32_t *r, const uint32_t *a, uint32_t n, unsigned s) {
  if (s == 0) {
    r[n] = 0;
    for (uint32_t i = n; i > 0; i--) r[i - 1] = a[i - 1];
    return;
  }
  uint32_t hi = 0;
  for (uint32_t i = n; i > 0; i--) {
    uint32_t x = a[i - 1];
    r[i] = hi | (x >> (32 - s));
    hi = x << s;
  }
  r[0] = hi;
}

void bnu_shr(uint32_t *r, const uint32_t *a, uint32_t n, unsigned s) {
  if (s == 0) {
    bnu_copy(r, a, n);
    return;
  }
  for (uint32_t i = 0; i < n; i++) {
    uint32_t hi = i + 1 < n ? a[i + 1] << (32 - s) : 0;
    r[i] = (a[i] >> s) | hi;
  }
}

/*
 * x, hidden from the compiler's value tracking. After q = x / d, the compiler turns x - q * d into
 * a second division (remu) of the same operands instead of a multiply and a subtraction; passing q
 * through here keeps the multiply.
 */
static inline uint32_t opaque(uint32_t x) {
  __asm__("" : "+r"(x));
  return x;
}

uint32_t bnu_divmod_small(uint32_t *q, const uint32_t *a, uint32_t n, uint32_t d) {
  uint32_t rem = 0;
  for (uint32_t i = n; i > 0; i--) {
    uint32_t x = a[i - 1];
    uint32_t cur = (rem << 16) | (x >> 16);
    uint32_t qh = opaque(cur / d);
    rem = cur - qh * d;
    cur = (rem << 16) | (x & 0xffffu);
    uint32_t ql = opaque(cur / d);
    rem = cur - ql * d;
    q[i - 1] = (qh << 16) | ql;
  }
  return rem;
}

/*
 * floor((u1 * 2^32 + u0) / d) and the remainder, for d >= 2^31 (normalized) and u1 < d, so the
 * quotient fits 32 bits. Schoolbook division in base 2^16: each 16-bit quotient digit is
 * estimated from the divisor's top half (divu) and corrected at most twice, the correction test
 * done on 16-bit digits so that no product overflows 32 bits.
 */
static uint32_t udiv_2by1(uint32_t u1, uint32_t u0, uint32_t d, uint32_t *rem) {
  uint32_t dh = d >> 16, dl = d & 0xffffu;
  uint32_t u0h = u0 >> 16, u0l = u0 & 0xffffu;
  uint32_t q1 = opaque(u1 / dh), r = u1 - q1 * dh;
  while (q1 > 0xffffu || q1 * dl > ((r << 16) | u0h)) {
    q1--;
    r += dh;
    if (r > 0xffffu) break;
  }
  uint32_t mid = ((u1 << 16) | u0h) - q1 * d; /* < d: exact modulo 2^32 */
  uint32_t q0 = opaque(mid / dh);
  r = mid - q0 * dh;
  while (q0 > 0xffffu || q0 * dl > ((r << 16) | u0l)) {
    q0--;
    r += dh;
    if (r > 0xffffu) break;
  }
  *rem = ((mid << 16) | u0l) - q0 * d;
  return (q1 << 16) | q0;
}

int bnu_divmod(uint32_t *q, uint32_t *r, const uint32_t *a, uint32_t an, const uint32_t *b,
               uint32_t nb, uint32_t *work) {
  if (nb == 0 || b[nb - 1] == 0) return BN_EDIVZERO;
  if (an < nb) {
    bnu_copy(r, a, an);
    bnu_zero(r + an, nb - an);
    return BN_OK;
  }
  unsigned s = clz32(b[nb - 1]);
  uint32_t *vn = work;      /* b << s, nb limbs (bnu_shl's zero top limb lands on un[0] first) */
  uint32_t *un = work + nb; /* a << s, an + 1 limbs; becomes the remainder << s */
  bnu_shl(vn, b, nb, s);
  bnu_shl(un, a, an, s);
  uint32_t vtop = vn[nb - 1], vnext = nb >= 2 ? vn[nb - 2] : 0;
#ifdef CHIPC_BN_UNIT
  for (uint32_t i = 0; i < nb; i++) vn[i] = ~vn[i]; /* submul_1c and add_1c take the divisor complemented */
#endif
  for (uint32_t j = an - nb + 1; j > 0;) {
    j--;
    uint32_t u2 = un[j + nb], u1 = un[j + nb - 1];
    uint32_t qhat, rhat;
    int refine;
    if (u2 >= vtop) { /* u2 == vtop: the estimate is 2^32 - 1 */
      qhat = 0xffffffffu;
      rhat = u1 + vtop;
      refine = rhat >= vtop; /* rhat < 2^32 */
    } else {
      qhat = udiv_2by1(u2, u1, vtop, &rhat);
      refine = 1;
    }
    if (nb >= 2 && refine) {
      uint32_t u0 = un[j + nb - 2];
      for (;;) { /* while qhat * vnext > rhat * 2^32 + u0 (at most twice) */
        uint32_t ph = mulhu(qhat, vnext), pl = qhat * vnext;
        if (ph < rhat || (ph == rhat && pl <= u0)) break;
        qhat--;
        uint32_t nr = rhat + vtop;
        if (nr < rhat) break; /* rhat >= 2^32: the test can no longer hold */
        rhat = nr;
      }
    }
#ifdef CHIPC_BN_UNIT
    uint32_t borrow = submul_1c(un + j, vn, nb, qhat);
#else
    uint32_t borrow = submul_1(un + j, vn, nb, qhat);
#endif
    un[j + nb] = u2 - borrow;
    if (u2 < borrow) { /* qhat was one too large: add the divisor back */
      qhat--;
#ifdef CHIPC_BN_UNIT
      un[j + nb] += add_1c(un + j, vn, nb);
#else
      un[j + nb] += bnu_add(un + j, un + j, nb, vn, nb);
#endif
    }
    q[j] = qhat;
  }
  bnu_shr(r, un, nb, s); /* un[nb] is 0 now: the remainder is below b << s */
  return BN_OK;
}

/* *c = the last decimal digit of x; returns floor(x / 10) (chipc.h div10_u32: no division). */
static inline uint32_t put_digit(char *c, uint32_t x) {
  uint32_t q = div10_u32(x);
  *c = (char)('0' + (x - q * 10u));
  return q;
}

uint32_t bnu_to_dec(char *buf, uint32_t *a, uint32_t n) {
  uint32_t len = 0;
  n = bnu_norm(a, n);
  while (n > 0) {
    uint32_t rem = bnu_divmod_1e9(a, n);
    while (n > 0 && a[n - 1] == 0) n--;
    /* 9 digits of a base-10^9 digit below the top one, the top one's digits without zero padding
     * (so buf holds the digits and the NUL, nothing more) */
    if (n > 0) {
      for (int k = 0; k < 9; k++) rem = put_digit(buf + len++, rem);
    } else {
      do rem = put_digit(buf + len++, rem);
      while (rem != 0);
    }
  }
  if (len == 0) buf[len++] = '0';
  for (uint32_t i = 0, j = len - 1; i < j; i++, j--) {
    char t = buf[i];
    buf[i] = buf[j];
    buf[j] = t;
  }
  buf[len] = 0;
  return len;
}

/* ---- signed ------------------------------------------------------------------------------- */

static void bn_set_sign(bn_t *r, uint32_t len, uint32_t neg) {
  r->len = len;
  r->neg = len != 0 ? neg : 0;
}

void bn_copy(bn_t *r, const bn_t *a) {
  uint32_t n = bnu_norm(a->d, a->len);
  bnu_copy(r->d, a->d, n);
  bn_set_sign(r, n, a->neg);
}

int bn_cmp(const bn_t *a, const bn_t *b) {
  uint32_t an = bnu_norm(a->d, a->len), nb = bnu_norm(b->d, b->len);
  uint32_t sa = an ? a->neg : 0, sb = nb ? b->neg : 0;
  if (sa != sb) return sa ? -1 : 1;
  int c = bnu_cmp(a->d, an, b->d, nb);
  return sa ? -c : c;
}

/* r = (-1)^sa |a| + (-1)^sb |b|. */
static void add_signed(bn_t *r, const bn_t *a, uint32_t sa, const bn_t *b, uint32_t sb) {
  uint32_t an = bnu_norm(a->d, a->len), nb = bnu_norm(b->d, b->len);
  if (an < nb || (an == nb && sa != sb && bnu_cmp(a->d, an, b->d, nb) < 0)) {
    const bn_t *t = a; a = b; b = t; /* |a| >= |b| from here on (by length, or by value for sub) */
    uint32_t u = an; an = nb; nb = u;
    u = sa; sa = sb; sb = u;
  }
  if (sa == sb) {
    r->d[an] = bnu_add(r->d, a->d, an, b->d, nb);
    bn_set_sign(r, bnu_norm(r->d, an + 1), sa);
  } else {
    bnu_sub(r->d, a->d, an, b->d, nb);
    bn_set_sign(r, bnu_norm(r->d, an), sa);
  }
}

void bn_add(bn_t *r, const bn_t *a, const bn_t *b) {
  add_signed(r, a, a->neg, b, b->neg);
}

void bn_sub(bn_t *r, const bn_t *a, const bn_t *b) {
  add_signed(r, a, a->neg, b, b->neg ^ 1u);
}

void bn_mul(bn_t *r, const bn_t *a, const bn_t *b) {
  uint32_t an = bnu_norm(a->d, a->len), nb = bnu_norm(b->d, b->len);
  bnu_mul(r->d, a->d, an, b->d, nb);
  bn_set_sign(r, bnu_norm(r->d, an + nb), a->neg ^ b->neg);
}

int bn_divmod(bn_t *q, bn_t *r, const bn_t *a, const bn_t *b, uint32_t *work) {
  uint32_t an = bnu_norm(a->d, a->len), nb = bnu_norm(b->d, b->len);
  if (nb == 0) return BN_EDIVZERO;
  bnu_divmod(q->d, r->d, a->d, an, b->d, nb, work);
  bn_set_sign(q, an >= nb ? bnu_norm(q->d, an - nb + 1) : 0, a->neg ^ b->neg);
  bn_set_sign(r, bnu_norm(r->d, nb), a->neg);
  return BN_OK;
}

int bn_fdivmod(bn_t *q, bn_t *r, const bn_t *a, const bn_t *b, uint32_t *work) {
  uint32_t nb = bnu_norm(b->d, b->len);
  if (bn_divmod(q, r, a, b, work) != BN_OK) return BN_EDIVZERO;
  uint32_t sa = bnu_norm(a->d, a->len) ? a->neg : 0, sb = b->neg;
  if (sa != sb && r->len != 0) {
    /* q = trunc - 1 = -(|q| + 1); r = r + b = (-1)^sb (|b| - |r|) */
    uint32_t i = 0;
    while (i < q->len && ++q->d[i] == 0) i++;
    if (i == q->len) q->d[q->len++] = 1;
    q->neg = 1;
    bnu_sub(r->d, b->d, nb, r->d, r->len);
    bn_set_sign(r, bnu_norm(r->d, nb), sb);
  }
  return BN_OK;
}

void bn_print(const bn_t *a, uint32_t *work) {
  char buf[10u * BN_MAX_LIMBS + 2u];
  uint32_t n = bnu_norm(a->d, a->len);
  bnu_copy(work, a->d, n);
  if (n != 0 && a->neg) putchar('-');
  bnu_to_dec(buf, work, n);
  print_str(buf);
}
