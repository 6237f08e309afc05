/**
 * Tests of the interpreter firmware (firmware/interp; docs/firmware.md "The interpreter"):
 *  - a corpus of programs (arithmetic with Python's floor division, powers, comparisons, strings,
 *    if/else, while, recursion, functions with locals, printing, and every error) runs on the golden
 *    emulator (fixtures/firmware/interp.elf, console input) and under qemu-riscv32
 *    (interp.linux.elf, standard input; skipped without qemu) and must print the bytes and exit
 *    with the code of the reference interpreter test/helpers/interp-reference.ts (BigInt, written
 *    from the language's specification);
 *  - hand-worked results anchor the reference itself;
 *  - a seeded fast-check property: random big-integer expressions (up to ~80 digits) against BigInt;
 *  - state across calls (ServiceEmulator, as the REPL runs it): functions and globals persist, and
 *    an error leaves the interpreter usable; the same call sequence through the reference agrees;
 *  - memory: a 1,000-iteration loop of big numbers runs; running out of memory is an error, not a crash;
 *  - the benchmark shapes (60-digit × 60-digit product, 60-digit / 30-digit quotient) stay within
 *    their instruction budgets; the image fits the chip's memory map.
 */
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cpuForProgram, decode, loadElf, parseElf } from '../riscv/index.ts';
import { applyWrites, inputAreaOf, inputWrites } from '../riscv/console-input.ts';
import { ServiceEmulator } from '../src/chip/service.ts';
import { FIXTURE_DIR, imageSizes } from '../firmware/expected.ts';
import { LIMITS, floorDivMod, newState, runInput } from './helpers/interp-reference.ts';

const ELF = new Uint8Array(fs.readFileSync(path.join(FIXTURE_DIR, 'interp.elf')));
const LINUX_ELF = path.join(FIXTURE_DIR, 'interp.linux.elf');
/** The generic chip's memory: 16 KiB code + 16 KiB data from 0x80000000. */
const MEM = 32 * 1024;

interface Outcome {
  output: string;
  exitCode: number | null;
  instret?: number;
}

/** Runs one input on the golden emulator (bytes as latin1 chars, like the reference). */
function runGolden(src: string, elf: Uint8Array = ELF, maxInstructions = 200_000_000): Outcome {
  const p = loadElf(elf, { size: MEM });
  applyWrites(p.memory, inputWrites(inputAreaOf(p.symbols), Buffer.from(src, 'latin1')));
  const r = cpuForProgram(p).run({ maxInstructions });
  expect(r.reason, r.message).toBe('exit');
  return { output: Buffer.from(r.consoleBytes).toString('latin1'), exitCode: r.exitCode, instret: r.instret };
}

const QEMU = 'qemu-riscv32';
const QEMU_CPU = 'rv32,zba=true,zbb=false,zbc=false,zbs=false,a=false,f=false,d=false,c=false';
const haveQemu = spawnSync(QEMU, ['--version']).status === 0;
let qemuElf: string | null = null;
function runQemu(src: string): Outcome {
  if (qemuElf === null) {
    // a private copy with mode 0755: qemu-user exits 1 silently on a non-executable file
    qemuElf = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-interp-')), 'interp.linux.elf');
    fs.copyFileSync(LINUX_ELF, qemuElf);
    fs.chmodSync(qemuElf, 0o755);
  }
  const r = spawnSync(QEMU, ['-cpu', QEMU_CPU, qemuElf], { input: Buffer.from(src, 'latin1') });
  expect(r.stderr.toString()).toBe('');
  return { output: r.stdout.toString('latin1'), exitCode: r.status };
}

afterAll(() => {
  if (qemuElf !== null) fs.rmSync(path.dirname(qemuElf), { recursive: true, force: true });
});

function expectSame(got: Outcome, src: string): void {
  const ref = runInput(src);
  expect({ output: got.output, exitCode: got.exitCode }).toEqual(ref);
}

// ---------------------------------------------------------------------------------------------
// The corpus

