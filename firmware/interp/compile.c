/*
 * The interpreter's lexer and compiler: recursive descent, one token of lookahead, straight to
 * word code (interp.h) at the heap top. A top-level statement is compiled whole, then run (vm.c);
 * a function definition is compiled and installed in the function region. Literals become
 * constants inside the code: integers are parsed nine digits at a time (bnu_mul_1 by 10^9 plus
 * the chunk), strings with their escapes resolved. Jumps are relative, so code can be moved.
 */
#include "interp.h"

enum {
  TK_EOF, TK_SEP, TK_NUM, TK_STR, TK_NAME,
  /* keywords, in the order of `keywords` below */
  TK_FN, TK_IF, TK_ELSE, TK_WHILE, TK_RETURN, TK_AND, TK_OR, TK_NOT, TK_PRINT, TK_LEN,
  TK_LP, TK_RP, TK_LB, TK_RB, TK_COMMA, TK_ASSIGN,
  /* binary operators, in the order of OP_ADD.. */
  TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_PCT, TK_POW, TK_EQ, TK_NE, TK_LT, TK_LE, TK_GT, TK_GE,
};

/* Keywords, found by their first letter: no two share (first letter & 15). */
static const char kwtext[] = "fn\0if\0else\0while\0return\0and\0or\0not\0print\0len";
static const uint8_t kwoff[10] = {0, 3, 6, 11, 17, 24, 28, 31, 35, 41};
static const uint8_t kwslot[16] = {
  [0x66 & 15] = TK_FN, [0x69 & 15] = TK_IF, [0x65 & 15] = TK_ELSE, [0x77 & 15] = TK_WHILE, [0x72 & 15] = TK_RETURN,
  [0x61 & 15] = TK_AND, [0x6f & 15] = TK_OR, [0x6e & 15] = TK_NOT, [0x70 & 15] = TK_PRINT, [0x6c & 15] = TK_LEN,
};

/* Lexer and compiler state: set up by lex_start and compile_top, so kept out of .bss (whose
 * zeroing costs instructions at every start). */
static struct lexer {
  const uint8_t *p, *end, *tstart;
  uint32_t line, tk, tlen;
} L __attribute__((section(".persist")));

static struct compiler {
  uint32_t *cb;   /* code being written: cb[0..cn) */
  uint32_t cn;
  uint32_t nest;  /* open nesting levels (MAX_NEST) */
  uint32_t in_fn; /* compiling a function body */
  uint32_t nlocals;
} C __attribute__((section(".persist")));

/* The locals of the function being compiled (not zeroed at start: only [0, C.nlocals) is read). */
/* Words reserved for the code of a top-level statement below the function region (more: moved). */
#define TOP_CODE 64u

static uint32_t lsyms[MAX_LOCALS] __attribute__((section(".persist")));

static void serr(void) __attribute__((noreturn));
static void serr(void) {
  fail("syntax error");
}

/* ---- lexer -------------------------------------------------------------------------------------- */

/* Character classes for the lexer: below 32 a class, from 32 on a one-character token + 32. */
enum { C_BAD, C_SPACE, C_HASH, C_NL, C_DIGIT, C_ALPHA, C_QUOTE, C_STAR, C_EQ, C_BANG, C_LT, C_GT };
#define T1(tk) ((tk) + 32)
static const uint8_t cls[128] = {
  ['\t'] = C_SPACE, ['\r'] = C_SPACE, [' '] = C_SPACE, ['#'] = C_HASH, ['\n'] = C_NL, ['"'] = C_QUOTE,
  ['0'] = C_DIGIT, ['1'] = C_DIGIT, ['2'] = C_DIGIT, ['3'] = C_DIGIT, ['4'] = C_DIGIT,
  ['5'] = C_DIGIT, ['6'] = C_DIGIT, ['7'] = C_DIGIT, ['8'] = C_DIGIT, ['9'] = C_DIGIT,
  ['a' ... 'z'] = C_ALPHA, ['A' ... 'Z'] = C_ALPHA, ['_'] = C_ALPHA,
  ['*'] = C_STAR, ['='] = C_EQ, ['!'] = C_BANG, ['<'] = C_LT, ['>'] = C_GT,
  [';'] = T1(TK_SEP), ['('] = T1(TK_LP), [')'] = T1(TK_RP), ['{'] = T1(TK_LB), ['}'] = T1(TK_RB),
  [','] = T1(TK_COMMA), ['+'] = T1(TK_PLUS), ['-'] = T1(TK_MINUS), ['/'] = T1(TK_SLASH), ['%'] = T1(TK_PCT),
};

