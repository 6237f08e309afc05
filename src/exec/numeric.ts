/**
 * Float32 arithmetic primitives of the reference executor: the reduction functions (dot / sum) for
 * the three order modes, a correctly rounded float32 fused add (FMA emulation), the bf16
 * activation rounding, and the float32 activation functions with torch's formulas.
 *
 * Every float32 operation is a JS double operation rounded once with Math.fround. For + − × ÷ and
 * sqrt of float32 operands this equals the float32 IEEE result (53 ≥ 2·24 + 2, so rounding the
 * double result to float32 never double-rounds). exp / log1p / cos / sin are Math.* (double,
 * nearly correctly rounded) rounded once to float32; torch's float32 versions may differ by an
 * ulp outside the saturated regions listed below (docs/executor.md, "Arithmetic").
 */
import { f32BitsToBf16, bf16ToF32 } from '../safetensors/dtype.ts';
import type { DotFn, ExecOptions, ExecTuning, NumericContext, OrderMode, SumFn } from './types.ts';
import { DEFAULT_TUNING, ExecMemos, ExecPlans, type SparseTuning } from './plans.ts';
import { ChipcError } from '../util/errors.ts';

export const f32 = Math.fround;

// ---------------------------------------------------------------------------------------------
// bf16

const bfF32 = new Float32Array(1);
const bfU32 = new Uint32Array(bfF32.buffer);

/**
 * Rounds a float32 value to bfloat16 (round to nearest, ties to even; NaN stays NaN), returned as a
 * number: bf16ToF32(f32ToBf16(x)). Shortcut: a non-NaN float32 whose low 16 bits are 0 (±0
 * included) is already a bf16 value and comes back unchanged (RNE adds < 2^16 to it).
 */
export function roundBf16(x: number): number {
  bfF32[0] = x;
  const b = bfU32[0];
  if ((b & 0xffff) === 0 && (b & 0x7fffffff) <= 0x7f800000) return bfF32[0];
  return bf16ToF32(f32BitsToBf16(b));
}

// ---------------------------------------------------------------------------------------------
// Activation functions (float32, rounded at every op as torch does)

/** fl(exp(x)). Exact saturations: exp(x) = +0 for x ≤ −103.972084, exp(±0) = 1, +inf above ~88.72. */
export function exp32(x: number): number {
  // e^−104 ≈ 6.8e−46 is below half the smallest float32 subnormal (2^−150 ≈ 7.0e−46): rounds to +0.
  if (x < -104) return 0;
  return f32(Math.exp(x));
}

/**
 * Where sigmoid32 and silu32 saturate: sigmoid is exactly 1 from SATURATE_ONE_FROM on (e^−17 <
 * 2^−24, absorbed by 1), so silu gives x there; exactly +0 at and below SATURATE_ZERO_TO (e^89 >
 * 2^128: exp(−x) = inf), so silu gives −0 there for finite x.
 */
export const SATURATE_ONE_FROM = 17;
export const SATURATE_ZERO_TO = -89;

/**
 * sigmoid(x) = fl(1 / fl(1 + fl(exp(−x)))). Saturated: exactly 1.0 for x > 16.63553 (exp(−x) ≤ 2^−24
 * is absorbed by 1), exactly +0 for x < −88.72283 (exp(−x) = inf).
 */
export function sigmoid32(x: number): number {
  // the saturated ends without the exp (pinned circuits hit them every step): e^−17 < 2^−24, e^89 > 2^128
  if (x >= SATURATE_ONE_FROM) return 1;
  if (x <= SATURATE_ZERO_TO) return 0;
  return sigmoidFormula(x);
}

/** sigmoid32's formula without the saturation shortcuts (the reference the shortcuts are tested against). */
export function sigmoidFormula(x: number): number {
  return f32(1 / f32(1 + f32(Math.exp(-x))));
}

/**
 * silu(x) in float32. form 'div' (ATen's kernel, CPU and CUDA: what `F.silu` / `nn.SiLU` /
 * `ACT2FN['silu']` compute; the executor's default): fl(x / fl(1 + fl(exp(−x)))); form 'mul':
 * fl(x · sigmoid(x)). Both: exactly x for x > 16.63553, exactly −0 for x < −88.72283 (x·0 or x/inf
 * with x < 0), silu(±0) = ±0 (±0·0.5, ±0/2).
 */
export function silu32(x: number, form: 'mul' | 'div'): number {
  // ±0 in, ±0 out in both forms (±0·0.5, ±0/2): skips the exp, which unused units hit every step.
  if (x === 0) return x;
  // saturated ends (see sigmoid32): x·1 = x, x/1 = x; x·(+0) = x/inf = −0 for finite x < 0
  // (−inf is excluded: −inf·0 and −inf/inf are NaN)
  if (x >= SATURATE_ONE_FROM) return x;
  if (x <= SATURATE_ZERO_TO && x !== -Infinity) return -0;
  return siluFormula(x, form);
}

