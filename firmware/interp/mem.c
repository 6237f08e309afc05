/*
 * The interpreter's memory (interp.h has the map). Everything lives in the NOLOAD section
 * .persist (runtime/link.ld), which neither the loader nor start-up touches, so the symbols,
 * global values and functions of one run are there for the next (a service call re-enters at
 * _start with RAM as the last run left it). RAM starts zeroed, so a wrong magic word means "first
 * run" and the state is initialized.
 *
 * The heap holds the values of variables, one block each: word 0 = block size in words (header
 * included), word 1 = the owner (the address of the slot that points at the value: a symbol's
 * global value, or a local slot in the value stack), 0 for a free block; then the value. A block
 * is freed when its variable is reassigned (reused in place when the new value fits) or its
 * function returns; when the gap between the heap and the temporaries is too small, compact()
 * slides the live blocks down and updates their owners and every value-stack entry that points at
 * them. Temporaries grow down from the running code; each statement resets them (vm.c).
 */
#include "interp.h"

/* "IPR1" mixed with the layout (sizes and where the pool lies): another build never reads this state. */
#define MAGIC (0x49505231u ^ (POOL_WORDS << 12) ^ (NSYM << 4) ^ VS_WORDS ^ (uint32_t)(uintptr_t)pool)

struct state S __attribute__((section(".persist")));
uint32_t pool[POOL_WORDS] __attribute__((section(".persist")));
uintptr_t vs[VS_WORDS] __attribute__((section(".persist")));
struct run R __attribute__((section(".persist"))); /* set up by mem_start and main: not in .bss */

/* ---- console ------------------------------------------------------------------------------ */

static __attribute__((noinline)) void out_str(const char *s) {
  while (*s) outc(*s++);
}

/* print_u32 of the runtime, but with the inline console store (outc): a call to putchar per
 * digit costs instructions, and every instruction costs about two tokens on the chip. */
static __attribute__((noinline)) void out_u32(uint32_t v) {
  char buf[10];
  int n = 0;
  do {
    uint32_t q = div10_u32(v);
    buf[n++] = (char)('0' + (v - q * 10u));
    v = q;
  } while (v != 0);
  while (n > 0) outc(buf[--n]);
}

/* "error: line L: msg[ name]\n", then exit 1. The state stays usable: the next run frees blocks
 * left by local variables and drops the names this statement added (mem_start). */
void fail_name(const char *msg, uint32_t id) {
  out_str("error: line ");
  out_u32(R.line);
  out_str(": ");
  out_str(msg);
  if (id < S.nsyms) {
    const sym *s = &S.syms[id];
    outc(' ');
    for (uint32_t i = 0; i < s->len; i++) outc(S.names[s->off + i]);
  }
  outc('\n');
  exit(1);
}

void fail(const char *msg) {
  fail_name(msg, ~0u);
}

/* ---- words ------------------------------------------------------------------------------- */

/* dst[0..n) = src[0..n) for dst <= src or no overlap. */
void wcopy(uint32_t *dst, const uint32_t *src, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) dst[i] = src[i];
}

/* The same for any overlap. */
__attribute__((noinline)) void wmove(uint32_t *dst, const uint32_t *src, uint32_t n) {
  if (dst <= src) {
    wcopy(dst, src, n);
  } else {
    while (n > 0) {
      n--;
      dst[n] = src[n];
    }
  }
}

/* ---- start --------------------------------------------------------------------------------- */

static int is_global_slot(uint32_t owner) {
  return owner >= (uint32_t)(uintptr_t)&S.syms[0] && owner < (uint32_t)(uintptr_t)&S.syms[NSYM];
}

void mem_start(void) {
  if (S.magic != MAGIC) {
    S.magic = MAGIC;
    S.nsyms = 0;
    S.nnames = 0;
    S.mark = 0;
    S.heap_top = pool;
    S.holes = 0;
    S.fn_bottom = POOL_END;
  } else {
    /* After an error: free the blocks of local variables (their frames are gone) and drop the
     * names the failed statement added. */
    for (uint32_t *b = pool; b < S.heap_top; b += b[0]) {
      if (b[1] != 0 && !is_global_slot(b[1])) {
        b[1] = 0;
        S.holes += b[0];
      }
    }
    rollback_syms();
  }
  R.sp = vs;
  R.temp_top = S.fn_bottom;
}

/* ---- heap ---------------------------------------------------------------------------------- */

void compact(void) {
  uint32_t *src = pool, *dst = pool, *end = S.heap_top;
  while (src < end) {
    uint32_t n = src[0], owner = src[1];
    if (owner != 0) {
      if (dst != src) {
        uintptr_t from = (uintptr_t)(src + 2), to = (uintptr_t)(dst + 2);
        for (uintptr_t *p = vs; p < R.sp; p++) {
          if (*p == from) *p = to; /* aliases, and the owner when it is a local slot */
        }
        if (is_global_slot(owner)) *(uintptr_t *)(uintptr_t)owner = to;
        wcopy(dst, src, n);
      }
      dst += n;
    }
    src += n;
  }
  S.heap_top = dst;
  S.holes = 0;
}

