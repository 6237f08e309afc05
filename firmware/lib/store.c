/*
 * chipc store library (see store.h and docs/store.md): the reference model's algorithm
 * (src/store/model.ts) on RAM words. Only the final memory contents must equal the model's rows,
 * so the order of the stores within an operation is free; which rows get written is not.
 * Written for few instructions: word loads/stores, no division in lookups, at most one divu per
 * put (the overwritten chain's length), no per-byte work.
 */
#include "store.h"

/* Copies k ≥ 1 words. */
static void copy_words(uint32_t *dst, const uint32_t *src, uint32_t k) {
  uint32_t *end = dst + k;
  while (k >= 4) {
    uint32_t a = src[0], b = src[1], c = src[2], d = src[3];
    dst[0] = a; dst[1] = b; dst[2] = c; dst[3] = d;
    dst += 4; src += 4; k -= 4;
  }
  while (dst != end) *dst++ = *src++;
}

/* Zeroes words [dst, end). */
static void zero_words(uint32_t *dst, uint32_t *end) {
  while (dst != end) *dst++ = 0;
}

/*
 * Fingerprint of name[0..n) (n ≥ 1): h ← (31·h + t + 1) mod 2^19. Returns STORE_FP_MASK + 1
 * (no fingerprint is that large) when a token is ≥ V, i.e. BAD_TOKEN.
 */
static uint32_t name_fp(const uint32_t *name, uint32_t n, uint32_t V) {
  const uint32_t *end = name + n;
  uint32_t h = 0;
  do {
    uint32_t t = *name++;
    if (t >= V) return STORE_FP_MASK + 1u;
    h = ((h << 5) - h + t + 1u) & STORE_FP_MASK;
  } while (name != end);
  return h;
}

/* True when the chain starting at chunk ch begins with name[0..n) (n ≥ 1); reads chunk by chunk
 * and stops at the first differing token. */
static int chain_has_name(const uint32_t *area, uint32_t ch, const uint32_t *name, uint32_t n) {
  uint32_t C = area[STORE_H_C];
  const uint32_t *chunks = area + area[STORE_H_CHUNK];
  const uint32_t *link = area + area[STORE_H_LINK];
  for (;;) {
    const uint32_t *row = chunks + ch * C;
    uint32_t k = n < C ? n : C;
    const uint32_t *end = row + k;
    n -= k;
    do {
      if (*row++ != *name++) return 0;
    } while (row != end);
    if (n == 0) return 1;
    ch = link[ch] - 1u;
  }
}

/*
 * Linear probing from the home slot fp mod D: returns the dir row of the name (used, so w0 ≠ 0)
 * or the first unused row (all zero, w0 = 0) — where an insert goes. A used row matches when its
 * w0 equals {used, fp, n} and its stored name equals the name. store_init keeps F ≤ D/2, so an
 * unused row always exists.
 */
static uint32_t *lookup(uint32_t *area, const uint32_t *name, uint32_t n, uint32_t fp) {
  uint32_t *dir = area + area[STORE_H_DIR];
  uint32_t mask = area[STORE_H_D] - 1u;
  uint32_t key = 1u | fp << 1 | n << 20;
  uint32_t s = fp & mask;
  for (;;) {
    uint32_t *e = dir + 2u * s;
    uint32_t w0 = e[0];
    if (w0 == 0) return e;
    if (w0 == key && chain_has_name(area, e[1] >> 16, name, n)) return e;
    s = (s + 1u) & mask;
  }
}

/* Name checks of get and delete, in the model's order; on success *fp = the fingerprint. */
static int name_check(const uint32_t *area, const uint32_t *name, uint32_t n, uint32_t *fp) {
  if (area[STORE_H_MAGIC] != STORE_MAGIC) return STORE_BAD_REQUEST;
  if (n == 0) return STORE_NAME_EMPTY;
  if (n > area[STORE_H_N]) return STORE_NAME_TOO_LONG;
  uint32_t h = name_fp(name, n, area[STORE_H_V]);
  if (h > STORE_FP_MASK) return STORE_BAD_TOKEN;
  *fp = h;
  return STORE_OK;
}

/* Pushes every chunk of the chain from `ch` onto the free stack (chain order); returns the new
 * freeTop. */
static uint32_t free_chain(uint32_t *area, uint32_t ch, uint32_t top) {
  uint32_t *fr = area + area[STORE_H_FREE];
  const uint32_t *link = area + area[STORE_H_LINK];
  for (;;) {
    fr[top++] = ch;
    uint32_t next = link[ch];
    if (next == 0) return top;
    ch = next - 1u;
  }
}