const A60 = '123456789012345678901234567890123456789012345678901234567890';
const B60 = '987654321098765432109876543210987654321098765432109876543210';
const C30 = '314159265358979323846264338327';

const CORPUS: [string, string][] = [
  // arithmetic
  ['small arithmetic', '1 + 2\n2 - 5\n6 * 7\n7 / 2\n7 % 2\n2 ** 10\n1 + 2 * 3 - 4\n(1 + 2) * 3\n-3 - -3\n'],
  ['floor division and modulo, all signs', '7 / 2; 7 % 2; -7 / 2; -7 % 2; 7 / -2; 7 % -2; -7 / -2; -7 % -2\n6 / 3; -6 / 3; 6 % -3; 0 / 5; 0 % -5; 1 / 2; -1 / 2; 1 % -2\n'],
  ['big floor division and modulo', `a = ${A60}\nb = ${C30}\na / b; a % b; -a / b; -a % b; a / -b; a % -b; -a / -b; -a % -b\nb / a; -b / a; b % -a\na * b / b == a\n(a * b + 1) % b\n(a / b) * b + a % b == a\n-(2 ** 64) / (2 ** 32 + 1)\n(2 ** 96 - 1) % (2 ** 64 - 1)\n`],
  ['big products and sums', `${A60} * ${B60}\n${A60} + ${B60}\n${A60} - ${B60}\n-${A60} * ${B60}\n4294967295 * 4294967295\n4294967296 * 4294967296 - 1\n18446744073709551615 + 1\n18446744073709551616 - 1\n0 - 18446744073709551616\n`],
  ['literals in 9-digit chunks', '0\n00000000000000000000000000000000000007\n999999999\n1000000000\n999999999999999999\n1000000000000000000\n123456789123456789123456789\n-0\n- 5\n--5\n'],
  ['powers', '2 ** 0\n0 ** 0\n0 ** 5\n1 ** 1000000\n(-1) ** 1000001\n(-1) ** 1000000\n(-2) ** 3\n-2 ** 2\n2 ** 3 ** 2\n(2 ** 3) ** 2\n3 ** 200\n(-7) ** 33\n10 ** 80\n2 ** -0\n(2 ** 64) ** 3\n'],
  ['power at the size limit', 'x = 2 ** 8191\nx > 0\nlen("" + "")\ny = (x - 1) * 2 + 1\ny % 1000000007\n3 ** 5000 % 1000000007\n'],
  ['big decimal output', '2 ** 4000\n-(3 ** 2000)\n10 ** 300 - 1\n10 ** 300\n'],
  ['comparisons', '1 < 2; 2 < 1; 2 <= 2; 3 >= 4; 5 > -5; -5 > 5; 1 == 1; 1 != 1; "a" == "a"; "a" != "b"; 1 == "1"; "1" != 1\n' +
    `${A60} < ${B60}; -${A60} < -${B60}; ${A60} == ${A60}; ${A60} * 10 > ${B60}\n`],
  ['logic', '1 and 2\n0 and 1/0\n1 or 1/0\n0 or 0\n0 or "x"\nnot 0\nnot 5\nnot ""\nnot "a"\nnot 1 == 2\n1 < 2 and 2 < 3 or 0\nnot not 7\n"" or 0\n'],
  ['strings', 's = "hello"\nt = "world"\ns + ", " + t\nlen(s + t)\nlen("")\n"tab\\\\t \\"q\\" line\\nnext"\nprint(s, 42, t, -1)\n"a" + "b" == "ab"\nprint()\nprint("")\n'],
  ['strings hold any byte but a newline', 's = "caf\u00e9 \u00ff"\nprint(s, len(s))\ns + "\\\\"\n'],
  ['print', 'print(1)\nprint(1, 2, 3)\nprint("x", "y")\nprint(2 ** 70, -(2 ** 70))\nx = 5\nprint(x, x * x, "x")\n'],
  ['assignment prints nothing; expressions print', 'x = 3\nx\ny = x * 2; y\nx = x + y\nx\n'],
  ['comments and blank lines', '# a comment\n\n  1 + 1  # trailing\n;;\n\t2\r\n# end'],
  ['if / else if / else', 'x = 5\nif x > 3 { print("big") } else { print("small") }\nif x > 10 {\n  print(1)\n} else if x > 4 {\n  print(2)\n} else if x > 3 {\n  print(3)\n} else {\n  print(4)\n}\nif 0 { 1 }\nif "" { 2 } else { 3 }\nif x { 10 }\n'],
  ['while', 'i = 0\ns = 0\nwhile i < 10 {\n  s = s + i * i\n  i = i + 1\n}\nprint(i, s)\nwhile 0 { print("never") }\nn = 1\nwhile n < 10 ** 30 { n = n * 7 }\nn\n'],
  ['nested loops', 'i = 0\nwhile i < 4 {\n  j = 0; row = ""\n  while j < 4 { if (i + j) % 2 == 0 { row = row + "#" } else { row = row + "." }; j = j + 1 }\n  print(row)\n  i = i + 1\n}\n'],
  ['factorial (recursion)', 'fn fact(n) {\n  if n <= 1 { return 1 }\n  return n * fact(n - 1)\n}\nfact(0)\nfact(10)\nfact(30)\nfact(45)\n'],
  ['fibonacci (recursion and loop)', 'fn fib(n) { if n < 2 { return n } else { return fib(n - 1) + fib(n - 2) } }\nfib(15)\nfn fibl(n) { a = 0; b = 1; i = 0; while i < n { t = a + b; a = b; b = t; i = i + 1 }; return a }\nfibl(200)\nfibl(15) == fib(15)\n'],
  ['functions with locals', 'x = 100\nfn f(a, b) {\n  c = a + b\n  x = c * 2\n  return x + 1\n}\nf(1, 2)\nx\nc = 7\nfn g() { return c }\ng()\nfn h(c) { return c }\nh(9)\nc\n'],
  ['locals shadow globals after assignment', 'v = 1\nfn f() {\n  print(v)\n  v = 2\n  print(v)\n  return v\n}\nf()\nv\n'],
  ['functions: no return, bare return, redefinition', 'fn a() { }\na()\nfn b() { return }\nb()\nfn c(x) { if x { return "yes" }; print("no") }\nc(1)\nc(0)\nfn c(x) { return x * 3 }\nc(5)\n'],
  ['calls in expressions', 'fn sq(x) { return x * x }\nfn add(a, b) { return a + b }\nadd(sq(3), sq(4))\nsq(sq(sq(2)))\nprint(sq(2 ** 40), add("a", "b"))\n'],
  ['mutual recursion and later definitions', 'fn even(n) { if n == 0 { return 1 }; return odd(n - 1) }\nfn odd(n) { if n == 0 { return 0 }; return even(n - 1) }\neven(20)\nodd(7)\n'],
  ['recursion 48 deep is fine', 'fn d(n) { if n == 0 { return 0 }; return 1 + d(n - 1) }\nd(47)\n'],
  ['statements run one by one', 'print(1)\nx = 2\nprint(x)\n'],
  ['a function body sees globals at call time', 'fn show() { return g }\ng = 1\nshow()\ng = "two"\nshow()\n'],
  ['gcd and modular power', 'fn gcd(a, b) { while b != 0 { t = a % b; a = b; b = t }; return a }\ngcd(2 ** 64, 6 ** 20)\nfn pm(b, e, m) { r = 1; b = b % m; while e > 0 { if e % 2 == 1 { r = r * b % m }; b = b * b % m; e = e / 2 }; return r }\npm(3, 10 ** 20, 1000000007)\npm(2, 521, 2 ** 521 - 1)\n'],
  ['a loop of 1,000 big-number iterations', 'i = 0\nx = 1\nwhile i < 1000 { x = x * 3 + i; y = 2 ** 2000 + x; i = i + 1 }\nx % 1000000007\nlen("" + "ok")\n'],
  ['strings up to the size limit', 's = "0123456789abcdef"\nwhile len(s) < 2048 { s = s + s }\nlen(s)\nt = s + ""\nt == s\n'],
  // errors (each stops the input with exit code 1)
  ['division by zero', 'print(1)\n5 / 0\nprint(2)\n'],
  ['modulo by zero', 'x = 0\n5 % x\n'],
  ['negative exponent', '2 ** -1\n'],
  ['unknown variable', 'y = 1\ny + zz\n'],
  ['unknown function', 'nothere(1, 2)\n'],
  ['arguments are evaluated before the function is looked up', 'nothere(1 / 0)\n'],
  ['wrong argument count', 'fn f(a, b) { return a }\nf(1)\n'],
  ['type error: string * int', '"ab" * 3\n'],
  ['type error: string + int', '"ab" + 3\n'],
  ['type error: int - string', '1 - "a"\n'],
  ['type error: string < string', '"a" < "b"\n'],
  ['type error: len of an integer', 'len(5)\n'],
  ['type error: unary minus on a string', 'x = "a"\n-x\n'],
  ['type error before division by zero', '"a" / 0\n'],
  ['recursion too deep', 'fn r(n) { return r(n + 1) }\nr(0)\n'],
  ['recursion 49 deep', 'fn d(n) { if n == 0 { return 0 }; return 1 + d(n - 1) }\nd(48)\n'],
  ['error line inside a function', 'fn f(x) {\n  y = x + 1\n  return y / 0\n}\n\nf(1)\n'],
  ['number too large (2^8192)', 'x = 2 ** 8191\nx + x\n'],
  ['number too large (power)', '2 ** 8192\n'],
  ['number too large (product)', 'x = 2 ** 5000\ny = x * x\n'],
  ['number too large (huge exponent)', '10 ** (10 ** 30)\n'],
  ['string too long', 's = "0123456789abcdef"\nwhile 1 { s = s + s }\n'],
  // 1 + 3 k steps after k rounds: step 1,000,001 is the while test of round 333,334 (line 2)
  ['step limit (counted exactly)', 'i = 0\nwhile 1 {\n  i = 1\n  j = 2\n}\n'],
  ['syntax error: dangling operator', 'print(1)\nprint(2 +)\nprint(3)\n'],
  ['syntax error: two values', '1 2\n'],
  ['syntax error: chained comparison', '1 < 2 < 3\n'],
  ['syntax error: stray character', 'x = 1 @ 2\n'],
  ['syntax error: lone !', 'x ! y\n'],
  ['syntax error: missing block', 'if 1 print(1)\n'],
  ['syntax error: else on the next line', 'if 0 { 1 }\nelse { 2 }\n'],
  ['syntax error: return at top level', 'return 1\n'],
  ['syntax error: fn inside a block', 'if 1 { fn f() { } }\n'],
  ['syntax error: repeated parameter', 'fn f(a, a) { return a }\n'],
  ['syntax error: bad escape', 'print("a\\tb")\n'],
  ['syntax error: keyword as a name', 'if = 3\n'],
  ['syntax error: end of input inside a block', 'fn f() {\n  return 1\n'],
  ['syntax error: the statement does not run', 'print(1); print(2) print(3)\n'],
  ['syntax error: not after a comparison', '1 == not 0\n'],
  ['syntax error: name too long', `${'a'.repeat(65)} = 1\n`],
  ['a name of 64 characters is fine', `${'a'.repeat(64)} = 1\n${'a'.repeat(64)}\n`],
  ['unterminated string', 'print(1)\n"abc\n'],
  ['unterminated string at a backslash', '"abc\\'],
  ['nesting: 20 levels', `${'('.repeat(20)}1${')'.repeat(20)}\n${'- '.repeat(20)}1\n`],
  ['nesting too deep: parentheses', `${'('.repeat(21)}1${')'.repeat(21)}\n`],
  ['nesting too deep: blocks', `${'if 1 { '.repeat(20)}1${' }'.repeat(20)}\n`],
  ['nesting too deep: calls', `fn f(x) { return x }\n${'f('.repeat(21)}1${')'.repeat(21)}\n`],
  ['non-ASCII bytes are a syntax error', 'x = 1\n\u00e9\n'],
  ['empty input', ''],
  ['only separators', '\n\n;;\n'],
];

