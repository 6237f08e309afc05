/**
 * The RV32M multiplier (src/cpu/mul.ts): (a) the IR interpreter of mul32, mulh32,
 * mulhsu32 and mulhu32 equals BigInt arithmetic on edge and random 32-bit operands (one circuit
 * whose token t carries test case t; operands as nibble and as byte token fields); (b) the
 * compiled demo circuits (circuits/rv32im/mul-demo.ts) equal the interpreter bit for bit at every
 * placed signal, in f32 and bf16, and emit what BigInt says.
 */
import { describe, expect, it } from 'vitest';
import { buildCircuit } from '../src/dsl/load.ts';
import { defineCircuit } from '../src/dsl/index.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Prng } from '../src/model/random-weights.ts';
import { wordFromTokens, type Word } from '../src/cpu/alu.ts';
import { mul32, mulh32, mulhsu32, mulhu32 } from '../src/cpu/mul.ts';
import { mulDemo, MUL_OPS, BOS, VOCAB, operandA, operandB, type MulOp } from '../circuits/rv32im/mul-demo.ts';

const M32 = (1n << 32n) - 1n;
const u = (x: number): bigint => BigInt(x >>> 0);
const s = (x: number): bigint => BigInt(x | 0);

/** RISC-V semantics in BigInt: the low word of the product, or the high word (shift of the exact product). */
const REF: Record<MulOp, (a: number, b: number) => bigint> = {
  mul: (a, b) => (u(a) * u(b)) & M32,
  mulh: (a, b) => ((s(a) * s(b)) >> 32n) & M32,
  mulhsu: (a, b) => ((s(a) * u(b)) >> 32n) & M32,
  mulhu: (a, b) => (u(a) * u(b)) >> 32n,
};

/** Edge pairs (0, 1, −1, INT_MIN, INT_MAX, powers of two, 0xFFFFFFFF…) then random operands. */
function cases(n: number, seed: number): { a: number[]; b: number[] } {
  const edge = [0, 1, 2, 0xffffffff, 0x80000000, 0x7fffffff, 0x10000, 0x8000, 0x80, 0x40000000, 0xfffffffe, 0x80000001];
  const rng = new Prng(seed);
  const a: number[] = [];
  const b: number[] = [];
  for (let t = 0; t < n; t++) {
    if (t < edge.length * edge.length) {
      a.push(edge[t % edge.length]!);
      b.push(edge[Math.floor(t / edge.length)]!);
    } else if (t % 7 === 0) {
      // a power of two times a random operand (either side), and its negation
      const p = (2 ** (rng.nextU32() & 31)) >>> 0;
      const x = rng.nextU32();
      a.push(t % 2 ? p : x);
      b.push(t % 2 ? x : (-p) >>> 0);
    } else {
      a.push(rng.nextU32());
      b.push(t % 5 === 0 ? rng.nextU32() & 0xffff : rng.nextU32());
    }
  }
  return { a, b };
}

function wordValue(values: Int32Array, w: Word): bigint {
  return w.reduce((acc, byte, k) => acc | (BigInt(values[byte.id]!) << BigInt(8 * k)), 0n);
}

describe('multiplier in the IR interpreter = BigInt reference', () => {
  for (const split of [true, false]) {
    it(`all four ops, operands as ${split ? 'nibble' : 'byte'} token fields`, () => {
      const N = split ? 600 : 300;
      const { a, b } = cases(N, split ? 11 : 12);
      const outs: { op: MulOp; w: Word }[] = [];
      const ir = buildCircuit(defineCircuit({ name: 'mul-interp', vocab: N }, (c) => {
        const A = wordFromTokens(c, 'a', (t) => a[t]!, { splitNibbles: split });
        const B = wordFromTokens(c, 'b', (t) => b[t]!, { splitNibbles: split });
        outs.push({ op: 'mul', w: mul32(c, A, B) }, { op: 'mulh', w: mulh32(c, A, B) },
          { op: 'mulhsu', w: mulhsu32(c, A, B) }, { op: 'mulhu', w: mulhu32(c, A, B) });
        c.emit([outs[0]!.w[0]!]);
      }));
      const steps = new Interpreter(ir).run(Array.from({ length: N }, (_, t) => t));
      let checked = 0;
      for (let t = 0; t < N; t++) {
        for (const o of outs) {
          const got = wordValue(steps[t]!.values, o.w);
          const want = REF[o.op](a[t]!, b[t]!);
          if (got !== want) throw new Error(`${o.op}(0x${a[t]!.toString(16)}, 0x${b[t]!.toString(16)}): got 0x${got.toString(16)}, want 0x${want.toString(16)}`);
          checked++;
        }
      }
      expect(checked).toBe(4 * N);
    });
  }

  it('the reference is not vacuous: signed and unsigned high words differ on negative operands', () => {
    expect(REF.mulh(0xffffffff, 0xffffffff)).toBe(0n); // (−1)·(−1) = 1
    expect(REF.mulhu(0xffffffff, 0xffffffff)).toBe(0xfffffffen);
    expect(REF.mulhsu(0xffffffff, 0xffffffff)).toBe(0xffffffffn); // −(2^32 − 1) → high word −1
    expect(REF.mul(0x80000000, 2)).toBe(0n);
  });
});

describe('compiled multiplier demos = the interpreter, bit for bit', () => {
  const tiny = resolveTarget('tiny').config;
  const target = { ...tiny, vocabSize: VOCAB, intermediateSize: 16384 };
  const rng = new Prng(77);
  // BOS, edge tokens (t < 64 pair the alu-demo EDGE values), random ones.
  const tokens = [BOS, 0, 12, 27, 36, 63, 4, 33, ...Array.from({ length: 16 }, () => 64 + (rng.nextU32() % (VOCAB - 65)))];

  it.each(MUL_OPS.map((op) => ({ op })))('$op: emitted tokens follow BigInt; f32 and bf16 exact', ({ op }) => {
    const ir = buildCircuit(mulDemo(op));
    const res = compileCircuit(ir, target);
    const out = new Interpreter(ir).run(tokens).map((p) => p.emitted);
    tokens.forEach((t, i) => {
      const r = REF[op](operandA(t), operandB(t));
      let want = 0;
      for (let k = 0; k < 8; k++) want += Number((r >> BigInt(4 * k)) & 15n);
      expect(out[i]).toBe(want);
    });
    for (const profile of ['f32', 'bf16'] as const) {
      const chk = checkCompiled(res, tokens, { profile });
      expect(chk.mismatches).toEqual([]);
      expect(chk.signalsCompared).toBeGreaterThan(tokens.length * 8);
    }
  });
});
