/*
 * calc: a small RPN calculator of our own. It reads lines from a string in memory, echoes
 * each ("> line"), evaluates it on a 16-deep int32 stack (two's-complement wrap-around;
 * x/0 and x%0 are errors) and prints the single value left, or "error: ...".
 * Words: integers (optional leading '-'), + - * / % (a b op = a op b, C truncating division),
 * dup drop swap over neg.
 * Self-check: every line's outcome against a table of hand-derived results.
 * Exit status: the number of lines whose outcome differs from the table.
 */
#include "chipc.h"

#define DEPTH 16

enum outcome { OK = 0, E_DIV0, E_UNDERFLOW, E_OVERFLOW, E_UNKNOWN, E_DEPTH };

static const char *const messages[] = {
  "", "division by zero", "stack underflow", "stack overflow", "unknown word", "expected exactly one value",
};

static const char program[] =
  "3 4 +\n"
  "5 1 2 + 4 * + 3 -\n"
  "2 3 4 * +\n"
  "100 7 / 100 7 % +\n"
  "-12 5 *\n"
  "7 dup *\n"
  "1 2 swap -\n"
  "4 5 over - *\n"
  "9 neg 3 drop\n"
  "123456 789 * 1000 /\n"
  "-7 2 /\n"
  "-7 2 %\n"
  "46341 46341 *\n"
  "10 0 /\n"
  "1 +\n"
  "2 3\n"
  "6 7 x\n";

struct expect {
  enum outcome outcome;
  int32_t value;
};

/* Worked out by hand (see docs/firmware.md). */
static const struct expect expected[] = {
  {OK, 7}, {OK, 14}, {OK, 14}, {OK, 16}, {OK, -60}, {OK, 49}, {OK, 1}, {OK, 4}, {OK, -9},
  {OK, 97406}, {OK, -3}, {OK, -1}, {OK, -2147479015},
  {E_DIV0, 0}, {E_UNDERFLOW, 0}, {E_DEPTH, 0}, {E_UNKNOWN, 0},
};

static int32_t stack[DEPTH];

static int word_is(const char *w, int len, const char *name) {
  int i = 0;
  while (i < len && name[i] == w[i]) i++;
  return i == len && name[i] == '\0';
}

/* Evaluates the line [s, end); on OK stores the single result in *result. */
static enum outcome eval_line(const char *s, const char *end, int32_t *result) {
  int sp = 0;
  while (s < end) {
    if (*s == ' ') {
      s++;
      continue;
    }
    const char *w = s;
    while (s < end && *s != ' ') s++;
    int len = (int)(s - w);
    int neg = w[0] == '-' && len > 1;
    if (w[neg] >= '0' && w[neg] <= '9') {
      uint32_t v = 0;
      for (int i = neg; i < len; i++) {
        if (w[i] < '0' || w[i] > '9') return E_UNKNOWN;
        v = v * 10u + (uint32_t)(w[i] - '0');
      }
      if (sp == DEPTH) return E_OVERFLOW;
      stack[sp++] = (int32_t)(neg ? 0u - v : v);
      continue;
    }
    if (word_is(w, len, "dup") || word_is(w, len, "over")) {
      int back = w[0] == 'd' ? 1 : 2;
      if (sp < back) return E_UNDERFLOW;
      if (sp == DEPTH) return E_OVERFLOW;
      stack[sp] = stack[sp - back];
      sp++;
      continue;
    }
    if (word_is(w, len, "drop")) {
      if (sp < 1) return E_UNDERFLOW;
      sp--;
      continue;
    }
    if (word_is(w, len, "neg")) {
      if (sp < 1) return E_UNDERFLOW;
      stack[sp - 1] = (int32_t)(0u - (uint32_t)stack[sp - 1]);
      continue;
    }
    if (len != 1 && !word_is(w, len, "swap")) return E_UNKNOWN;
    char op = len == 1 ? w[0] : 's';
    if (op != '+' && op != '-' && op != '*' && op != '/' && op != '%' && op != 's') return E_UNKNOWN;
    if (sp < 2) return E_UNDERFLOW;
    uint32_t a = (uint32_t)stack[sp - 2], b = (uint32_t)stack[sp - 1];
    int32_t r;
    switch (op) {
      case '+': r = (int32_t)(a + b); break;
      case '-': r = (int32_t)(a - b); break;
      case '*': r = (int32_t)(a * b); break;
      case 's':
        stack[sp - 2] = (int32_t)b;
        stack[sp - 1] = (int32_t)a;
        continue;
      default:
        if (b == 0) return E_DIV0;
        if (b == 0xFFFFFFFFu) {
          /* x / -1 = -x and x % -1 = 0, without C's INT_MIN / -1 overflow. */
          r = op == '/' ? (int32_t)(0u - a) : 0;
        } else {
          r = op == '/' ? (int32_t)a / (int32_t)b : (int32_t)a % (int32_t)b;
        }
    }
    stack[sp - 2] = r;
    sp--;
  }
  if (sp != 1) return E_DEPTH;
  *result = stack[0];
  return OK;
}

int main(void) {
  const char *p = program;
  unsigned line = 0, mismatches = 0;
  while (*p) {
    const char *end = p;
    while (*end && *end != '\n') end++;
    print_str("> ");
    for (const char *q = p; q < end; q++) putchar(*q);
    putchar('\n');
    int32_t value = 0;
    enum outcome got = eval_line(p, end, &value);
    if (got == OK) {
      print_i32(value);
      putchar('\n');
    } else {
      print_str("error: ");
      puts(messages[got]);
    }
    if (line >= sizeof expected / sizeof expected[0] || got != expected[line].outcome ||
        (got == OK && value != expected[line].value)) {
      mismatches++;
    }
    line++;
    p = *end ? end + 1 : end;
  }
  if (line != sizeof expected / sizeof expected[0]) mismatches++;
  puts(mismatches ? "calc: FAIL" : "calc: ok");
  return (int)mismatches;
}