static uint32_t class_of(uint32_t c) {
  return c < 128 ? cls[c] : C_BAD;
}

/* Scans the next token. R.line is the line of the current token (compile errors report it).
 * A number is not scanned here: number() reads its digits from L.tstart. */
static void advance(void) {
  const uint8_t *p = L.p, *e = L.end;
  uint32_t k;
  for (;;) {
    if (p == e) {
      L.tk = TK_EOF;
      R.line = L.line;
      L.p = p;
      return;
    }
    k = class_of(*p);
    if (k == C_SPACE) {
      p++;
    } else if (k == C_HASH) {
      while (p < e && *p != '\n') p++;
    } else {
      break;
    }
  }
  R.line = L.line;
  L.tstart = p;
  uint32_t tk;
  if (k >= 32) {
    tk = k - 32;
    p++;
  } else if (k == C_DIGIT) {
    tk = TK_NUM;
  } else if (k == C_ALPHA) {
    uint32_t c = *p;
    while (++p < e && class_of(*p) - C_DIGIT <= 1u) {
    }
    uint32_t len = (uint32_t)(p - L.tstart);
    if (len > MAX_NAME) serr();
    L.tlen = len;
    tk = TK_NAME;
    uint32_t t = kwslot[c & 15];
    if (t != 0) {
      const char *kw = kwtext + kwoff[t - TK_FN];
      uint32_t i = 0;
      while (i < len && (uint8_t)kw[i] == L.tstart[i]) i++;
      if (i == len && kw[i] == 0) tk = t;
    }
  } else if (k == C_NL) {
    L.line++;
    tk = TK_SEP;
    p++;
  } else if (k == C_QUOTE) {
    for (p++;;) {
      if (p == e || *p == '\n') fail("unterminated string");
      uint32_t c = *p++;
      if (c == '"') break;
      if (c == '\\') {
        if (p == e || *p == '\n') fail("unterminated string");
        c = *p++;
        if (c != 'n' && c != '"' && c != '\\') serr();
      }
    }
    tk = TK_STR;
  } else {
    /* * ** = == != < <= > >= */
    p++;
    uint32_t n = p < e ? *p : 0, eq = n == '=';
    switch (k) {
      case C_STAR: tk = TK_STAR; if (n == '*') tk = TK_POW; eq = n == '*'; break;
      case C_EQ: tk = eq ? TK_EQ : TK_ASSIGN; break;
      case C_BANG: if (!eq) serr(); tk = TK_NE; break;
      case C_LT: tk = eq ? TK_LE : TK_LT; break;
      case C_GT: tk = eq ? TK_GE : TK_GT; break;
      default: serr();
    }
    p += eq;
  }
  L.tk = tk;
  L.p = p;
}

void lex_start(const uint8_t *p, const uint8_t *end) {
  L.p = p;
  L.end = end;
  L.line = 1;
  advance();
}

/* ---- code ------------------------------------------------------------------------------------- */

/* Makes room for k more code words below the function region (compacting the heap and moving
 * the code down with it if needed). */
static void ensure(uint32_t k) {
  if ((uint32_t)(S.fn_bottom - C.cb) - C.cn >= k) return;
  compact();
  wcopy(S.heap_top, C.cb, C.cn);
  C.cb = S.heap_top;
  if ((uint32_t)(S.fn_bottom - C.cb) - C.cn < k) fail("out of memory");
}