describe('reference interpreter anchors (hand-worked results)', () => {
  it('floor division and modulo follow Python', () => {
    const cases: [bigint, bigint, bigint, bigint][] = [
      [7n, 2n, 3n, 1n], [-7n, 2n, -4n, 1n], [7n, -2n, -4n, -1n], [-7n, -2n, 3n, -1n], [6n, -3n, -2n, 0n], [-1n, 5n, -1n, 4n],
    ];
    for (const [a, b, q, r] of cases) expect(floorDivMod(a, b)).toEqual([q, r]);
  });

  it('programs with known output', () => {
    expect(runInput('-7 / 2; -7 % 2; 7 % -2').output).toBe('-4\n1\n-1\n');
    expect(runInput('fn f(n) { if n < 2 { return n }; return f(n-1) + f(n-2) }\nf(20)').output).toBe('6765\n');
    expect(runInput('2 ** 100').output).toBe('1267650600228229401496703205376\n');
    expect(runInput('print("a", 1, -2)\nx = 3\nx * x').output).toBe('a 1 -2\n9\n');
    expect(runInput('print(1)\n1 / 0\nprint(2)')).toEqual({ output: '1\nerror: line 2: division by zero\n', exitCode: 1 });
    expect(runInput('print(1)\nprint(2 +)')).toEqual({ output: '1\nerror: line 2: syntax error\n', exitCode: 1 });
    expect(runInput('while 1 { }')).toEqual({ output: `error: line 1: step limit\n`, exitCode: 1 });
    expect(runInput('fn r() { return r() }\nr()')).toEqual({ output: 'error: line 1: recursion too deep\n', exitCode: 1 });
    expect(runInput('2 ** 8192').output).toBe('error: line 1: number too large\n');
    expect(runInput('(2 ** 8191) * 2 - 1 > 0').output).toBe('error: line 1: number too large\n');
    expect(runInput('((2 ** 8191 - 1) * 2 + 1) % 7').output).toBe(`${((1n << 8192n) - 1n) % 7n}\n`);
  });

  it('the corpus covers every error message of the language', () => {
    const outputs = CORPUS.map(([, src]) => runInput(src).output).join('');
    for (const m of ['syntax error', 'unterminated string', 'nesting too deep', 'unknown variable', 'unknown function', 'wrong number of arguments for',
      'division by zero', 'negative exponent', 'type error', 'number too large', 'string too long', 'recursion too deep', 'step limit']) {
      expect(outputs, m).toContain(`: ${m}`);
    }
  });
});