int store_init(uint32_t *area, const uint32_t *params, uint32_t area_words) {
  uint32_t F = params[0], N = params[1], M = params[2], C = params[3], P = params[4], V = params[5];
  // Unsigned wrap-around makes x − 1 ≥ max reject 0 too.
  if (F - 1u >= STORE_MAX_FILES || N - 1u >= STORE_MAX_NAME || M > STORE_MAX_CONTENT ||
      C - 1u >= STORE_MAX_CHUNK || V - 1u >= STORE_MAX_VOCAB || P > STORE_MAX_POOL || N + M > P * C) {
    return STORE_BAD_REQUEST;
  }
  uint32_t D = 2;
  while (D < 2u * F) D <<= 1;
  uint32_t mailbox = 3u + N + M;
  if (mailbox < STORE_MAILBOX_MIN) mailbox = STORE_MAILBOX_MIN;
  uint32_t cnt = STORE_MAILBOX + mailbox;
  uint32_t dir = cnt + 3u;
  uint32_t chunk = dir + 2u * D;
  uint32_t link = chunk + P * C;
  uint32_t fr = link + P;
  uint32_t end = fr + P;
  if (end > area_words) return STORE_BAD_REQUEST;
  // A fresh area is zero; an initialised one has its old tables zeroed (mailbox words are free).
  if (area[STORE_H_MAGIC] == STORE_MAGIC) {
    uint32_t top = area[STORE_H_END];
    if (top < end) top = end;
    if (top > area_words) top = area_words;
    zero_words(area + cnt, area + top);
  }
  area[STORE_H_MAGIC] = STORE_MAGIC;
  area[STORE_H_F] = F;
  area[STORE_H_D] = D;
  area[STORE_H_N] = N;
  area[STORE_H_M] = M;
  area[STORE_H_C] = C;
  area[STORE_H_P] = P;
  area[STORE_H_V] = V;
  area[STORE_H_CNT] = cnt;
  area[STORE_H_DIR] = dir;
  area[STORE_H_CHUNK] = chunk;
  area[STORE_H_LINK] = link;
  area[STORE_H_FREE] = fr;
  area[STORE_H_END] = end;
  area[14] = 0;
  area[15] = 0;
  return STORE_OK;
}

int store_put(uint32_t *area, const uint32_t *tokens, uint32_t n, uint32_t c, uint32_t *slot, uint32_t *replaced) {
  if (area[STORE_H_MAGIC] != STORE_MAGIC) return STORE_BAD_REQUEST;
  if (n == 0) return STORE_NAME_EMPTY;
  if (n > area[STORE_H_N]) return STORE_NAME_TOO_LONG;
  if (c > area[STORE_H_M]) return STORE_CONTENT_TOO_LONG;
  uint32_t V = area[STORE_H_V];
  uint32_t fp = name_fp(tokens, n, V);
  if (fp > STORE_FP_MASK) return STORE_BAD_TOKEN;
  // The content's tokens four at a time: a load and a branch each, one pointer step per four.
  const uint32_t *content = tokens + n, *content_end = content + c;
  for (uint32_t r = c & 3u; r != 0; r--) {
    if (*content++ >= V) return STORE_BAD_TOKEN;
  }
  for (; content != content_end; content += 4) {
    if (content[0] >= V || content[1] >= V || content[2] >= V || content[3] >= V) return STORE_BAD_TOKEN;
  }

  uint32_t *e = lookup(area, tokens, n, fp);
  uint32_t *cnt = area + area[STORE_H_CNT];
  uint32_t files = cnt[0], top = cnt[1], bump = cnt[2];
  uint32_t C = area[STORE_H_C];
  uint32_t P = area[STORE_H_P];
  uint32_t total = n + c;
  uint32_t avail = top + (P - bump);
  uint32_t old = e[0];
  if (old != 0) {
    avail += ((old >> 20) + (e[1] & 0xffffu) + C - 1u) / C;
  } else if (files >= area[STORE_H_F]) {
    return STORE_FULL;
  }
  // need = ceil(total / C) > avail  ⇔  total > avail · C.
  if (total > avail * C) return STORE_FULL;

  if (old != 0) top = free_chain(area, e[1] >> 16, top);
  // The new chain: pop the free stack, else bump; each chunk's row and its predecessor's link.
  uint32_t *chunks = area + area[STORE_H_CHUNK];
  uint32_t *link = area + area[STORE_H_LINK];
  const uint32_t *fr = area + area[STORE_H_FREE];
  const uint32_t *src = tokens;
  uint32_t left = total;
  uint32_t head;
  uint32_t *plink = &head;
  do {
    uint32_t ch = top != 0 ? fr[--top] : bump++;
    *plink = ch + 1u;
    plink = link + ch;
    uint32_t *row = chunks + ch * C;
    if (left >= C) {
      copy_words(row, src, C);
      src += C;
      left -= C;
    } else {
      copy_words(row, src, left);
      zero_words(row + left, row + C);
      left = 0;
    }
  } while (left != 0);
  *plink = 0;

  e[0] = 1u | fp << 1 | n << 20;
  e[1] = c | (head - 1u) << 16;
  if (old == 0) files++;
  cnt[0] = files;
  cnt[1] = top;
  cnt[2] = bump;
  *slot = (uint32_t)(e - (area + area[STORE_H_DIR])) >> 1;
  *replaced = old != 0;
  return STORE_OK;
}