static void emit(uint32_t w) {
  if (C.cb + C.cn >= S.fn_bottom) ensure(1);
  C.cb[C.cn++] = w;
}

static void emit_op(uint32_t op, uint32_t arg) {
  emit(op | arg << 8);
}

/* Points the jump at `at` to the current end of the code. */
static void patch(uint32_t at) {
  C.cb[at] = (C.cb[at] & 0xffu) | (C.cn - at) << 8;
}

static void nest_in(void) {
  if (++C.nest > MAX_NEST) fail("nesting too deep");
}

static void expect(uint32_t tk) {
  if (L.tk != tk) serr();
  advance();
}

/* An integer literal: OP_CONST, then the value (bn_t layout) built in place: each chunk of up to
 * 9 digits is added as acc = acc * 10^k + chunk (bnu_mul_1). */
static __attribute__((noinline)) void number(void) {
  static const uint32_t pow10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};
  const uint8_t *s = L.tstart, *e = L.end;
  ensure(3);
#ifdef CHIPC_BN_UNIT
  bn_carry_clear();
#endif
  uint32_t at = C.cn + 3, n = 0, room = 0;
  C.cb[C.cn] = OP_CONST;
  C.cb[C.cn + 1] = V_POS;
  for (;;) {
    const uint8_t *t = s, *lim = e - s > 9 ? s + 9 : e;
    uint32_t chunk = 0, d;
    while (t < lim && (d = (uint32_t)*t - '0') <= 9) {
      chunk = chunk * 10u + d;
      t++;
    }
    uint32_t k = (uint32_t)(t - s);
    if (k == 0) break;
    s = t;
    uint32_t *acc = C.cb + at, m = pow10[k], hi;
#ifdef CHIPC_BN_UNIT
    for (uint32_t i = 0; i < n; i++) { /* acc = acc * m + chunk on the unit (C0 is 0 here) */
      acc[i] = bn_mac(chunk, acc[i], m);
      chunk = 0;
    }
    hi = bn_carry_take(chunk);
#else
    hi = bnu_mul_1(acc, acc, n, m, chunk);
#endif
    if (hi != 0) {
      if (n == room) { /* make room for more limbs (rarely: a few at a time) */
        if (n == MAX_LIMBS) fail("number too large");
        C.cn = at + n;
        ensure(8);
        room = n + 8;
      }
      C.cb[at + n++] = hi;
    }
    if (k < 9) break;
  }
  C.cb[at - 1] = n;
  C.cn = at + n;
  L.p = s;
  advance();
}

/* A string literal (already checked by the lexer): OP_CONST, then the value with escapes resolved. */
static __attribute__((noinline)) void string(void) {
  const uint8_t *s = L.tstart + 1, *e = L.p - 1; /* between the quotes */
  uint32_t raw = (uint32_t)(e - s);
  ensure(3 + ((raw + 3) >> 2));
  uint32_t *v = C.cb + C.cn;
  uint8_t *o = (uint8_t *)(v + 3);
  v[0] = OP_CONST;
  v[1] = V_STR;
  uint32_t n = 0;
  while (s < e) {
    uint32_t c = *s++;
    if (c == '\\') {
      c = *s++;
      if (c == 'n') c = '\n';
    }
    o[n++] = (uint8_t)c;
  }
  if (n > MAX_STR) fail("string too long");
  v[2] = n;
  while (n & 3u) o[n++] = 0;
  C.cn += 3 + (n >> 2);
  advance();
}

/* ---- expressions ------------------------------------------------------------------------------ */

static void expr(uint32_t minp);

static uint32_t intern_token(void) {
  return intern((const char *)L.tstart, L.tlen);
}

/* `(` a, b, … `)` after a call or print: returns the argument count. */
static uint32_t args(void) {
  uint32_t n = 0;
  if (L.tk != TK_LP) serr();
  nest_in();
  advance();
  if (L.tk != TK_RP) {
    for (;;) {
      expr(1);
      n++;
      if (L.tk != TK_COMMA) break;
      advance();
    }
  }
  expect(TK_RP);
  C.nest--;
  return n;
}