describe('interpreter on the golden emulator (interp.elf, console input) = reference', () => {
  for (const [name, src] of CORPUS) {
    it(name, () => expectSame(runGolden(src), src));
  }
});

describe.skipIf(!haveQemu)('interpreter under qemu-riscv32 (interp.linux.elf, stdin) = reference', () => {
  it('the whole corpus', () => {
    for (const [name, src] of CORPUS) {
      const got = runQemu(src);
      const ref = runInput(src);
      expect({ output: got.output, exitCode: got.exitCode }, name).toEqual(ref);
    }
  });
});

describe('the comparison has teeth', () => {
  it('a patched error message, or a wrong reference, is caught', () => {
    const bytes = Buffer.from(ELF);
    const at = bytes.indexOf('division by zero');
    expect(at).toBeGreaterThan(0);
    const patched = new Uint8Array(bytes);
    patched.set(Buffer.from('division by zerO'), at);
    const got = runGolden('1 / 0', patched);
    expect(got.output).toBe('error: line 1: division by zerO\n');
    expect(got.output).not.toBe(runInput('1 / 0').output);
    // truncating division (C's) would differ from the firmware's floor division
    expect(runGolden('-7 / 2').output).toBe('-4\n');
    expect(runGolden('-7 / 2').output).not.toBe(`${-7n / 2n}\n`);
  });
});