/* Free words between the heap and the temporaries, once compacted. */
static uint32_t available(void) {
  return (uint32_t)(R.temp_top - S.heap_top) + S.holes;
}

/* Makes sure `words` words are free between the heap and the temporaries (compacting if needed). */
static void room(uint32_t words) {
  if ((uint32_t)(R.temp_top - S.heap_top) >= words) return;
  if (available() < words) fail("out of memory");
  compact();
}

uint32_t *talloc(uint32_t words) {
  room(words);
  R.temp_top -= words;
  return R.temp_top;
}

static void free_block(uint32_t *b) {
  b[1] = 0;
  if (b + b[0] == S.heap_top) {
    S.heap_top = b;
  } else {
    S.holes += b[0];
  }
}

static int owns(const val *v, val **slot) {
  const uint32_t *p = (const uint32_t *)v;
  return p >= pool + 2 && p < S.heap_top && p[-1] == (uint32_t)(uintptr_t)slot;
}

void free_owned(val **slot) {
  val *v = *slot;
  if (v != NULL && owns(v, slot)) free_block((uint32_t *)v - 2);
}

/* *slot = a copy of the value on top of the value stack, in a heap block owned by slot. */
void assign(val **slot, val *v) {
  val *old = *slot;
  if (old == v) return;
  uint32_t w = val_words(v), freed = 0;
  uint32_t *b = (uint32_t *)old - 2;
  if (old != NULL && owns(old, slot)) {
    if (w + 2 <= b[0] && b[0] <= w + 2 + 16) { /* fits the old block (and does not waste it): in place */
      wcopy((uint32_t *)old, (const uint32_t *)v, w);
      return;
    }
    freed = b[0];
  }
  if (available() + freed < w + 2) fail("out of memory"); /* before anything changed: the old value stays */
  if (freed != 0) free_block(b);
  *slot = NULL;
  room(w + 2);
  v = (val *)R.sp[-1]; /* compaction may have moved it */
  b = S.heap_top;
  S.heap_top += w + 2;
  b[0] = w + 2;
  b[1] = (uint32_t)(uintptr_t)slot;
  wcopy(b + 2, (const uint32_t *)v, w);
  *slot = (val *)(b + 2);
}

/* ---- symbols --------------------------------------------------------------------------------- */

uint32_t intern(const char *s, uint32_t len) {
  for (uint32_t i = 0; i < S.nsyms; i++) {
    const sym *y = &S.syms[i];
    if (y->len != len) continue;
    const char *n = S.names + y->off;
    uint32_t k = 0;
    while (k < len && n[k] == s[k]) k++;
    if (k == len) return i;
  }
  if (S.nsyms == NSYM || S.nnames + len > NAMES) fail("out of memory");
  sym *y = &S.syms[S.nsyms];
  y->off = (uint16_t)S.nnames;
  y->len = (uint8_t)len;
  y->g = NULL;
  y->f = NULL;
  for (uint32_t k = 0; k < len; k++) S.names[S.nnames + k] = s[k];
  S.nnames += len;
  return S.nsyms++;
}

/* Drops the names added since S.mark that name neither a value nor a function. */
void rollback_syms(void) {
  while (S.nsyms > S.mark) {
    const sym *y = &S.syms[S.nsyms - 1];
    if (y->g != NULL || y->f != NULL) break;
    S.nnames -= y->len;
    S.nsyms--;
  }
}

/* ---- functions ------------------------------------------------------------------------------ */

static __attribute__((noinline)) void remove_fn(fn *f) {
  uint32_t *b = (uint32_t *)f, n = b[0];
  S.syms[b[1]].f = NULL;
  wmove(S.fn_bottom + n, S.fn_bottom, (uint32_t)(b - S.fn_bottom));
  for (uint32_t i = 0; i < S.nsyms; i++) {
    sym *y = &S.syms[i];
    if (y->f != NULL && (uint32_t *)y->f < b) y->f = (fn *)((uint32_t *)y->f + n);
  }
  S.fn_bottom += n;
}

/* Defines (or redefines) function sym from the compiled code [code, code + ncode), which lies at
 * the heap top with at least 4 + nlocals free words after it (compile.c made sure). */
void install_fn(uint32_t id, const uint32_t *code, uint32_t ncode, uint32_t nparams, uint32_t nlocals,
                const uint32_t *lsym) {
  if (S.syms[id].f != NULL) remove_fn(S.syms[id].f);
  uint32_t size = 4 + nlocals + ncode;
  uint32_t *b = S.fn_bottom - size;
  wmove(S.fn_bottom - ncode, code, ncode);
  b[0] = size;
  b[1] = id;
  b[2] = nparams;
  b[3] = nlocals;
  wcopy(b + 4, lsym, nlocals);
  S.fn_bottom = b;
  S.syms[id].f = (fn *)b;
}

void code_to_top(uint32_t *code, uint32_t n, uint32_t **at) {
  *at = S.fn_bottom - n;
  wmove(*at, code, n);
}
