/**
 * The normalisations of the Qwen hybrid stack in float32, in transformers' order of operations:
 * the zero-centred RMSNorm (layer norms, final norm, per-head q/k norm), the GDN gated RMSNorm and
 * the L2 norm of GDN queries/keys. Sums of squares go through ctx.sum so order modes reach them;
 * squares are rounded first (torch materialises x.pow(2) / x*x before reducing).
 */
import type { ExecNumericContext } from './numeric.ts';
import { roundBf16, rsqrt32, silu32 } from './numeric.ts';
import type { ExecPlans } from './plans.ts';

const f32 = Math.fround;

let sqScratch = new Float32Array(256);

/** Σ fl(x_i²) over x[off .. off+n) through ctx.sum. */
function sumSquares(ctx: ExecNumericContext, x: ArrayLike<number>, off: number, n: number): number {
  if (sqScratch.length < n) sqScratch = new Float32Array(Math.max(n, 2 * sqScratch.length));
  const sq = sqScratch;
  for (let i = 0; i < n; i++) { const v = x[off + i]; sq[i] = f32(v * v); }
  return ctx.sum(sq, 0, 1, n);
}

/** mean = fl(sum / n) ('div', torch CPU) or fl(sum · fl(1/n)) ('mulrecip', torch CUDA MeanOps). */
export function meanOf(ctx: ExecNumericContext, sum: number, n: number): number {
  return ctx.meanMode === 'div' ? f32(sum / n) : f32(sum * f32(1 / n));
}

/**
 * Zero-centred RMSNorm over x[xOff .. xOff+n) into out[outOff ..):
 *   r = rsqrt(fl(mean(fl(x²)) + fl(eps)));  out_i = act(fl(fl(x_i·r) · fl(1 + w_i)))
 * (HF `Qwen3_5RMSNorm`: normalise in float32, multiply by (1 + w) in float32, then cast to the
 * activation dtype — one ctx.act at the end.)
 */
export function rmsNorm1p(
  ctx: ExecNumericContext, x: ArrayLike<number>, xOff: number, n: number, w: Float32Array, eps: number,
  out: Float32Array, outOff: number,
): void {
  if (ctx.profile === 'f32' && ctx.order.kind !== 'shuffled' && x instanceof Float32Array) {
    rmsNorm1pF32(ctx, x, xOff, n, w, eps, out, outOff);
    return;
  }
  const mean = meanOf(ctx, sumSquares(ctx, x, xOff, n), n);
  const r = rsqrt32(f32(mean + f32(eps)));
  for (let i = 0; i < n; i++) {
    out[outOff + i] = ctx.act(f32(f32(x[xOff + i] * r) * f32(1 + w[i])));
  }
}

/**
 * The vector fl(1 + w_i) of a norm weight vector (cached per vector in plans.onePlus; weights are
 * not mutated after their first use).
 */
export function onePlusWeights(plans: ExecPlans, w: Float32Array): Float32Array {
  const onePlusCache = plans.onePlus;
  let w1 = onePlusCache.get(w);
  if (w1 === undefined || w1.length !== w.length) {
    w1 = new Float32Array(w.length);
    for (let i = 0; i < w.length; i++) w1[i] = f32(1 + w[i]);
    onePlusCache.set(w, w1);
  }
  return w1;
}

/**
 * rmsNorm1p for the f32 profile in index order (sequential and fma orders: the sum of squares
 * has no product to fuse), in one monomorphic pass each: the same operations, rounded the same
 * way (act is the identity in f32), without the per-element calls of the generic form.
 */
function rmsNorm1pF32(
  ctx: ExecNumericContext, x: Float32Array, xOff: number, n: number, w: Float32Array, eps: number,
  out: Float32Array, outOff: number,
): void {
  const w1 = onePlusWeights(ctx.plans, w);
  let acc = -0;
  for (let i = 0; i < n; i++) { const v = x[xOff + i]; acc = f32(acc + f32(v * v)); }
  const r = rsqrt32(f32(meanOf(ctx, acc, n) + f32(eps)));
  for (let i = 0; i < n; i++) out[outOff + i] = f32(f32(x[xOff + i] * r) * w1[i]);
}