// ---------------------------------------------------------------------------------------------
// Random big-integer expressions

type Node = { lit: bigint } | { op: string; l: Node; r: Node } | { neg: Node };

/** A literal of 1 to 80 digits (the digit count uniform, then the value). */
const bigLiteral = fc.integer({ min: 1, max: 80 }).chain((d) => fc.bigInt({ min: d === 1 ? 0n : 10n ** BigInt(d - 1), max: 10n ** BigInt(d) - 1n }));
const literal = fc.oneof(
  { arbitrary: bigLiteral, weight: 4 },
  { arbitrary: fc.bigInt({ min: 0n, max: 20n }), weight: 1 },
  { arbitrary: fc.constantFrom(0n, 1n, 4294967295n, 4294967296n, 18446744073709551615n, 10n ** 9n), weight: 1 },
);
const exprArb: fc.Arbitrary<Node> = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    literal.map((lit): Node => ({ lit })),
    fc.record({ op: fc.constantFrom('+', '-', '*', '/', '%', '+', '-', '*', '/', '%', '==', '<', '>=', '!='), l: tie('node'), r: tie('node') }) as fc.Arbitrary<Node>,
    fc.record({ op: fc.constant('**'), l: tie('node'), r: fc.bigInt({ min: 0n, max: 4n }).map((lit): Node => ({ lit })) }) as fc.Arbitrary<Node>,
    tie('node').map((n): Node => ({ neg: n })),
  ),
})).node;