/** silu32's formulas without any shortcut (the reference the shortcuts are tested against). */
export function siluFormula(x: number, form: 'mul' | 'div'): number {
  if (form === 'mul') return f32(x * sigmoidFormula(x));
  return f32(x / f32(1 + f32(Math.exp(-x))));
}

/**
 * torch softplus (beta 1, threshold 20): x > 20 ? x : fl(log1p(fl(exp(x)))).
 * Exactly +0 for x ≤ −103.972084 (exp underflows to 0 and log1p(0) = 0).
 */
export function softplus32(x: number): number {
  return x > 20 ? x : f32(Math.log1p(f32(Math.exp(x))));
}

/** rsqrt(x) = fl(1 / fl(sqrt(x))) (torch CPU's 1/sqrt). Exact 2^−k for x = 4^k. */
export function rsqrt32(x: number): number {
  return f32(1 / f32(Math.sqrt(x)));
}

// ---------------------------------------------------------------------------------------------
// Correctly rounded float32(acc + p) for an exact double p (FMA emulation)

const f64Scratch = new Float64Array(1);
const u32OfF64 = new Uint32Array(f64Scratch.buffer);
const LO = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 0 : 1;
const HI = 1 - LO;

/**
 * float32(acc + p) with ONE rounding (round to nearest, ties to even), for any doubles acc, p
 * (used with acc a float32 and p an exact float32×float32 product, i.e. a fused multiply-add).
 *
 * Method: s = acc + p rounded to double, e = the exact error of that rounding (TwoSum, so
 * s + e = acc + p exactly). If e ≠ 0 and s's last significand bit is 0, s is moved one double
 * ulp towards e: this makes s the round-to-odd double of acc + p. Rounding a round-to-odd value
 * with ≥ 2 more bits (53 ≥ 24 + 2) to float32 gives the correctly rounded result, with no
 * double-rounding error (also for float32 subnormal results, which have even fewer bits).
 */
export function addRoundOnce(acc: number, p: number): number {
  const s = acc + p;
  if (!Number.isFinite(s)) return f32(s);
  const bb = s - acc;
  const e = (acc - (s - bb)) + (p - bb);
  if (e === 0 || s === 0) return f32(s);
  f64Scratch[0] = s;
  if ((u32OfF64[LO] & 1) === 0) {
    // Move |s| up (e has the sign of s) or down (opposite sign) by one unit in the last place.
    if ((e > 0) === (s > 0)) {
      const lo = (u32OfF64[LO] + 1) >>> 0;
      u32OfF64[LO] = lo;
      if (lo === 0) u32OfF64[HI] = (u32OfF64[HI] + 1) >>> 0;
    } else {
      const lo = u32OfF64[LO];
      u32OfF64[LO] = (lo - 1) >>> 0;
      if (lo === 0) u32OfF64[HI] = (u32OfF64[HI] - 1) >>> 0;
    }
    return f32(f64Scratch[0]);
  }
  return f32(s);
}

// ---------------------------------------------------------------------------------------------
// Reductions per order mode

/**
 * A seeded deterministic permutation source for shuffled mode. Call number c (0, 1, 2, … over the
 * life of the context, counting every dot and sum with n ≥ 2) permutes its n terms with a
 * Fisher–Yates shuffle driven by mulberry32 seeded with hash(seed, c). So a run is reproducible
 * for a given seed and call sequence, and two reductions of one run use different orders.
 */
