/**
 * The bounds arithmetic of the incremental matmuls (delta.ts, whose module comment gives the
 * argument): a float32's lowest set bit, the bound T(g) an exact row's absolute sum stays below,
 * the exact-row and bounded-row tests, and the weights' lowest bits.
 */
import type { WeightLows } from './plans.ts';

/**
 * The exponent of the lowest set bit of a finite non-zero float32 given by its bits
 * (x = odd integer · 2^lowbit): −149 … 104. Not meaningful for ±0.
 */
export function lowbit32(b: number): number {
  const e = (b >>> 23) & 0xff;
  const m = e === 0 ? b & 0x7fffff : (b & 0x7fffff) | 0x800000;
  return (e === 0 ? -149 : e - 150) + 31 - Math.clz32(m & -m);
}

/** 2^(24+g) for g = −149 … 102, at g + 149. */
const BOUNDS = Float64Array.from({ length: 252 }, (_, i) => 2 ** (i - 125));
/** T = min(2^(24+g), 2^126) (g ≥ −149): the bound an exact row's Σ|w·x| stays below. */
export function boundOf(g: number): number {
  return g >= 102 ? BOUNDS[251] : BOUNDS[g + 149];
}

/** L_c (column records) / rowLow of a column never seen non-zero, a row with no product that can be non-zero. */
export const NO_LOW = 32767;
/** B_r's scale after each rounded addition (delta.ts module comment: it keeps B_r an upper bound). */
export const BOUND_INFLATE = 1 + 2 ** -50;

/**
 * Whether a row whose non-zero products, multiples of 2^g, have absolute sum S and sum yD is exact
 * against T = T(g) (0 when g < −149): max(P, N) = (S + |yD|)/2 < T, P and N the sums of its positive
 * and of its negative products' magnitudes (delta.ts module comment). Exact in double for the rows that pass.
 */
export function exactRow(S: number, yD: number, T: number): boolean {
  return S + Math.abs(yD) < T + T;
}

/** Whether a row with bound B and lowest bit G is bounded: G ≥ −149 and B < T(G), or no products. */
export function boundedRow(B: number, G: number): boolean {
  return G === NO_LOW || (G >= -149 && B < boundOf(G));
}

/**
 * lowbit32 of each weight (0 for ±0), read as bits in place: in 8 bits when every one fits (the
 * chip's weights; half the fresh memory of 16), else in 16.
 */
export function weightLows(v: Float32Array): WeightLows {
  const bits = new Uint32Array(v.buffer, v.byteOffset, v.length);
  const narrow = new Int8Array(v.length);
  if (fillLows(bits, narrow, -128, 127)) return narrow;
  const wide = new Int16Array(v.length);
  fillLows(bits, wide, -32768, 32767);
  return wide;
}

/** Fills out with each weight's lowest set bit; false (stopping there) at one outside [lo, hi]. */
function fillLows(bits: Uint32Array, out: WeightLows, lo: number, hi: number): boolean {
  for (let k = 0; k < bits.length; k++) {
    const b = bits[k];
    const l = (b & 0x7fffffff) === 0 ? 0 : lowbit32(b);
    if (l < lo || l > hi) return false;
    out[k] = l;
  }
  return true;
}