function render(n: Node): string {
  if ('lit' in n) return n.lit.toString();
  if ('neg' in n) return `(-${render(n.neg)})`;
  return `(${render(n.l)} ${n.op} ${render(n.r)})`;
}

/** The parser's nesting levels the rendering opens (LIMITS.maxNest): ( per operator, ( and - per negation, ** once. */
function nesting(n: Node): number {
  if ('lit' in n) return 0;
  if ('neg' in n) return 2 + nesting(n.neg);
  return 1 + Math.max(nesting(n.l), nesting(n.r) + (n.op === '**' ? 1 : 0));
}

type Big = bigint | { err: string };
const TOO_LARGE = 1n << BigInt(LIMITS.maxBits);

/** Direct BigInt evaluation, left operand first: a value, or the first error (comparisons give 1/0). */
function evalBig(n: Node): Big {
  const fit = (v: bigint): Big => ((v < 0n ? -v : v) >= TOO_LARGE ? { err: 'number too large' } : v);
  if ('lit' in n) return n.lit;
  if ('neg' in n) {
    const v = evalBig(n.neg);
    return typeof v === 'bigint' ? -v : v;
  }
  const a = evalBig(n.l);
  if (typeof a !== 'bigint') return a;
  const b = evalBig(n.r);
  if (typeof b !== 'bigint') return b;
  switch (n.op) {
    case '+': return fit(a + b);
    case '-': return fit(a - b);
    case '*': return fit(a * b);
    case '**': return (a < 0n ? -a : a) > 1n && BigInt((a < 0n ? -a : a).toString(2).length - 1) * b >= BigInt(LIMITS.maxBits) ? { err: 'number too large' } : fit(a ** b);
    case '/': return b === 0n ? { err: 'division by zero' } : floorDivMod(a, b)[0];
    case '%': return b === 0n ? { err: 'division by zero' } : floorDivMod(a, b)[1];
    case '==': return a === b ? 1n : 0n;
    case '!=': return a !== b ? 1n : 0n;
    case '<': return a < b ? 1n : 0n;
    default: return a >= b ? 1n : 0n;
  }
}

