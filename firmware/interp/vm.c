/*
 * The interpreter's word-code machine and main(). main reads the console input (the chip's input
 * area, or standard input in the qemu build), then compiles and runs it one top-level statement
 * at a time (docs/firmware.md "The interpreter").
 *
 * The value stack vs holds value pointers. A call turns its arguments into the first local slots
 * of the new frame, adds the other locals (NULL: not yet assigned) and a 5-word header:
 *
 *   fp -> [local 0 .. local nlocals-1][ret pc][caller fp][caller tbase][caller fn][caller line] [pending values…]
 *
 * Header words never equal a heap value's address (they are code/temporary/function addresses,
 * which lie above the heap, or small numbers), so compaction may scan the whole stack for aliases.
 */
#include "interp.h"

extern uint32_t __input_area[];
extern char __input_size[];

#define HDR 5u

static inline __attribute__((always_inline)) void push(uintptr_t v) {
  if (R.sp == vs + VS_WORDS) fail("out of memory");
  *R.sp++ = v;
}

void run_code(const uint32_t *pc) {
  uintptr_t *fp = R.sp;     /* locals of the running function */
  const fn *cur = NULL;     /* the running function (NULL: top level) */
  uint32_t *tbase = R.temp_top; /* each statement resets the temporaries to this */
  uint32_t depth = 0;
  for (;;) {
    uint32_t w = *pc++;
    switch (w & 0xffu) {
      case OP_END: return;
      case OP_STMT:
        R.line = w >> 8;
        if (++R.steps > STEP_LIMIT) fail("step limit");
        R.temp_top = tbase;
        break;
      case OP_CONST:
        push((uintptr_t)pc);
        pc += val_words((const val *)pc);
        break;
      case OP_LOAD: {
        uint32_t s = w >> 8;
        val *v = NULL;
        if (cur != NULL) {
          for (uint32_t i = 0; i < cur->nlocals; i++) {
            if (cur->lsym[i] == s) {
              v = (val *)fp[i];
              break;
            }
          }
        }
        if (v == NULL) v = S.syms[s].g;
        if (v == NULL) fail_name("unknown variable", s);
        push((uintptr_t)v);
        break;
      }
      case OP_STORE:
        assign(&S.syms[w >> 8].g, (val *)R.sp[-1]);
        R.sp--;
        break;
      case OP_STORE_LOCAL:
        assign((val **)&fp[w >> 8], (val *)R.sp[-1]);
        R.sp--;
        break;
      case OP_POP: R.sp--; break;
      case OP_SHOW:
        print_top(1);
        outc('\n');
        R.sp--;
        break;
      case OP_PRINT: {
        uint32_t n = w >> 8;
        for (uint32_t i = n; i > 0; i--) {
          print_top(i);
          if (i > 1) outc(' ');
        }
        outc('\n');
        R.sp -= n;
        break;
      }
      case OP_JUMP: pc += OP_ARG(w) - 1; break;
      case OP_JF:
        R.sp--;
        if (((const val *)*R.sp)->len == 0) pc += OP_ARG(w) - 1;
        break;
      case OP_AND:
        if (((const val *)R.sp[-1])->len == 0) {
          R.sp[-1] = (uintptr_t)V_ZERO;
          pc += OP_ARG(w) - 1;
        } else {
          R.sp--;
        }
        break;
      case OP_OR:
        if (((const val *)R.sp[-1])->len != 0) {
          R.sp[-1] = (uintptr_t)V_ONE;
          pc += OP_ARG(w) - 1;
        } else {
          R.sp--;
        }
        break;
      case OP_BOOL: R.sp[-1] = (uintptr_t)(((const val *)R.sp[-1])->len ? V_ONE : V_ZERO); break;
      case OP_NOT: R.sp[-1] = (uintptr_t)(((const val *)R.sp[-1])->len ? V_ZERO : V_ONE); break;
      case OP_NEG: do_neg(); break;
      case OP_LEN: do_len(); break;
      case OP_CALL: {
        uint32_t s = (w >> 8) & 127u, argc = w >> 15;
        const fn *f = S.syms[s].f;
        if (f == NULL) fail_name("unknown function", s);
        if (argc != f->nparams) fail_name("wrong number of arguments for", s);
        if (depth == MAX_DEPTH) fail("recursion too deep");
        uint32_t extra = f->nlocals - argc;
        if ((uint32_t)(vs + VS_WORDS - R.sp) < extra + HDR) fail("out of memory");
        uintptr_t *nfp = R.sp - argc;
        for (; extra > 0; extra--) *R.sp++ = 0;
        R.sp[0] = (uintptr_t)pc;
        R.sp[1] = (uintptr_t)fp;
        R.sp[2] = (uintptr_t)tbase;
        R.sp[3] = (uintptr_t)cur;
        R.sp[4] = R.line;
        R.sp += HDR;
        fp = nfp;
        cur = f;
        tbase = R.temp_top;
        pc = FN_CODE(f);
        depth++;
        break;
      }
      case OP_RET0:
        push((uintptr_t)V_ZERO);
        /* fall through */
      case OP_RET: {
        /* The result must outlive the call's temporaries and locals: a value below tbase (one of
         * them, or a heap value) is copied to just below tbase, the caller's temporaries. */
        val *v = (val *)R.sp[-1];
        R.temp_top = tbase;
        if ((uint32_t *)v >= pool && (uint32_t *)v < tbase) {
          uint32_t n = val_words(v);
          uint32_t *dst = talloc(n); /* may compact: v is on the stack */
          wmove(dst, (const uint32_t *)R.sp[-1], n);
          v = (val *)dst;
        }
        for (uint32_t i = cur->nlocals; i > 0; i--) free_owned((val **)&fp[i - 1]);
        const uintptr_t *h = fp + cur->nlocals;
        pc = (const uint32_t *)h[0];
        tbase = (uint32_t *)h[2];
        cur = (const fn *)h[3];
        R.line = h[4];
        R.sp = fp;
        fp = (uintptr_t *)h[1];
        *R.sp++ = (uintptr_t)v;
        depth--;
        break;
      }
      default: do_binop(w & 0xffu); break;
    }
  }
}

int main(void) {
  mem_start();
  R.steps = 0;
  uint8_t *in = (uint8_t *)(__input_area + 1);
  uint32_t cap = (uint32_t)(uintptr_t)__input_size - 4u, n;
#ifdef CHIPC_CONSOLE_LINUX
  int c;
  n = 0;
  while ((c = getchar()) >= 0) {
    if (n == cap) {
      puts("error: input too long");
      return 1;
    }
    in[n++] = (uint8_t)c;
  }
#else
  n = __input_area[0];
  if (n > cap) n = cap;
#endif
  lex_start(in, in + n);
  uint32_t *code;
  int k;
  while ((k = compile_top(&code)) != 0) {
    if (k == 1) {
      R.temp_top = code;
      run_code(code);
      rollback_syms();
      S.mark = S.nsyms;
    }
  }
  return 0;
}
