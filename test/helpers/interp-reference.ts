/**
 * Reference implementation of the firmware interpreter's language (docs/firmware.md "The
 * interpreter"), written from that specification with BigInt, independently of the C code in
 * firmware/interp: a lazy tokenizer, a parser that builds a syntax tree per top-level statement,
 * and a tree-walking evaluator. `runInput` gives the console bytes and the exit code the firmware
 * must produce for one input; a `ReplState` carries globals and functions from input to input, as
 * the firmware's persistent memory does across service calls.
 *
 * Bytes: the input and every string value are byte strings, kept here as JS strings whose char
 * codes are the bytes (latin1).
 */

export const LIMITS = {
  /** An integer's magnitude must stay below 2^maxBits. */
  maxBits: 8192,
  /** Bytes of a string. */
  maxStr: 2048,
  /** Open nesting levels while parsing: ( of a group, call, len or print, unary - and not, **, {. */
  maxNest: 20,
  /** Nested function calls. */
  maxDepth: 48,
  /** Statements run (while: condition tests) per input. */
  stepLimit: 1_000_000,
  /** Characters of a name. */
  maxName: 64,
} as const;

const INT_LIMIT = 1n << BigInt(LIMITS.maxBits);

/** A value: an integer, or a byte string. */
export type Value = bigint | { str: string };

export interface FnDef {
  name: string;
  params: string[];
  body: Stmt[];
}

export interface ReplState {
  globals: Map<string, Value>;
  functions: Map<string, FnDef>;
}

export function newState(): ReplState {
  return { globals: new Map(), functions: new Map() };
}

