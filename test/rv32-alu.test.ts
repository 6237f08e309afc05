/**
 * The 32-bit ALU library (src/cpu/alu.ts): (a) the IR interpreter of every function
 * equals BigInt reference arithmetic on random full 32-bit operands (one circuit whose token t
 * carries test case t), with operands given as nibble token fields and as byte token fields
 * (split by the library's tables); (b) the compiled demo circuits (circuits/rv32im/alu-demo.ts)
 * equal the interpreter bit for bit at every placed signal, in f32 and bf16.
 */
import { describe, expect, it } from 'vitest';
import { buildCircuit } from '../src/dsl/load.ts';
import { defineCircuit, type Sig } from '../src/dsl/index.ts';
import { CircuitBuilder } from '../src/dsl/builder.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Prng } from '../src/model/random-weights.ts';
import { ChipcError } from '../src/util/errors.ts';
import {
  add32, and32, eq32, or32, sh1add, sh2add, sh3add, shiftAmountFromTokens, sll32, slt, sltu, sra32, srl32,
  sub32, wordFromTokens, xor32, nibbles, type Word,
} from '../src/cpu/alu.ts';
import { aluDemo, operandA, operandB, shamtOf, OPS, VOCAB, BOS, type AluOp } from '../circuits/rv32im/alu-demo.ts';

const M32 = (1n << 32n) - 1n;
const big = (x: number): bigint => BigInt(x >>> 0);
const signed = (x: number): bigint => BigInt(x | 0);

/** Reference semantics, in BigInt (independent of the circuit construction). */
const REF: Record<AluOp, (a: number, b: number, s: number) => bigint> = {
  add: (a, b) => (big(a) + big(b)) & M32,
  sub: (a, b) => (big(a) - big(b)) & M32,
  sltu: (a, b) => (big(a) < big(b) ? 1n : 0n),
  slt: (a, b) => (signed(a) < signed(b) ? 1n : 0n),
  eq: (a, b) => (big(a) === big(b) ? 1n : 0n),
  and: (a, b) => big(a) & big(b),
  or: (a, b) => big(a) | big(b),
  xor: (a, b) => big(a) ^ big(b),
  sll: (a, _b, s) => (big(a) << BigInt(s)) & M32,
  srl: (a, _b, s) => big(a) >> BigInt(s),
  sra: (a, _b, s) => (signed(a) >> BigInt(s)) & M32,
  sh1add: (a, b) => ((big(a) << 1n) + big(b)) & M32,
  sh2add: (a, b) => ((big(a) << 2n) + big(b)) & M32,
  sh3add: (a, b) => ((big(a) << 3n) + big(b)) & M32,
};

/** Random cases plus edge cases (0, ±1, sign boundaries, equal operands, equal high halves). */
function cases(n: number, seed: number): { a: number[]; b: number[]; s: number[] } {
  const rng = new Prng(seed);
  const edge = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0x000000ff, 0x00000100, 0xff];
  const a: number[] = [];
  const b: number[] = [];
  const s: number[] = [];
  for (let t = 0; t < n; t++) {
    if (t < edge.length * edge.length) {
      a.push(edge[t % edge.length]!);
      b.push(edge[Math.floor(t / edge.length)]!);
    } else {
      const x = rng.nextU32();
      a.push(x);
      const kind = t % 4;
      b.push(kind === 0 ? x : kind === 1 ? ((x & 0xffffff00) | (rng.nextU32() & 0xff)) >>> 0 : rng.nextU32());
    }
    s.push(t < 32 ? t : rng.nextU32() & 31);
  }
  return { a, b, s };
}

/** The uint32 value of a word at one position, from the interpreter's node values. */
function wordValue(values: Int32Array, w: Word): bigint {
  return w.reduce((acc, byte, k) => acc | (BigInt(values[byte.id]!) << BigInt(8 * k)), 0n);
}