int store_get(uint32_t *area, const uint32_t *name, uint32_t n, const store_sink *sink) {
  uint32_t fp;
  int r = name_check(area, name, n, &fp);
  if (r != STORE_OK) return r;
  const uint32_t *e = lookup(area, name, n, fp);
  if (e[0] == 0) return STORE_NOT_FOUND;
  uint32_t C = area[STORE_H_C];
  const uint32_t *chunks = area + area[STORE_H_CHUNK];
  const uint32_t *link = area + area[STORE_H_LINK];
  uint32_t c = e[1] & 0xffffu;
  uint32_t ch = e[1] >> 16;
  uint32_t pos = n;
  while (pos >= C) {
    ch = link[ch] - 1u;
    pos -= C;
  }
  sink->value(c);
  while (c != 0) {
    uint32_t k = C - pos;
    if (k > c) k = c;
    sink->tokens(chunks + ch * C + pos, k);
    c -= k;
    if (c == 0) break;
    ch = link[ch] - 1u;
    pos = 0;
  }
  return STORE_OK;
}

int store_delete(uint32_t *area, const uint32_t *name, uint32_t n) {
  uint32_t fp;
  int r = name_check(area, name, n, &fp);
  if (r != STORE_OK) return r;
  uint32_t *e = lookup(area, name, n, fp);
  if (e[0] == 0) return STORE_NOT_FOUND;
  uint32_t *cnt = area + area[STORE_H_CNT];
  cnt[1] = free_chain(area, e[1] >> 16, cnt[1]);
  cnt[0]--;
  // Backward-shift deletion: an entry at j whose home k is cyclically in (i, j] stays, i.e.
  // (k − i − 1) mod D < (j − i) mod D; any other moves to the hole i.
  uint32_t *dir = area + area[STORE_H_DIR];
  uint32_t mask = area[STORE_H_D] - 1u;
  uint32_t i = (uint32_t)(e - dir) >> 1;
  uint32_t j = i;
  for (;;) {
    j = (j + 1u) & mask;
    const uint32_t *ej = dir + 2u * j;
    uint32_t w0 = ej[0];
    if (w0 == 0) break;
    uint32_t k = (w0 >> 1) & mask;
    if (((k - i - 1u) & mask) < ((j - i) & mask)) continue;
    uint32_t *ei = dir + 2u * i;
    ei[0] = w0;
    ei[1] = ej[1];
    i = j;
  }
  dir[2u * i] = 0;
  dir[2u * i + 1u] = 0;
  return STORE_OK;
}

int store_list(uint32_t *area, const store_sink *sink) {
  if (area[STORE_H_MAGIC] != STORE_MAGIC) return STORE_BAD_REQUEST;
  uint32_t C = area[STORE_H_C];
  const uint32_t *chunks = area + area[STORE_H_CHUNK];
  const uint32_t *link = area + area[STORE_H_LINK];
  const uint32_t *e = area + area[STORE_H_DIR];
  uint32_t left = area[area[STORE_H_CNT]];
  sink->value(left);
  for (; left != 0; e += 2) {
    uint32_t w0;
    // Skip unused slots four at a time (a load and a branch each, one pointer step per four: the
    // step's 32-bit address costs three tokens). The used slot that `left` promises stops the scan
    // inside the table; the loads past it stay within the area (the chunk table follows).
    while ((e[0] | e[2] | e[4] | e[6]) == 0) e += 8;
    while ((w0 = e[0]) == 0) e += 2;
    left--;
    uint32_t n = w0 >> 20;
    uint32_t ch = e[1] >> 16;
    sink->value(n);
    for (;;) {
      uint32_t k = n < C ? n : C;
      sink->tokens(chunks + ch * C, k);
      n -= k;
      if (n == 0) break;
      ch = link[ch] - 1u;
    }
  }
  return STORE_OK;
}
