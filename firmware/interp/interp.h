/*
 * chipc interpreter (docs/firmware.md "The interpreter"): a small expression language with
 * integers of any size (up to 8,192 bits), strings, variables, if/while and recursive functions,
 * run from the console input. Shared declarations of its four files:
 *   mem.c      the memory: persistent state, heap of variable values (compacting), temporaries,
 *              function store, symbols, errors
 *   num.c      values: integer and string operations, decimal input and output
 *   compile.c  lexer and one-pass compiler of a statement into word code
 *   vm.c       the word-code machine and main()
 *
 * Memory (all NOLOAD, so nothing is zeroed or reloaded between runs; see mem.c):
 *   struct state S   persistent: magic, symbols (names, global values, functions), heap/function bounds
 *   pool[]           [pool, heap_top)        heap: blocks of global/local values, compacted when full
 *                    [temp_top, fn_bottom)   temporaries (grow down) below the running statement's code
 *                    [fn_bottom, pool_end)   function definitions (grow down)
 *   vs[]             the machine's value stack: value pointers, local slots and call frames
 */
#ifndef CHIPC_INTERP_H
#define CHIPC_INTERP_H

#include <stddef.h>
#include <stdint.h>
#include "chipc.h"
#include "bignum.h"

/* ---- limits (the language's, mirrored by test/helpers/interp-reference.ts) ---------------- */
#define MAX_LIMBS 256u        /* an integer's magnitude is below 2^8192 ("number too large") */
#define MAX_STR 2048u         /* a string has at most 2048 bytes ("string too long") */
#define MAX_NEST 20u          /* parentheses, unary operators, `**`, argument lists, blocks */
#define MAX_DEPTH 48u         /* nested function calls ("recursion too deep") */
#define STEP_LIMIT 1000000u   /* statements (and while tests) per input ("step limit") */
#define MAX_NAME 64u          /* characters of a name */

/* ---- memory sizes (implementation limits: "out of memory") ----------------------------- */
#define NSYM 128u             /* distinct names */
#define NAMES 1024u           /* bytes of all names */
#define MAX_LOCALS 32u        /* parameters + assigned names of one function */
#define POOL_WORDS 1856u      /* heap + temporaries + functions (7,424 bytes) */
#define VS_WORDS 448u         /* value stack + frames (1,792 bytes) */

/* ---- values --------------------------------------------------------------------------------- */
/* tag V_POS/V_NEG: an integer, the bn_t layout (tag = neg, len limbs, normalized, zero is V_POS
 * with len 0). tag V_STR: a string of len bytes in d, zero-padded to a whole word. Truthiness is
 * len != 0 for both. */
typedef struct val {
  uint32_t tag;
  uint32_t len;
  uint32_t d[];
} val;
enum { V_POS = 0, V_NEG = 1, V_STR = 2 };

static inline uint32_t val_words(const val *v) {
  return 2u + (v->tag == V_STR ? (v->len + 3u) >> 2 : v->len);
}

/* A function definition, a block of the function region: size (words, whole block), sym, then
 * nparams, nlocals, the locals' symbol ids (parameters first), then the code. */
typedef struct fn {
  uint32_t size;
  uint32_t sym;
  uint32_t nparams;
  uint32_t nlocals;
  uint32_t lsym[];
} fn;
#define FN_CODE(f) ((f)->lsym + (f)->nlocals)

/* A name: its bytes in S.names, its global value (or NULL) and function (or NULL). */
typedef struct sym {
  uint16_t off;
  uint8_t len;
  uint8_t pad;
  val *g;
  fn *f;
} sym;

/* The persistent state: survives from run to run (RAM starts zeroed; magic says "initialized"). */
struct state {
  uint32_t magic;
  uint32_t nsyms;
  uint32_t nnames;
  uint32_t mark;       /* symbol count before the current top-level statement */
  uint32_t *heap_top;  /* end of the heap blocks */
  uint32_t holes;      /* words in free blocks below heap_top (what compaction would gain) */
  uint32_t *fn_bottom; /* start of the function region */
  sym syms[NSYM];
  char names[NAMES];
};

/* Per-run state (in .bss: zeroed at every start). */
struct run {
  uint32_t *temp_top; /* lowest temporary word */
  uintptr_t *sp;      /* value stack top (next free) */
  uint32_t line;      /* line of the statement being compiled or run (for errors) */
  uint32_t steps;     /* statements run so far in this input */
};

extern struct state S;
extern struct run R;
extern uint32_t pool[POOL_WORDS];
extern uintptr_t vs[VS_WORDS];
#define POOL_END (pool + POOL_WORDS)

/* ---- word code -------------------------------------------------------------------------------- */
/* One word per instruction: op in bits 0..7, argument in bits 8..31 (signed for jumps: the target
 * is the jump word's address + arg words). OP_CONST is followed by the value's words. */
enum {
  OP_END, OP_STMT, OP_CONST, OP_LOAD, OP_STORE, OP_STORE_LOCAL, OP_POP, OP_SHOW, OP_PRINT,
  OP_JUMP, OP_JF, OP_AND, OP_OR, OP_BOOL, OP_NOT, OP_NEG, OP_LEN, OP_CALL, OP_RET, OP_RET0,
  /* binary operators, in the order of the lexer's tokens TK_PLUS.. (compile.c) */
  OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_POW, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
};
#define OP_ARG(w) ((int32_t)(w) >> 8)

/* One console byte: a store to the MMIO byte (chip, golden emulator) or putchar (qemu build). */
static inline void outc(int c) {
#ifdef CHIPC_CONSOLE_LINUX
  putchar(c);
#else
  *(volatile uint8_t *)CHIPC_CONSOLE = (uint8_t)c;
#endif
}

/* ---- mem.c ------------------------------------------------------------------------------------ */
void fail(const char *msg) __attribute__((noreturn));
void fail_name(const char *msg, uint32_t id) __attribute__((noreturn));
void mem_start(void);
uint32_t *talloc(uint32_t words);
void compact(void);
void assign(val **slot, val *v);
void free_owned(val **slot);
void code_to_top(uint32_t *code, uint32_t n, uint32_t **at);
uint32_t intern(const char *s, uint32_t len);
void rollback_syms(void);
void install_fn(uint32_t id, const uint32_t *code, uint32_t ncode, uint32_t nparams, uint32_t nlocals, const uint32_t *lsym);
void wcopy(uint32_t *dst, const uint32_t *src, uint32_t n);
void wmove(uint32_t *dst, const uint32_t *src, uint32_t n);

/* ---- num.c ------------------------------------------------------------------------------------ */
/* The values 0 and 1 (read-only). */
extern const uint32_t V_ZERO_W[2], V_ONE_W[3];
#define V_ZERO ((val *)(uintptr_t)V_ZERO_W)
#define V_ONE ((val *)(uintptr_t)V_ONE_W)
/* These work on the value stack (R.sp): a value may move while they allocate (compaction). */
void print_top(uint32_t k);   /* prints the value k entries below the top (k >= 1) */
void do_binop(uint32_t op);   /* sp[-2] op sp[-1] -> sp[-2], pops one */
void do_neg(void);
void do_len(void);

/* ---- compile.c ------------------------------------------------------------------------------ */
void lex_start(const uint8_t *p, const uint8_t *end);
int compile_top(uint32_t **code); /* 0: end of input; 1: *code holds a statement; 2: a fn was defined */

/* ---- vm.c ------------------------------------------------------------------------------------- */
void run_code(const uint32_t *code);

#endif