describe('ALU functions in the IR interpreter = BigInt reference on random 32-bit operands', () => {
  const N = 1200;
  const gateOf = (t: number) => (t % 3 === 0 ? 0 : 1);
  for (const split of [true, false]) {
    it(`operands as ${split ? 'nibble' : 'byte'} token fields`, () => {
      const { a, b, s } = cases(N, split ? 7 : 8);
      const results: { op: string; ref: AluOp; out: Word | Sig }[] = [];
      const ir = buildCircuit(defineCircuit({ name: 'alu-interp', vocab: N }, (c) => {
        const A = wordFromTokens(c, 'a', (t) => a[t]!, { splitNibbles: split });
        const B = wordFromTokens(c, 'b', (t) => b[t]!, { splitNibbles: split });
        const S = split ? shiftAmountFromTokens(c, 's', (t) => s[t]!).amount : c.tokenField('s', (t) => s[t]!, [0, 31]);
        const G = c.tokenField('gate', gateOf, [0, 1]);
        results.push(
          { op: 'add', ref: 'add', out: add32(c, A, B).sum },
          { op: 'sub', ref: 'sub', out: sub32(c, A, B).diff },
          { op: 'sltu', ref: 'sltu', out: sltu(c, A, B) },
          { op: 'sub.borrow', ref: 'sltu', out: sub32(c, A, B, 'sub2').borrow },
          { op: 'slt', ref: 'slt', out: slt(c, A, B) },
          { op: 'eq', ref: 'eq', out: eq32(c, A, B) },
          { op: 'and', ref: 'and', out: and32(c, A, B) },
          { op: 'or', ref: 'or', out: or32(c, A, B) },
          { op: 'xor', ref: 'xor', out: xor32(c, A, B) },
          { op: 'and.table', ref: 'and', out: and32(c, A, B, 'table', 'andT') },
          { op: 'or.table', ref: 'or', out: or32(c, A, B, 'table', 'orT') },
          { op: 'xor.table', ref: 'xor', out: xor32(c, A, B, 'table', 'xorT') },
          { op: 'sll', ref: 'sll', out: sll32(c, A, S) },
          { op: 'srl', ref: 'srl', out: srl32(c, A, S) },
          { op: 'sra', ref: 'sra', out: sra32(c, A, S) },
          // gated (the CPU's shifter: 0 while the gate is 0)
          { op: 'sll.gated', ref: 'sll', out: sll32(c, A, S, 'sllG', G) },
          { op: 'srl.gated', ref: 'srl', out: srl32(c, A, S, 'srlG', G) },
          { op: 'sra.gated', ref: 'sra', out: sra32(c, A, S, 'sraG', G) },
          { op: 'sh1add', ref: 'sh1add', out: sh1add(c, A, B) },
          { op: 'sh2add', ref: 'sh2add', out: sh2add(c, A, B) },
          { op: 'sh3add', ref: 'sh3add', out: sh3add(c, A, B) },
        );
        // Carry-out of a + b, and of a + b + 1 (a carry-in signal).
        const cin = c.tokenField('cin', (t) => t & 1, [0, 1]);
        const withCin = add32(c, A, B, cin, 'addc');
        results.push({ op: 'addc', ref: 'add', out: withCin.sum }, { op: 'addc.carry', ref: 'add', out: withCin.carry });
        c.emit([results[2]!.out as Sig]);
      }));
      const steps = new Interpreter(ir).run(Array.from({ length: N }, (_, t) => t));
      let checked = 0;
      for (let t = 0; t < N; t++) {
        const v = steps[t]!.values;
        for (const r of results) {
          const got = Array.isArray(r.out) ? wordValue(v, r.out) : BigInt(v[r.out.id]!);
          let want = REF[r.ref](a[t]!, b[t]!, s[t]!);
          const cin = BigInt(t & 1);
          if (r.op === 'addc') want = (big(a[t]!) + big(b[t]!) + cin) & M32;
          if (r.op === 'addc.carry') want = (big(a[t]!) + big(b[t]!) + cin) >> 32n;
          if (r.op.endsWith('.gated') && gateOf(t) === 0) want = 0n;
          if (got !== want) throw new Error(`${r.op}(0x${a[t]!.toString(16)}, 0x${b[t]!.toString(16)}, s=${s[t]}): got 0x${got.toString(16)}, want 0x${want.toString(16)}`);
          checked++;
        }
      }
      expect(checked).toBe(N * results.length);
    });
  }

  it('the reference is not vacuous: results vary and comparisons take both values', () => {
    const { a, b } = cases(200, 7);
    const lt = a.map((x, i) => REF.slt(x, b[i]!, 0));
    expect(new Set(lt).size).toBe(2);
    expect(new Set(a.map((x, i) => REF.eq(x, b[i]!, 0))).size).toBe(2);
  });
});

describe('bad inputs are refused with a ChipcError', () => {
  it('a word with 3 bytes, a non-byte, a wide shift amount, a non-bit carry', () => {
    const c = new CircuitBuilder({ name: 'bad', vocab: 16 });
    const x = c.tokenField('x', (t) => t, [0, 15]);
    const wide = c.tokenField('w', (t) => 20 * t, [0, 300]);
    expect(() => add32(c, [x, x, x], [x, x, x, x])).toThrow(ChipcError);
    expect(() => xor32(c, [x, x, x, wide], [x, x, x, x])).toThrow(/range \[0, 300\]/);
    expect(() => sll32(c, [x, x, x, x], wide)).toThrow(/shift amount/);
    expect(() => add32(c, [x, x, x, x], [x, x, x, x], x)).toThrow(/not a bit/);
    expect(() => nibbles(c, wide)).toThrow(ChipcError);
  });
});

describe('compiled ALU demos = the interpreter, bit for bit', () => {
  const tiny = resolveTarget('tiny').config;
  const target = { ...tiny, vocabSize: VOCAB, intermediateSize: 4096 };
  const rng = new Prng(2024);
  const tokens = [BOS, ...Array.from({ length: 20 }, (_, i) => (i < 4 ? i * 9 : rng.nextU32() % (VOCAB - 1)))];

  it.each(OPS.map((op) => ({ op })))('$op: emitted tokens follow the reference; f32 and bf16 exact', ({ op }) => {
    const ir = buildCircuit(aluDemo(op));
    const res = compileCircuit(ir, target);
    // The emitted token, from the reference: the result bit, or the sum of the result's nibbles.
    const out = new Interpreter(ir).run(tokens).map((p) => p.emitted);
    tokens.forEach((t, i) => {
      const r = REF[op](operandA(t), operandB(t), shamtOf(t));
      let want = 0;
      if (op === 'sltu' || op === 'slt' || op === 'eq') want = Number(r);
      else for (let k = 0; k < 8; k++) want += Number((r >> BigInt(4 * k)) & 15n);
      expect(out[i]).toBe(want);
    });
    for (const profile of ['f32', 'bf16'] as const) {
      const chk = checkCompiled(res, tokens, { profile });
      expect(chk.mismatches).toEqual([]);
      expect(chk.signalsCompared).toBeGreaterThan(tokens.length * 8);
    }
  });

  it('the byte-operand path (nibbles split by tables) compiles exactly too', () => {
    for (const op of ['sub', 'xor', 'sra'] as const) {
      const res = compileCircuit(buildCircuit(aluDemo(op, { splitNibbles: false })), target);
      const chk = checkCompiled(res, tokens.slice(0, 12), { profile: 'bf16' });
      expect(chk.mismatches).toEqual([]);
    }
  });
});
