/**
 * Test-only numeric contexts and bit-comparison helpers, written independently of
 * exec/numeric.ts so the kernel tests do not check the executor against itself.
 *  - sequential: Σ from −0 in index order, one fround per product and per partial sum;
 *  - fma: same order, each step acc ← fl32(a·b + acc) with ONE rounding (exact fused multiply-add);
 *  - shuffled: a seeded random permutation of the terms per call.
 */
import type { NumericContext } from '../../src/exec/types.ts';
import { Prng } from '../../src/model/random-weights.ts';

const f = Math.fround;

/** Deterministic PRNG (the project's mulberry32 `Prng`). Returns floats in [0, 1). */
export function rng(seed: number): () => number {
  const p = new Prng(seed);
  return () => p.nextU32() / 4294967296;
}

const bitsF = new Float32Array(1);
const bitsU = new Uint32Array(bitsF.buffer);

/** The float32 adjacent to x (a float32, finite, non-zero direction dir = ±1). */
function nextF32(x: number, dir: 1 | -1): number {
  if (x === 0) return dir > 0 ? 2 ** -149 : -(2 ** -149);
  bitsF[0] = x;
  if ((x > 0) === (dir > 0)) bitsU[0] += 1; else bitsU[0] -= 1;
  return bitsF[0];
}

/** fl32(a·b + c) with a single rounding, for float32 a, b, c (a·b is exact in a double). */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b; // exact: 24 + 24 significant bits ≤ 53
  const s = p + c;
  // TwoSum: err is the exact rounding error of the double addition.
  const bb = s - p;
  const err = (p - (s - bb)) + (c - bb);
  const r = f(s);
  if (err === 0 || r === s || !Number.isFinite(s)) return r;
  // s is not a float32; fround(s) is wrong only when s sits exactly on a float32 midpoint.
  const other = nextF32(r, s > r ? 1 : -1);
  if (s - r !== other - s) return r;
  return err > 0 ? Math.max(r, other) : Math.min(r, other);
}

export type TestOrder = 'sequential' | 'fma' | { shuffleSeed: number };

/** A NumericContext (f32 profile) whose reductions follow `order`. */
export function makeTestContext(order: TestOrder = 'sequential'): NumericContext {
  let dot: NumericContext['dot'];
  let sum: NumericContext['sum'];
  if (order === 'sequential') {
    dot = (a, ao, as, b, bo, bs, n) => {
      let acc = -0;
      for (let i = 0; i < n; i++) acc = f(acc + f(a[ao + i * as] * b[bo + i * bs]));
      return acc;
    };
    sum = (a, o, s, n) => {
      let acc = -0;
      for (let i = 0; i < n; i++) acc = f(acc + a[o + i * s]);
      return acc;
    };
  } else if (order === 'fma') {
    dot = (a, ao, as, b, bo, bs, n) => {
      let acc = -0;
      for (let i = 0; i < n; i++) acc = fmaF32(a[ao + i * as], b[bo + i * bs], acc);
      return acc;
    };
    sum = (a, o, s, n) => {
      let acc = -0;
      for (let i = 0; i < n; i++) acc = f(acc + a[o + i * s]);
      return acc;
    };
  } else {
    const rand = rng(order.shuffleSeed);
    let perm = new Int32Array(0);
    const permute = (n: number): Int32Array => {
      if (perm.length < n) perm = new Int32Array(n);
      for (let i = 0; i < n; i++) perm[i] = i;
      for (let i = n - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        const t = perm[i]; perm[i] = perm[j]; perm[j] = t;
      }
      return perm;
    };
    dot = (a, ao, as, b, bo, bs, n) => {
      const p = permute(n);
      let acc = -0;
      for (let r = 0; r < n; r++) {
        const i = p[r];
        acc = f(acc + f(a[ao + i * as] * b[bo + i * bs]));
      }
      return acc;
    };
    sum = (a, o, s, n) => {
      const p = permute(n);
      let acc = -0;
      for (let r = 0; r < n; r++) acc = f(acc + a[o + p[r] * s]);
      return acc;
    };
  }
  return { profile: 'f32', dot, sum, siluForm: 'div', meanMode: 'div', act: (x) => x };
}

/** Bit patterns of a Float32Array (a fresh copy, so later writes do not alias). */
export function bits(a: Float32Array): Uint32Array {
  return new Uint32Array(Float32Array.from(a).buffer);
}

/** Number of elements whose float32 bit patterns differ (±0 counts as different). */
export function bitDiffCount(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  let n = 0;
  for (let i = 0; i < a.length; i++) if (ua[i] !== ub[i]) n++;
  return n;
}

/** Bit pattern of one float32 value. */
export function f32bits(x: number): number {
  bitsF[0] = x;
  return bitsU[0];
}

/**
 * The plain recurrent gated delta rule in float32 (HF torch_recurrent_gated_delta_rule order),
 * one value head, q already scaled. A second, simple implementation for bit comparisons:
 *   S ← S·fl(exp g); kv_j = Σ_i S[i,j]k_i; δ_j = fl(fl(v_j − kv_j)·β); S[i,j] ← fl(S[i,j] + fl(k_i δ_j));
 *   o_j = Σ_i S[i,j] q_i.
 */
export function recurrentF32(
  L: number, dk: number, dv: number, q: Float32Array, k: Float32Array, v: Float32Array,
  g: Float32Array, beta: Float32Array, state: Float32Array, ctx: NumericContext,
): Float32Array {
  const out = new Float32Array(L * dv);
  const delta = new Float32Array(dv);
  for (let t = 0; t < L; t++) {
    const e = f(Math.exp(g[t]));
    for (let i = 0; i < dk * dv; i++) state[i] = f(state[i] * e);
    for (let j = 0; j < dv; j++) {
      const kv = ctx.dot(state, j, dv, k, t * dk, 1, dk);
      delta[j] = f(f(v[t * dv + j] - kv) * beta[t]);
    }
    for (let i = 0; i < dk; i++) {
      for (let j = 0; j < dv; j++) state[i * dv + j] = f(state[i * dv + j] + f(k[t * dk + i] * delta[j]));
    }
    for (let j = 0; j < dv; j++) out[t * dv + j] = ctx.dot(state, j, dv, q, t * dk, 1, dk);
  }
  return out;
}