describe('random big-integer expressions (seeded fast-check) = BigInt', () => {
  it('golden emulator and reference agree with a direct BigInt evaluation', () => {
    fc.assert(
      fc.property(fc.array(exprArb, { minLength: 1, maxLength: 4 }), (all) => {
        const exprs = all.filter((e) => render(e).length < 400 && nesting(e) <= LIMITS.maxNest);
        if (exprs.length === 0) return;
        const src = exprs.map(render).join('\n') + '\n';
        let want = '';
        for (const [i, e] of exprs.entries()) {
          const v = evalBig(e);
          if (typeof v !== 'bigint') {
            want += `error: line ${i + 1}: ${v.err}\n`;
            break;
          }
          want += `${v}\n`;
        }
        const ref = runInput(src);
        expect(ref.output).toBe(want);
        const got = runGolden(src);
        expect(got.output).toBe(want);
        expect(got.exitCode).toBe(ref.exitCode);
      }),
      { seed: 0x5eed1, numRuns: 300 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// State across calls

/** A REPL: the image loaded once, one service call per input. */
function loadedInterpreter() {
  const svc = ServiceEmulator.load(ELF, MEM, 16 * 1024);
  const area = inputAreaOf(svc.program.symbols);
  return (src: string): Outcome => {
    const r = svc.call(inputWrites(area, Buffer.from(src, 'latin1')));
    return { output: Buffer.from(r.console).toString('latin1'), exitCode: r.exitCode, instret: r.instructions };
  };
}

describe('state across calls (ServiceEmulator, re-entry at _start)', () => {
  it('functions and globals defined in one call are there in the next; errors leave it usable', () => {
    const call = loadedInterpreter();
    expect(call('fn f(n) { if n < 2 { return 1 }; return n * f(n - 1) }\nx = 7')).toEqual(expect.objectContaining({ output: '', exitCode: 0 }));
    expect(call('f(x)\nf(25)')).toEqual(expect.objectContaining({ output: '5040\n15511210043330985984000000\n', exitCode: 0 }));
    expect(call('y = x * 2; y / 0; z = 1')).toEqual(expect.objectContaining({ output: 'error: line 1: division by zero\n', exitCode: 1 }));
    expect(call('print(x, y)\nz')).toEqual(expect.objectContaining({ output: '7 14\nerror: line 2: unknown variable z\n', exitCode: 1 }));
    expect(call('f(y) == f(14)')).toEqual(expect.objectContaining({ output: '1\n', exitCode: 0 }));
    expect(call('fn g(a) { b = a * a; c = b / 0; return c }\ng(3)')).toEqual(expect.objectContaining({ output: 'error: line 1: division by zero\n', exitCode: 1 }));
    expect(call('b')).toEqual(expect.objectContaining({ output: 'error: line 1: unknown variable b\n', exitCode: 1 }));
    expect(call('fn g(a) { return a + 1 }\ng(x)')).toEqual(expect.objectContaining({ output: '8\n', exitCode: 0 }));
    expect(call('2 +')).toEqual(expect.objectContaining({ output: 'error: line 1: syntax error\n', exitCode: 1 }));
    expect(call('s = "kept"')).toEqual(expect.objectContaining({ exitCode: 0 }));
    expect(call('s + "!"')).toEqual(expect.objectContaining({ output: 'kept!\n', exitCode: 0 }));
  });

  it('a sequence of calls prints what the reference prints with one shared state', () => {
    const inputs = [
      'a = 2 ** 100', 'fn sq(v) { return v * v }', 'sq(a)', 'a = sq(a) + 1', 'a % 97', 'fn sq(v) { return v * v * v }', 'sq(3)',
      'a = a + 1; a / 0', 'a % 97', 'fn loop(n) { i = 0; s = ""; while i < n { s = s + "ab"; i = i + 1 }; return s }', 'len(loop(100))',
      'r = 1; fn deep(n) { return deep(n + 1) }', 'deep(0)', 'r + sq(2)', 'q', 'print(a / 3, a % 3)',
    ];
    const call = loadedInterpreter();
    const state = newState();
    for (const src of inputs) {
      const ref = runInput(src, state);
      const got = call(src);
      expect({ output: got.output, exitCode: got.exitCode }, src).toEqual(ref);
    }
  });

  it('memory is reclaimed across calls: errors inside functions with big locals, reassigned big globals', () => {
    const call = loadedInterpreter();
    call('fn bad(n) { big = 2 ** 6000 + n; other = big * 2; return big / 0 }');
    for (let i = 0; i < 30; i++) {
      expect(call(`bad(${i})`).output).toBe('error: line 1: division by zero\n');
      expect(call(`g = 2 ** 7000 + ${i}`).exitCode).toBe(0);
    }
    expect(call('g % 1000 + 0').output).toBe(`${((1n << 7000n) + 29n) % 1000n}\n`);
    expect(call('h = 2 ** 8000; k = h - 1; k % 10').output).toBe(`${((1n << 8000n) - 1n) % 10n}\n`);
  });

  it('running out of memory is an error ("out of memory"), and the next call works', () => {
    const call = loadedInterpreter();
    const r = call('a = 2 ** 8000\nb = a + 1\nc = a + 2\nd = a + 3\ne = a + 4\nf = a + 5\ng = a + 6\nh = a + 7\n');
    expect(r.exitCode).toBe(1);
    expect(r.output).toMatch(/^error: line [2-8]: out of memory\n$/);
    expect(call('1 + 1')).toEqual(expect.objectContaining({ output: '2\n', exitCode: 0 }));
    expect(call('b = 0; c = 0; d = 0; e = 0').exitCode).toBe(0); // small values release the big blocks
    expect(call('a % 1000')).toEqual(expect.objectContaining({ output: `${(1n << 8000n) % 1000n}\n`, exitCode: 0 }));
  });
});

// ---------------------------------------------------------------------------------------------
// Speed and the memory map

describe('benchmark shapes and the image', () => {
  it('60-digit × 60-digit product and 60-digit / 30-digit quotient: parse, compute and print in few instructions', () => {
    const mul = runGolden(`${A60} * ${B60}\n`);
    expect(mul.output).toBe(`${BigInt(A60) * BigInt(B60)}\n`);
    const div = runGolden(`${B60} / ${C30}\n`);
    expect(div.output).toBe(`${BigInt(B60) / BigInt(C30)}\n`);
    expect(mul.instret!).toBeLessThan(10_000);
    expect(div.instret!).toBeLessThan(6_000);
  });

  it('fits the generic chip: code <= 16 KiB at 0x80000000, everything else in [0x80004000, 0x80008000)', () => {
    const img = parseElf(ELF);
    expect(img.entry).toBe(0x80000000);
    const { codeBytes, dataBytes } = imageSizes(ELF);
    expect(codeBytes).toBeLessThanOrEqual(16 * 1024);
    expect(dataBytes).toBeLessThanOrEqual(16 * 1024);
    for (const s of img.segments) {
      const [lo, hi] = s.flags & 1 ? [0x80000000, 0x80004000] : [0x80004000, 0x80008000];
      expect(s.vaddr).toBeGreaterThanOrEqual(lo);
      expect(s.vaddr + s.memsz).toBeLessThanOrEqual(hi);
    }
    const sym = new Map(img.symbols.map((s) => [s.name, s.value >>> 0]));
    expect(sym.get('__input_size')).toBe(2048);
    expect(sym.get('__stack_size')).toBe(2048);
    expect(sym.get('S')! >= 0x80004000 && sym.get('S')! < 0x80008000).toBe(true);
    // every instruction word of its functions decodes (RV32IM + Zba + the bignum unit's bn.mac)
    for (const f of img.symbols) {
      if (f.type !== 2 || f.size === 0) continue;
      const seg = img.segments.find((s) => f.value >= s.vaddr && f.value + f.size <= s.vaddr + s.filesz)!;
      const dv = new DataView(seg.data.buffer, seg.data.byteOffset, seg.data.byteLength);
      for (let a = f.value; a < f.value + f.size; a += 4) expect(decode(dv.getUint32(a - seg.vaddr, true)), `${f.name}+${a - f.value}`).not.toBeNull();
    }
  });
});
