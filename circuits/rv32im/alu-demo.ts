/**
 * Demo circuits for the 32-bit ALU library (alu.ts): one circuit per operation. Every input token
 * t < VOCAB − 1 carries two pseudo-random 32-bit operands a(t), b(t) and a shift amount
 * s(t) ∈ [0, 31] as token fields (a few tokens carry edge cases: 0, 1, 2^31, 2^32 − 1, a = b);
 * the circuit computes the operation and emits the sum of the result word's 8 nibbles (or the
 * result bit); the result nibbles are placed in the residual, so `checkCompiled` compares each. Token VOCAB − 1 is BOS. The default export is the add demo; compile the others with
 * `aluDemo(op)` (vocab 4096: a target with a larger vocabulary, e.g. tiny with vocabSize 4096).
 */
import { defineCircuit, type CircuitDef, type Sig } from '../../src/dsl/index.ts';
import {
  add32, and32, eq32, or32, sh1add, sh2add, sh3add, shiftAmountFromTokens, sll32, slt, sltu, sra32, srl32,
  sub32, wordFromTokens, xor32, type Word, wordNibbles,
} from '../../src/cpu/alu.ts';

export const VOCAB = 4096;
export const BOS = VOCAB - 1;

export const OPS = ['add', 'sub', 'sltu', 'slt', 'eq', 'and', 'or', 'xor', 'sll', 'srl', 'sra', 'sh1add', 'sh2add', 'sh3add'] as const;
export type AluOp = (typeof OPS)[number];

const EDGE = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 0x00ff00ff, 0x12345678];

/** A 32-bit mixing hash (xorshift-multiply), deterministic. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** Operand a of token t. */
export function operandA(t: number): number {
  if (t === BOS) return 0;
  if (t < 64) return EDGE[t & 7]!;
  return mix(2 * t + 1);
}
/** Operand b of token t (equal to a for t ≡ 0 mod 5 among the random ones, to exercise a = b). */
export function operandB(t: number): number {
  if (t === BOS) return 0;
  if (t < 64) return EDGE[t >> 3]!;
  if (t % 5 === 0) return operandA(t);
  // Same high half as a for t ≡ 1 mod 5: comparisons decided in the low bytes.
  if (t % 5 === 1) return ((operandA(t) & 0xffff0000) | (mix(2 * t + 2) & 0xffff)) >>> 0;
  return mix(2 * t + 2);
}
/** Shift amount of token t. */
export function shamtOf(t: number): number {
  return t === BOS ? 0 : t < 64 ? (t * 7) & 31 : mix(3 * t + 5) & 31;
}

export interface DemoOptions {
  /** false: the operand bytes are token fields and the library splits them with tables. */
  splitNibbles?: boolean;
}

export function aluDemo(op: AluOp, opts: DemoOptions = {}): CircuitDef {
  return defineCircuit({ name: `alu-${op}`, vocab: VOCAB, bos: BOS }, (c) => {
    const a = wordFromTokens(c, 'a', operandA, opts);
    const b = wordFromTokens(c, 'b', operandB, opts);
    // The sum of the 8 result nibbles: every nibble is demanded (computed and placed), and the
    // emitted token (range [0, 120]) depends on all of them.
    const lowNibble = (w: Word): Sig => c.add(...wordNibbles(c, w)).named(`${op}.out`);
    let out: Sig;
    switch (op) {
      case 'add': out = lowNibble(add32(c, a, b).sum); break;
      case 'sub': out = lowNibble(sub32(c, a, b).diff); break;
      case 'sltu': out = sltu(c, a, b); break;
      case 'slt': out = slt(c, a, b); break;
      case 'eq': out = eq32(c, a, b); break;
      case 'and': out = lowNibble(and32(c, a, b)); break;
      case 'or': out = lowNibble(or32(c, a, b)); break;
      case 'xor': out = lowNibble(xor32(c, a, b)); break;
      case 'sll': case 'srl': case 'sra': {
        const s = shiftAmountFromTokens(c, 's', shamtOf).amount;
        const f = op === 'sll' ? sll32 : op === 'srl' ? srl32 : sra32;
        out = lowNibble(f(c, a, s));
        break;
      }
      case 'sh1add': out = lowNibble(sh1add(c, a, b)); break;
      case 'sh2add': out = lowNibble(sh2add(c, a, b)); break;
      case 'sh3add': out = lowNibble(sh3add(c, a, b)); break;
    }
    c.emit([out]);
  });
}

export default aluDemo('add');