export class Shuffler {
  private counter = 0;
  private perm = new Int32Array(0);
  constructor(private readonly seed: number) {}
  /** A permutation of 0..n−1 (valid until the next call). */
  next(n: number): Int32Array {
    if (this.perm.length < n) this.perm = new Int32Array(Math.max(n, 2 * this.perm.length));
    const perm = this.perm;
    for (let i = 0; i < n; i++) perm[i] = i;
    let st = (Math.imul(this.seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(this.counter, 0xc2b2ae35)) >>> 0;
    this.counter++;
    for (let i = n - 1; i > 0; i--) {
      st = (st + 0x6d2b79f5) >>> 0;
      let t = st;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      const r = (t ^ (t >>> 14)) >>> 0;
      const j = r % (i + 1);
      const tmp = perm[i];
      perm[i] = perm[j];
      perm[j] = tmp;
    }
    return perm;
  }
}

function checkOrder(order: OrderMode): void {
  if (order.kind === 'shuffled') {
    if (!Number.isSafeInteger(order.seed)) {
      throw new ChipcError('exec.bad-option', `shuffled order needs an integer seed, got ${order.seed}`);
    }
  } else if (order.kind !== 'sequential' && order.kind !== 'fma') {
    throw new ChipcError('exec.bad-option', `unknown order mode ${JSON.stringify(order)}`);
  }
}

/**
 * The dot product for an order mode.
 *  - sequential: acc = −0; for i in index order acc = fl(acc + fl(a_i·b_i)).
 *  - shuffled: the same, over the terms in a seeded permutation (see Shuffler).
 *  - fma: acc = −0; for i in index order acc = fl(acc + a_i·b_i) with the exact product and one
 *    rounding (addRoundOnce).
 * Each `makeDot` call owns its shuffle counter; makeNumericContext shares one Shuffler between
 * its dot and sum.
 */
export function makeDot(order: OrderMode, shuffler?: Shuffler): DotFn {
  checkOrder(order);
  if (order.kind === 'sequential') {
    return (a, aOff, aStride, b, bOff, bStride, n) => {
      let acc = -0;
      for (let i = 0; i < n; i++) acc = f32(acc + f32(a[aOff + i * aStride] * b[bOff + i * bStride]));
      return acc;
    };
  }
  if (order.kind === 'fma') {
    return (a, aOff, aStride, b, bOff, bStride, n) => {
      let acc = -0;
      for (let i = 0; i < n; i++) acc = addRoundOnce(acc, a[aOff + i * aStride] * b[bOff + i * bStride]);
      return acc;
    };
  }
  const sh = shuffler ?? new Shuffler(order.seed);
  return (a, aOff, aStride, b, bOff, bStride, n) => {
    let acc = -0;
    if (n < 2) {
      for (let i = 0; i < n; i++) acc = f32(acc + f32(a[aOff + i * aStride] * b[bOff + i * bStride]));
      return acc;
    }
    const perm = sh.next(n);
    for (let k = 0; k < n; k++) {
      const i = perm[k];
      acc = f32(acc + f32(a[aOff + i * aStride] * b[bOff + i * bStride]));
    }
    return acc;
  };
}

/** The sum for an order mode: acc = −0, then acc = fl(acc + x_i) in index / permuted order (fma mode sums sequentially: there is no product to fuse). */
export function makeSum(order: OrderMode, shuffler?: Shuffler): SumFn {
  checkOrder(order);
  if (order.kind !== 'shuffled') {
    return (a, off, stride, n) => {
      let acc = -0;
      for (let i = 0; i < n; i++) acc = f32(acc + a[off + i * stride]);
      return acc;
    };
  }
  const sh = shuffler ?? new Shuffler(order.seed);
  return (a, off, stride, n) => {
    let acc = -0;
    if (n < 2) {
      for (let i = 0; i < n; i++) acc = f32(acc + a[off + i * stride]);
      return acc;
    }
    const perm = sh.next(n);
    for (let k = 0; k < n; k++) acc = f32(acc + a[off + perm[k] * stride]);
    return acc;
  };
}

/**
 * NumericContext plus what the executor's own kernels need to know: the order mode, the sparse
 * path's thresholds, and the caches (plans.ts): `plans`, derived from the weights (shared by the
 * executors on one ModelWeights), and `memos`, this context's own.
 */
export interface ExecNumericContext extends NumericContext {
  order: OrderMode;
  tuning: SparseTuning;
  plans: ExecPlans;
  memos: ExecMemos;
}

function checkTuning(t: ExecTuning | undefined): SparseTuning {
  const unknown = Object.keys(t ?? {}).filter((k) => !(k in DEFAULT_TUNING));
  if (unknown.length > 0) {
    throw new ChipcError('exec.bad-option', `unknown tuning option ${unknown.join(', ')} (expected ${Object.keys(DEFAULT_TUNING).join(', ')})`);
  }
  const out = { ...DEFAULT_TUNING, ...t };
  for (const [k, v] of Object.entries(out)) {
    if (typeof v !== 'number' || !(v >= 0)) {
      throw new ChipcError('exec.bad-option', `tuning.${k} must be a number ≥ 0 (got ${String(v)})`);
    }
  }
  return out;
}

/**
 * Builds the numeric context for options (defaults: f32, sequential, silu 'div', mean 'div',
 * DEFAULT_TUNING), with `plans` as its weight plans (default: a fresh ExecPlans; the Executor
 * passes plansOf(weights)) and fresh memos.
 */
export function makeNumericContext(opts: ExecOptions = {}, plans: ExecPlans = new ExecPlans()): ExecNumericContext {
  const profile = opts.profile ?? 'f32';
  if (profile !== 'f32' && profile !== 'bf16') {
    throw new ChipcError('exec.bad-option', `unknown numeric profile '${String(profile)}' (expected f32 or bf16)`);
  }
  const order = opts.order ?? { kind: 'sequential' };
  checkOrder(order);
  const siluForm = opts.siluForm ?? 'div';
  if (siluForm !== 'mul' && siluForm !== 'div') {
    throw new ChipcError('exec.bad-option', `unknown silu form '${String(siluForm)}' (expected mul or div)`);
  }
  const meanMode = opts.meanMode ?? 'div';
  if (meanMode !== 'div' && meanMode !== 'mulrecip') {
    throw new ChipcError('exec.bad-option', `unknown mean mode '${String(meanMode)}' (expected div or mulrecip)`);
  }
  const tuning = checkTuning(opts.tuning);
  const sh = order.kind === 'shuffled' ? new Shuffler(order.seed) : undefined;
  return {
    profile,
    order,
    tuning,
    plans,
    memos: new ExecMemos(),
    dot: makeDot(order, sh),
    sum: makeSum(order, sh),
    siluForm,
    meanMode,
    act: profile === 'f32' ? (x: number) => x : roundBf16,
  };
}
