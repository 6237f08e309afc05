/**
 * Demo circuit for one radix-16 division step (div.ts `divStep`): token t < VOCAB − 1 carries a
 * partial remainder R(t), a dividend nibble nib(t) and a divisor B(t) as nibble token fields
 * (R(t) < B(t) for every token except a few B = 0 tokens, where the step is still exact: see
 * divStep); the circuit runs one divStep and emits the pair (q, Σ of the remainder's 8 nibbles)
 * as the token q·121 + Σ (the remainder nibbles are placed in the residual, so `checkCompiled`
 * compares each). Token VOCAB − 1 is BOS. Compile for a target whose vocabulary is ≥ 4096
 * (e.g. tiny with vocabSize 4096, or qwen3.5-4b).
 */
import { defineCircuit } from '../../src/dsl/index.ts';
import { wordFromTokens, wordNibbles } from '../../src/cpu/alu.ts';
import { divStep } from '../../src/cpu/div.ts';

export const VOCAB = 4096;
export const BOS = VOCAB - 1;

/** A 32-bit mixing hash (xorshift-multiply), deterministic. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** Edge divisors: 1, 2^32 − 1, powers of two, 0 (the by-zero path), small and 2^31 ± 1. */
const EDGE_B = [1, 0xffffffff, 0x80000000, 0x10, 2, 0, 0x7fffffff, 0x80000001, 3, 0x10000];

/** Divisor of token t: edge values for t < 64, else random with a random bit length (1…32). */
export function divisorOf(t: number): number {
  if (t === BOS) return 1;
  if (t < 64) return EDGE_B[t % EDGE_B.length]!;
  const bits = 1 + (mix(5 * t + 1) % 32);
  const v = mix(5 * t + 2) >>> (32 - bits);
  return v === 0 ? 1 : v;
}

/** Partial remainder of token t: in [0, B(t)) (B − 1, 0 and random among the edge tokens). */
export function remainderOf(t: number): number {
  const b = divisorOf(t);
  if (t === BOS) return 0;
  if (b === 0) return mix(5 * t + 3); // any R: the by-zero step is exact too
  if (t < 64) return [b - 1, 0, Math.floor(b / 2)][Math.floor(t / EDGE_B.length) % 3]!;
  return mix(5 * t + 3) % b;
}

/** Dividend nibble of token t. */
export function nibbleOf(t: number): number {
  if (t === BOS) return 0;
  if (t < 64) return [15, 0, 7][t % 3]!;
  return mix(5 * t + 4) & 15;
}

export default defineCircuit({ name: 'rv32-divstep', vocab: VOCAB, bos: BOS }, (c) => {
  const R = wordFromTokens(c, 'R', remainderOf);
  const B = wordFromTokens(c, 'B', divisorOf);
  const nib = c.tokenField('nib', nibbleOf, [0, 15]);
  const { q, rem } = divStep(c, R, nib, B, 'div');
  const sum = c.add(...wordNibbles(c, rem)).named('div.remsum');
  c.emit([q, sum], (qv, s) => qv * 121 + s);
});