static __attribute__((noinline)) void primary(void) {
  switch (L.tk) {
    case TK_NUM: number(); return;
    case TK_STR: string(); return;
    case TK_NAME: {
      uint32_t s = intern_token();
      advance();
      if (L.tk != TK_LP) {
        emit_op(OP_LOAD, s);
        return;
      }
      uint32_t n = args();
      emit_op(OP_CALL, s | n << 7); /* s < NSYM = 128 */
      return;
    }
    case TK_LEN:
      advance();
      if (L.tk != TK_LP) serr();
      nest_in();
      advance();
      expr(1);
      expect(TK_RP);
      C.nest--;
      emit(OP_LEN);
      return;
    case TK_LP:
      nest_in();
      advance();
      expr(1);
      expect(TK_RP);
      C.nest--;
      return;
    default: serr();
  }
}

/* unary := '-' unary | primary ('**' unary)?   (-2**2 = -(2**2); 2**-1 parses, then fails) */
static void unary(void) {
  if (L.tk == TK_MINUS) {
    nest_in();
    advance();
    uint32_t at = C.cn;
    unary();
    C.nest--;
    uint32_t *c = C.cb + at;
    if (c[0] == OP_CONST && c[1] != V_STR && at + 3 + c[2] == C.cn) {
      if (c[2] != 0) c[1] ^= 1u; /* a literal: negate it in place */
    } else {
      emit(OP_NEG);
    }
    return;
  }
  primary();
  if (L.tk == TK_POW) {
    nest_in();
    advance();
    unary();
    C.nest--;
    emit(OP_POW);
  }
}

/* Binding strength of a binary operator token (0: none). */
static uint32_t prec(uint32_t tk) {
  if (tk == TK_OR) return 1;
  if (tk == TK_AND) return 2;
  if (tk >= TK_EQ) return 4;
  if (tk == TK_PLUS || tk == TK_MINUS) return 5;
  if (tk >= TK_STAR && tk <= TK_PCT) return 6;
  return 0;
}

/* Precedence climbing: or 1, and 2, not 3 (prefix), comparisons 4 (not chained), + - 5, * / % 6. */
static void expr(uint32_t minp) {
  if (L.tk == TK_NOT && minp <= 3) {
    nest_in();
    advance();
    expr(3);
    C.nest--;
    emit(OP_NOT);
  } else {
    unary();
  }
  for (;;) {
    uint32_t tk = L.tk, p = prec(tk);
    if (p == 0 || p < minp) return;
    advance();
    if (p <= 2) { /* short circuit: OP_AND/OP_OR jump over the right operand */
      uint32_t at = C.cn;
      emit(tk == TK_OR ? OP_OR : OP_AND);
      expr(p + 1);
      emit(OP_BOOL);
      patch(at);
    } else {
      expr(p + 1);
      emit(tk - TK_PLUS + OP_ADD);
      if (p == 4 && prec(L.tk) == 4) serr();
    }
  }
}

/* ---- statements -------------------------------------------------------------------------------- */

static void statement(void);

static void stmt_op(void) {
  emit_op(OP_STMT, R.line);
}

static void block(void) {
  if (L.tk != TK_LB) serr();
  nest_in();
  advance();
  for (;;) {
    while (L.tk == TK_SEP) advance();
    if (L.tk == TK_RB) break;
    statement();
    if (L.tk != TK_SEP && L.tk != TK_RB) serr();
  }
  C.nest--;
  advance();
}

static uint32_t local_slot(uint32_t s) {
  for (uint32_t i = 0; i < C.nlocals; i++) {
    if (lsyms[i] == s) return i;
  }
  if (C.nlocals == MAX_LOCALS) fail("out of memory");
  lsyms[C.nlocals] = s;
  return C.nlocals++;
}

/* Does `=` (not `==`) follow the current name token? */
static int assignment_follows(void) {
  const uint8_t *q = L.p, *e = L.end;
  while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
  return q < e && *q == '=' && !(q + 1 < e && q[1] == '=');
}

