/*
 * bigfact: the bignum library (firmware/lib/bignum.c) on a few big numbers, printed in decimal:
 * 100!, fib(1000), 2^4096, 2^4096 mod fib(1000), and -fib(1000) divided by 100! both truncated
 * and floored. Self-checks (exit status bit set on failure):
 *   1: 100! divided by 100, 99, ..., 1 (bnu_divmod_small) leaves remainder 0 each time and 1;
 *   2: fib(1000) = fib(500) (2 fib(501) - fib(500)) (the doubling identity, with bn_mul/bn_sub);
 *   4: 2^4096 = q fib(1000) + r with 0 <= r < fib(1000) (bn_mul, bn_add, bn_cmp);
 *   8: both signed divisions satisfy a = q b + r, |r| < |b|, and the sign rules.
 */
#include "bignum.h"
#include "chipc.h"

BN_STORAGE(fact_s, 24);
BN_STORAGE(fa_s, 24);
BN_STORAGE(fb_s, 24);
BN_STORAGE(f500_s, 24);
BN_STORAGE(f501_s, 24);
BN_STORAGE(pow_s, 132);
BN_STORAGE(q_s, 132);
BN_STORAGE(r_s, 132);
BN_STORAGE(t_s, 136);
BN_STORAGE(u_s, 136);
static uint32_t work[300];

static void show(const char *label, const bn_t *x) {
  print_str(label);
  bn_print(x, work);
  putchar('\n');
}

/* 1 when a == q b + r, |r| < |b|, and r is 0 or has the sign `rneg`; t and u are scratch. */
static int division_holds(const bn_t *a, const bn_t *b, const bn_t *q, const bn_t *r, uint32_t rneg) {
  bn_t *t = BN(t_s), *u = BN(u_s);
  bn_mul(t, q, b);
  bn_add(u, t, r);
  if (bn_cmp(u, a) != 0) return 0;
  if (r->len != 0 && r->neg != rneg) return 0;
  return bnu_cmp(r->d, r->len, b->d, b->len) < 0;
}

int main(void) {
  int fail = 0;
  bn_t *fact = BN(fact_s), *fa = BN(fa_s), *fb = BN(fb_s), *f500 = BN(f500_s), *f501 = BN(f501_s);
  bn_t *pw = BN(pow_s), *q = BN(q_s), *r = BN(r_s), *t = BN(t_s), *u = BN(u_s);

  /* 100! by multiplying with 2..100 in place. */
  fact->neg = 0;
  fact->len = 1;
  fact->d[0] = 1;
  for (uint32_t k = 2; k <= 100; k++) {
    uint32_t c = bnu_mul_1(fact->d, fact->d, fact->len, k, 0);
    if (c != 0) fact->d[fact->len++] = c;
  }
  show("100! = ", fact);
  bnu_copy(t->d, fact->d, fact->len);
  uint32_t n = fact->len;
  for (uint32_t k = 100; k >= 1; k--) {
    if (bnu_divmod_small(t->d, t->d, n, k) != 0) fail |= 1;
    n = bnu_norm(t->d, n);
  }
  if (n != 1 || t->d[0] != 1) fail |= 1;

  /* fib(1000): (fa, fb) = (fib(i), fib(i+1)), stepping (fa, fb) <- (fb, fa + fb) by swapping. */
  fa->neg = fa->len = 0;
  fb->neg = 0;
  fb->len = 1;
  fb->d[0] = 1;
  for (uint32_t i = 0; i < 1000; i++) {
    if (i == 500) {
      bn_copy(f500, fa);
      bn_copy(f501, fb);
    }
    bn_add(t, fa, fb);
    bn_copy(fa, fb);
    bn_copy(fb, t);
  }
  show("fib(1000) = ", fa);
  bn_add(t, f501, f501);
  bn_sub(u, t, f500);
  bn_mul(t, f500, u);
  if (bn_cmp(t, fa) != 0) fail |= 2;

  /* 2^4096 and its residue modulo fib(1000). */
  pw->neg = 0;
  pw->len = 129;
  bnu_zero(pw->d, 128);
  pw->d[128] = 1;
  show("2^4096 = ", pw);
  if (bn_divmod(q, r, pw, fa, work) != BN_OK) fail |= 4;
  show("2^4096 mod fib(1000) = ", r);
  if (!division_holds(pw, fa, q, r, 0)) fail |= 4;

  /* -fib(1000) divided by 100!, truncated (C) and floored. */
  fa->neg = 1;
  if (bn_divmod(q, r, fa, fact, work) != BN_OK) fail |= 8;
  show("trunc(-fib(1000) / 100!) = ", q);
  show("  remainder = ", r);
  if (!division_holds(fa, fact, q, r, 1)) fail |= 8;
  if (bn_fdivmod(q, r, fa, fact, work) != BN_OK) fail |= 8;
  show("floor(-fib(1000) / 100!) = ", q);
  show("  remainder = ", r);
  if (!division_holds(fa, fact, q, r, 0)) fail |= 8;

  puts(fail ? "bigfact: FAIL" : "bigfact: ok");
  return fail;
}