/**
 * GDN gated RMSNorm (HF `Qwen3_5RMSNormGated`, plain weight) of one value head's output o[n]
 * with gate z[n]:
 *   r = rsqrt(fl(mean(fl(o²)) + fl(eps)));  h_i = act(fl(o_i·r));  h_i = act(fl(w_i·h_i));
 *   out_i = act(fl(h_i · silu(z_i)))
 * (HF casts the normalised value to the input dtype before the weight multiply, computes
 * silu(gate.float()) in float32 and casts the product back.)
 */
export function gatedRmsNorm(
  ctx: ExecNumericContext, o: ArrayLike<number>, oOff: number, z: ArrayLike<number>, zOff: number, n: number,
  w: Float32Array, eps: number, out: Float32Array, outOff: number,
): void {
  if (ctx.profile === 'f32' && ctx.order.kind !== 'shuffled' && o instanceof Float32Array && z instanceof Float32Array) {
    gatedRmsNormF32(ctx, o, oOff, z, zOff, n, w, eps, out, outOff);
    return;
  }
  const mean = meanOf(ctx, sumSquares(ctx, o, oOff, n), n);
  const r = rsqrt32(f32(mean + f32(eps)));
  const entry = ctx.profile === 'bf16' ? gatedNormEntryBf16 : gatedNormEntry;
  for (let i = 0; i < n; i++) out[outOff + i] = entry(o[oOff + i], r, w[i], z[zOff + i], ctx.siluForm);
}

/**
 * gatedRmsNorm for the f32 profile in index order (as rmsNorm1pF32: the sum of squares folded in
 * place, act the identity), one monomorphic pass each: the same operations, rounded the same way.
 * Its parts (gatedNormSquares, gatedNormFactor, gatedNormEntry) are what the tracked GDN step
 * recomputes piecewise (gdn-tracked.ts).
 */
function gatedRmsNormF32(
  ctx: ExecNumericContext, o: Float32Array, oOff: number, z: Float32Array, zOff: number, n: number,
  w: Float32Array, eps: number, out: Float32Array, outOff: number,
): void {
  const r = gatedNormFactor(ctx, gatedNormSquares(o, oOff, n), n, eps);
  const form = ctx.siluForm;
  for (let i = 0; i < n; i++) out[outOff + i] = gatedNormEntry(o[oOff + i], r, w[i], z[zOff + i], form);
}

/** gatedRmsNorm's f32 sum of squares: fl(… fl(−0 + fl(o_0²)) …) over o[oOff .. oOff+n) in index order. */
export function gatedNormSquares(o: Float32Array, oOff: number, n: number): number {
  let acc = -0;
  for (let i = 0; i < n; i++) { const v = o[oOff + i]; acc = f32(acc + f32(v * v)); }
  return acc;
}

/** gatedRmsNorm's f32 factor r = rsqrt(fl(mean(acc) + fl(eps))): a pure function of acc's bits (and ctx, n, eps). */
export function gatedNormFactor(ctx: ExecNumericContext, acc: number, n: number, eps: number): number {
  return rsqrt32(f32(meanOf(ctx, acc, n) + f32(eps)));
}

/** gatedRmsNorm's f32 output entry fl(fl(w·fl(o·r))·silu(z)): a pure function of o, r, w and z's bits (and the form). */
export function gatedNormEntry(o: number, r: number, w: number, z: number, form: 'mul' | 'div'): number {
  return f32(f32(w * f32(o * r)) * silu32(z, form));
}

/**
 * gatedRmsNorm's entry in the bf16 profile (HF: the normalised value cast to bf16, the weight's
 * product in bf16, the product with silu(z) cast to bf16): bf(fl(bf(fl(w·bf(fl(o·r))))·silu(z))),
 * a pure function of (o, r, w, z) as gatedNormEntry is.
 */
export function gatedNormEntryBf16(o: number, r: number, w: number, z: number, form: 'mul' | 'div'): number {
  return roundBf16(f32(roundBf16(f32(w * roundBf16(f32(o * r)))) * silu32(z, form)));
}

/**
 * L2 norm (HF `l2norm`, eps fixed at 1e−6, float32): out_i = fl(x_i · rsqrt(fl(Σ fl(x²) + fl(1e−6)))).
 * Writes n values to out[outOff ..) and returns the factor.
 */
export function l2norm(
  ctx: ExecNumericContext, x: ArrayLike<number>, xOff: number, n: number, out: Float32Array, outOff: number,
): number {
  const r = rsqrt32(f32(sumSquares(ctx, x, xOff, n) + f32(1e-6)));
  for (let i = 0; i < n; i++) out[outOff + i] = f32(x[xOff + i] * r);
  return r;
}