/** An error the program reports: "error: line L: what". */
export class LangError extends Error {
  constructor(readonly line: number, readonly what: string) {
    super(`error: line ${line}: ${what}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Tokens

type TokKind = 'eof' | 'sep' | 'num' | 'str' | 'name' | 'kw' | 'op';
interface Tok {
  kind: TokKind;
  /** name / keyword / operator text, the digits of a number, the bytes of a string (escapes resolved). */
  text: string;
  line: number;
}

const KEYWORDS = new Set(['fn', 'if', 'else', 'while', 'return', 'and', 'or', 'not', 'print', 'len']);
const isDigit = (c: string) => c >= '0' && c <= '9';
const isAlpha = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';

class Lexer {
  private pos = 0;
  private line = 1;
  constructor(private readonly src: string) {}

  next(): Tok {
    const s = this.src;
    while (this.pos < s.length) {
      const c = s[this.pos]!;
      if (c === ' ' || c === '\t' || c === '\r') this.pos++;
      else if (c === '#') {
        while (this.pos < s.length && s[this.pos] !== '\n') this.pos++;
      } else break;
    }
    const line = this.line;
    if (this.pos >= s.length) return { kind: 'eof', text: '', line };
    const start = this.pos;
    const c = s[this.pos++]!;
    if (c === '\n') {
      this.line++;
      return { kind: 'sep', text: '\n', line };
    }
    if (c === ';') return { kind: 'sep', text: ';', line };
    if (isDigit(c)) {
      while (this.pos < s.length && isDigit(s[this.pos]!)) this.pos++;
      return { kind: 'num', text: s.slice(start, this.pos), line };
    }
    if (isAlpha(c)) {
      while (this.pos < s.length && (isAlpha(s[this.pos]!) || isDigit(s[this.pos]!))) this.pos++;
      const text = s.slice(start, this.pos);
      if (text.length > LIMITS.maxName) throw new LangError(line, 'syntax error');
      return { kind: KEYWORDS.has(text) ? 'kw' : 'name', text, line };
    }
    if (c === '"') {
      let text = '';
      for (;;) {
        if (this.pos >= s.length || s[this.pos] === '\n') throw new LangError(line, 'unterminated string');
        const ch = s[this.pos++]!;
        if (ch === '"') break;
        if (ch === '\\') {
          if (this.pos >= s.length || s[this.pos] === '\n') throw new LangError(line, 'unterminated string');
          const e = s[this.pos++]!;
          if (e === 'n') text += '\n';
          else if (e === '"' || e === '\\') text += e;
          else throw new LangError(line, 'syntax error');
        } else text += ch;
      }
      return { kind: 'str', text, line };
    }
    const two = s.slice(start, start + 2);
    if (['**', '==', '!=', '<=', '>='].includes(two)) {
      this.pos++;
      return { kind: 'op', text: two, line };
    }
    if ('+-*/%<>=(){},'.includes(c)) return { kind: 'op', text: c, line };
    throw new LangError(line, 'syntax error');
  }
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

export type Expr =
  | { k: 'int'; v: bigint }
  | { k: 'str'; v: string }
  | { k: 'var'; name: string }
  | { k: 'call'; name: string; args: Expr[] }
  | { k: 'len'; arg: Expr }
  | { k: 'neg'; arg: Expr }
  | { k: 'not'; arg: Expr }
  | { k: 'and' | 'or'; l: Expr; r: Expr }
  | { k: 'bin'; op: string; l: Expr; r: Expr };

export type Stmt =
  | { k: 'expr'; line: number; e: Expr }
  | { k: 'assign'; line: number; name: string; e: Expr }
  | { k: 'print'; line: number; args: Expr[] }
  | { k: 'return'; line: number; e: Expr | null }
  | { k: 'if'; line: number; cond: Expr; then: Stmt[]; else: Stmt[] | null }
  | { k: 'while'; line: number; cond: Expr; body: Stmt[] };

const CMP_OPS = ['==', '!=', '<', '<=', '>', '>='];

class Parser {
  tok: Tok;
  private nest = 0;
  private inFn = false;
  constructor(private readonly lx: Lexer) {
    this.tok = lx.next();
  }

  private advance(): void {
    this.tok = this.lx.next();
  }
  private is(kind: TokKind, text?: string): boolean {
    return this.tok.kind === kind && (text === undefined || this.tok.text === text);
  }
  private fail(): never {
    throw new LangError(this.tok.line, 'syntax error');
  }
  private expectOp(text: string): void {
    if (!this.is('op', text)) this.fail();
    this.advance();
  }
  /** Opens a nesting level at the current token (checked before it is consumed). */
  private open(): void {
    if (++this.nest > LIMITS.maxNest) throw new LangError(this.tok.line, 'nesting too deep');
  }
  private close(): void {
    this.nest--;
  }
  private atStatementEnd(): boolean {
    return this.is('sep') || this.is('eof');
  }

  /** Skips separators; true at the end of the input. */
  skipSeparators(): boolean {
    while (this.is('sep')) this.advance();
    return this.is('eof');
  }

  /** One top-level statement (the current token starts it): a function definition or a statement. */
  topLevel(): { fn: FnDef } | { stmt: Stmt } {
    this.nest = 0;
    if (this.is('kw', 'fn')) {
      const fn = this.fnDef();
      if (!this.atStatementEnd()) this.fail();
      return { fn };
    }
    this.inFn = false;
    const stmt = this.statement();
    if (!this.atStatementEnd()) this.fail();
    return { stmt };
  }

  private fnDef(): FnDef {
    this.advance();
    if (!this.is('name')) this.fail();
    const name = this.tok.text;
    this.advance();
    this.expectOp('(');
    const params: string[] = [];
    if (!this.is('op', ')')) {
      for (;;) {
        if (!this.is('name')) this.fail();
        if (params.includes(this.tok.text)) this.fail();
        params.push(this.tok.text);
        this.advance();
        if (!this.is('op', ',')) break;
        this.advance();
      }
    }
    this.expectOp(')');
    this.inFn = true;
    const body = this.block();
    this.inFn = false;
    return { name, params, body };
  }

  private block(): Stmt[] {
    if (!this.is('op', '{')) this.fail();
    this.open();
    this.advance();
    const out: Stmt[] = [];
    for (;;) {
      while (this.is('sep')) this.advance();
      if (this.is('op', '}')) break;
      out.push(this.statement());
      if (!this.is('sep') && !this.is('op', '}')) this.fail();
    }
    this.close();
    this.advance();
    return out;
  }

  private statement(): Stmt {
    const line = this.tok.line;
    if (this.is('kw', 'if')) {
      this.advance();
      const cond = this.expr();
      const then = this.block();
      let els: Stmt[] | null = null;
      if (this.is('kw', 'else')) {
        this.advance();
        els = this.is('kw', 'if') ? [this.statement()] : this.block();
      }
      return { k: 'if', line, cond, then, else: els };
    }
    if (this.is('kw', 'while')) {
      this.advance();
      const cond = this.expr();
      return { k: 'while', line, cond, body: this.block() };
    }
    if (this.is('kw', 'return')) {
      if (!this.inFn) this.fail();
      this.advance();
      if (this.is('sep') || this.is('eof') || this.is('op', '}')) return { k: 'return', line, e: null };
      return { k: 'return', line, e: this.expr() };
    }
    if (this.is('kw', 'print')) {
      this.advance();
      return { k: 'print', line, args: this.argList() };
    }
    if (this.is('name')) {
      // name = expr: decided by the token after the name
      const name = this.tok.text;
      const saved = { ...this.lx } as Lexer;
      const peek = this.lx.next();
      Object.assign(this.lx, saved);
      if (peek.kind === 'op' && peek.text === '=') {
        this.advance();
        this.advance();
        return { k: 'assign', line, name, e: this.expr() };
      }
    }
    return { k: 'expr', line, e: this.expr() };
  }

  private argList(): Expr[] {
    if (!this.is('op', '(')) this.fail();
    this.open();
    this.advance();
    const args: Expr[] = [];
    if (!this.is('op', ')')) {
      for (;;) {
        args.push(this.expr());
        if (!this.is('op', ',')) break;
        this.advance();
      }
    }
    this.expectOp(')');
    this.close();
    return args;
  }

  // expr := and ('or' and)* ; and := not ('and' not)* ; not := 'not' not | cmp
  expr(): Expr {
    let l = this.andExpr();
    while (this.is('kw', 'or')) {
      this.advance();
      l = { k: 'or', l, r: this.andExpr() };
    }
    return l;
  }
  private andExpr(): Expr {
    let l = this.notExpr();
    while (this.is('kw', 'and')) {
      this.advance();
      l = { k: 'and', l, r: this.notExpr() };
    }
    return l;
  }
  private notExpr(): Expr {
    if (this.is('kw', 'not')) {
      this.open();
      this.advance();
      const arg = this.notExpr();
      this.close();
      return { k: 'not', arg };
    }
    return this.cmpExpr();
  }
  // cmp := add (cmpop add)?   (no chains: a second comparison operator is a syntax error)
  private cmpExpr(): Expr {
    const l = this.addExpr();
    if (this.tok.kind === 'op' && CMP_OPS.includes(this.tok.text)) {
      const op = this.tok.text;
      this.advance();
      const r = this.addExpr();
      if (this.tok.kind === 'op' && CMP_OPS.includes(this.tok.text)) this.fail();
      return { k: 'bin', op, l, r };
    }
    return l;
  }
  private addExpr(): Expr {
    let l = this.mulExpr();
    while (this.is('op', '+') || this.is('op', '-')) {
      const op = this.tok.text;
      this.advance();
      l = { k: 'bin', op, l, r: this.mulExpr() };
    }
    return l;
  }
  private mulExpr(): Expr {
    let l = this.unaryExpr();
    while (this.is('op', '*') || this.is('op', '/') || this.is('op', '%')) {
      const op = this.tok.text;
      this.advance();
      l = { k: 'bin', op, l, r: this.unaryExpr() };
    }
    return l;
  }
  // unary := '-' unary | primary ('**' unary)?
  private unaryExpr(): Expr {
    if (this.is('op', '-')) {
      this.open();
      this.advance();
      const arg = this.unaryExpr();
      this.close();
      return { k: 'neg', arg };
    }
    const base = this.primary();
    if (this.is('op', '**')) {
      this.open();
      this.advance();
      const e = this.unaryExpr();
      this.close();
      return { k: 'bin', op: '**', l: base, r: e };
    }
    return base;
  }
  private primary(): Expr {
    const t = this.tok;
    if (t.kind === 'num') {
      const v = BigInt(t.text);
      if (v >= INT_LIMIT) throw new LangError(t.line, 'number too large');
      this.advance();
      return { k: 'int', v };
    }
    if (t.kind === 'str') {
      if (t.text.length > LIMITS.maxStr) throw new LangError(t.line, 'string too long');
      this.advance();
      return { k: 'str', v: t.text };
    }
    if (t.kind === 'name') {
      this.advance();
      if (this.is('op', '(')) return { k: 'call', name: t.text, args: this.argList() };
      return { k: 'var', name: t.text };
    }
    if (this.is('kw', 'len')) {
      this.advance();
      if (!this.is('op', '(')) this.fail();
      this.open();
      this.advance();
      const arg = this.expr();
      this.expectOp(')');
      this.close();
      return { k: 'len', arg };
    }
    if (this.is('op', '(')) {
      this.open();
      this.advance();
      const e = this.expr();
      this.expectOp(')');
      this.close();
      return e;
    }
    this.fail();
  }
}

// ---------------------------------------------------------------------------------------------
// Evaluation

const isStr = (v: Value): v is { str: string } => typeof v !== 'bigint';
const truthy = (v: Value): boolean => (isStr(v) ? v.str.length > 0 : v !== 0n);
const bool = (b: boolean): bigint => (b ? 1n : 0n);
const abs = (x: bigint) => (x < 0n ? -x : x);

function show(v: Value): string {
  return isStr(v) ? v.str : v.toString();
}

/** Python's floor division and modulo (b != 0). */
export function floorDivMod(a: bigint, b: bigint): [bigint, bigint] {
  let q = a / b;
  let r = a % b;
  if (r !== 0n && (r < 0n) !== (b < 0n)) {
    q -= 1n;
    r += b;
  }
  return [q, r];
}

class Return {
  constructor(readonly value: Value) {}
}

class Machine {
  out = '';
  steps = 0;
  depth = 0;
  constructor(readonly st: ReplState) {}

  private step(line: number): void {
    if (++this.steps > LIMITS.stepLimit) throw new LangError(line, 'step limit');
  }

  private checkInt(v: bigint, line: number): bigint {
    if (abs(v) >= INT_LIMIT) throw new LangError(line, 'number too large');
    return v;
  }

  binary(op: string, a: Value, b: Value, line: number): Value {
    if (op === '==' || op === '!=') {
      const eq = isStr(a) ? isStr(b) && a.str === b.str : !isStr(b) && a === b;
      return bool(eq === (op === '=='));
    }
    if (isStr(a) || isStr(b)) {
      if (op === '+' && isStr(a) && isStr(b)) {
        if (a.str.length + b.str.length > LIMITS.maxStr) throw new LangError(line, 'string too long');
        return { str: a.str + b.str };
      }
      throw new LangError(line, 'type error');
    }
    switch (op) {
      case '<': return bool(a < b);
      case '<=': return bool(a <= b);
      case '>': return bool(a > b);
      case '>=': return bool(a >= b);
      case '+': return this.checkInt(a + b, line);
      case '-': return this.checkInt(a - b, line);
      case '*': return this.checkInt(a * b, line);
      case '/':
      case '%': {
        if (b === 0n) throw new LangError(line, 'division by zero');
        return floorDivMod(a, b)[op === '/' ? 0 : 1];
      }
      case '**': {
        if (b < 0n) throw new LangError(line, 'negative exponent');
        if (b === 0n) return 1n;
        if (abs(a) <= 1n) return a === -1n && b % 2n === 0n ? 1n : a;
        // |a| >= 2: |a|^b has at least (bits(|a|) - 1) * b + 1 bits; skip computing hopeless cases
        const bits = BigInt(abs(a).toString(2).length);
        if ((bits - 1n) * b + 1n > BigInt(LIMITS.maxBits)) throw new LangError(line, 'number too large');
        return this.checkInt(a ** b, line);
      }
    }
    throw new Error(`unknown operator ${op}`);
  }

  eval(e: Expr, locals: Map<string, Value> | null, line: number): Value {
    switch (e.k) {
      case 'int': return e.v;
      case 'str': return { str: e.v };
      case 'var': {
        const v = locals?.get(e.name) ?? this.st.globals.get(e.name);
        if (v === undefined) throw new LangError(line, `unknown variable ${e.name}`);
        return v;
      }
      case 'neg': {
        const v = this.eval(e.arg, locals, line);
        if (isStr(v)) throw new LangError(line, 'type error');
        return -v;
      }
      case 'not': return bool(!truthy(this.eval(e.arg, locals, line)));
      case 'and': return truthy(this.eval(e.l, locals, line)) ? bool(truthy(this.eval(e.r, locals, line))) : 0n;
      case 'or': return truthy(this.eval(e.l, locals, line)) ? 1n : bool(truthy(this.eval(e.r, locals, line)));
      case 'len': {
        const v = this.eval(e.arg, locals, line);
        if (!isStr(v)) throw new LangError(line, 'type error');
        return BigInt(v.str.length);
      }
      case 'bin': {
        const a = this.eval(e.l, locals, line);
        const b = this.eval(e.r, locals, line);
        return this.binary(e.op, a, b, line);
      }
      case 'call': {
        const args = e.args.map((a) => this.eval(a, locals, line));
        const fn = this.st.functions.get(e.name);
        if (fn === undefined) throw new LangError(line, `unknown function ${e.name}`);
        if (fn.params.length !== args.length) throw new LangError(line, `wrong number of arguments for ${e.name}`);
        if (this.depth >= LIMITS.maxDepth) throw new LangError(line, 'recursion too deep');
        this.depth++;
        try {
          const frame = new Map<string, Value>(fn.params.map((p, i) => [p, args[i]!]));
          const r = this.block(fn.body, frame);
          return r instanceof Return ? r.value : 0n;
        } finally {
          this.depth--;
        }
      }
    }
  }

  /** Runs statements; a Return when a return statement ran. */
  block(stmts: Stmt[], locals: Map<string, Value> | null): Return | null {
    for (const s of stmts) {
      const r = this.exec(s, locals);
      if (r) return r;
    }
    return null;
  }

  exec(s: Stmt, locals: Map<string, Value> | null): Return | null {
    switch (s.k) {
      case 'expr': {
        this.step(s.line);
        const v = this.eval(s.e, locals, s.line);
        if (locals === null) this.out += show(v) + '\n';
        return null;
      }
      case 'assign': {
        this.step(s.line);
        const v = this.eval(s.e, locals, s.line);
        (locals ?? this.st.globals).set(s.name, v);
        return null;
      }
      case 'print': {
        this.step(s.line);
        const vs = s.args.map((a) => this.eval(a, locals, s.line));
        this.out += vs.map(show).join(' ') + '\n';
        return null;
      }
      case 'return':
        this.step(s.line);
        return new Return(s.e === null ? 0n : this.eval(s.e, locals, s.line));
      case 'if':
        this.step(s.line);
        if (truthy(this.eval(s.cond, locals, s.line))) return this.block(s.then, locals);
        return s.else ? this.block(s.else, locals) : null;
      case 'while':
        for (;;) {
          this.step(s.line);
          if (!truthy(this.eval(s.cond, locals, s.line))) return null;
          const r = this.block(s.body, locals);
          if (r) return r;
        }
    }
  }
}

export interface RunResult {
  /** Console output (bytes as latin1 chars). */
  output: string;
  exitCode: number;
}

/**
 * Runs one input (bytes, or a latin1 string) against `state`, which keeps the globals and functions
 * it defines: statements run one by one, each parsed whole first; the first error ends the input.
 */
export function runInput(input: string | Uint8Array, state: ReplState = newState()): RunResult {
  const src = typeof input === 'string' ? input : Buffer.from(input).toString('latin1');
  const m = new Machine(state);
  try {
    const p = new Parser(new Lexer(src));
    while (!p.skipSeparators()) {
      const t = p.topLevel();
      if ('fn' in t) state.functions.set(t.fn.name, t.fn);
      else m.exec(t.stmt, null);
    }
    return { output: m.out, exitCode: 0 };
  } catch (e) {
    if (!(e instanceof LangError)) throw e;
    return { output: m.out + e.message + '\n', exitCode: 1 };
  }
}