static void statement(void) {
  switch (L.tk) {
    case TK_IF: {
      uint32_t chain = 0; /* the jumps to the end, linked through their arguments */
      for (;;) {
        stmt_op();
        advance();
        expr(1);
        uint32_t jf = C.cn;
        emit(OP_JF);
        block();
        if (L.tk != TK_ELSE) {
          patch(jf);
          break;
        }
        uint32_t j = C.cn;
        emit_op(OP_JUMP, chain);
        chain = j;
        patch(jf);
        advance();
        if (L.tk != TK_IF) {
          block();
          break;
        }
      }
      while (chain != 0) {
        uint32_t next = C.cb[chain] >> 8;
        patch(chain);
        chain = next;
      }
      return;
    }
    case TK_WHILE: {
      uint32_t top = C.cn;
      stmt_op();
      advance();
      expr(1);
      uint32_t jf = C.cn;
      emit(OP_JF);
      block();
      emit_op(OP_JUMP, (top - C.cn) & 0xffffffu);
      patch(jf);
      return;
    }
    case TK_RETURN:
      if (!C.in_fn) serr();
      stmt_op();
      advance();
      if (L.tk == TK_SEP || L.tk == TK_RB || L.tk == TK_EOF) {
        emit(OP_RET0);
      } else {
        expr(1);
        emit(OP_RET);
      }
      return;
    case TK_PRINT: {
      stmt_op();
      advance();
      uint32_t n = args();
      emit_op(OP_PRINT, n);
      return;
    }
    case TK_NAME:
      if (assignment_follows()) {
        uint32_t s = intern_token();
        stmt_op();
        advance();
        advance();
        expr(1);
        if (C.in_fn) {
          emit_op(OP_STORE_LOCAL, local_slot(s));
        } else {
          emit_op(OP_STORE, s);
        }
        return;
      }
      break;
    default: break;
  }
  stmt_op();
  expr(1);
  emit(C.in_fn ? OP_POP : OP_SHOW);
}

/* fn name(params) { body }: compiled at the heap top, then moved into the function region. */
static __attribute__((noinline)) void fndef(void) {
  advance();
  if (L.tk != TK_NAME) serr();
  uint32_t f = intern_token();
  advance();
  expect(TK_LP);
  C.nlocals = 0;
  if (L.tk != TK_RP) {
    for (;;) {
      if (L.tk != TK_NAME) serr();
      uint32_t s = intern_token(), i = C.nlocals;
      if (local_slot(s) != i) serr(); /* a repeated parameter */
      advance();
      if (L.tk != TK_COMMA) break;
      advance();
    }
  }
  expect(TK_RP);
  uint32_t np = C.nlocals;
  C.in_fn = 1;
  C.cb = S.heap_top;
  C.cn = 0;
  block();
  emit(OP_RET0);
  C.in_fn = 0;
  if (L.tk != TK_SEP && L.tk != TK_EOF) serr();
  ensure(4 + C.nlocals);
  install_fn(f, C.cb, C.cn, np, C.nlocals, lsyms);
}

int compile_top(uint32_t **code) {
  while (L.tk == TK_SEP) advance();
  if (L.tk == TK_EOF) return 0;
  S.mark = S.nsyms;
  C.nest = 0;
  if (L.tk == TK_FN) {
    fndef();
    S.mark = S.nsyms;
    return 2;
  }
  /* Compiled right below the function region when it fits TOP_CODE words (then it runs there,
   * the temporaries growing down from it), else at the heap top and then moved up. */
  uint32_t *top = S.fn_bottom - TOP_CODE;
  C.in_fn = 0;
  C.cb = top >= S.heap_top ? top : S.heap_top;
  C.cn = 0;
  statement();
  if (L.tk != TK_SEP && L.tk != TK_EOF) serr();
  emit(OP_END);
  if (C.cb == top) {
    *code = top;
  } else {
    code_to_top(C.cb, C.cn, code);
  }
  return 1;
}
