/**
 * The Gated DeltaNet (linear_attention) mixer in Hugging Face transformers' float32 order
 * (docs/host-architecture.md §3, HF `Qwen3_5GatedDeltaNet.forward`):
 *   1. projections mixed = x·W_qkvᵀ ([q|k|v]), z, b, a;
 *   2. causal depthwise conv1d over mixed with the conv state = the last K pre-activation inputs,
 *      y_c = Σ_j w[c,j]·state[c,j] (taps in ascending j, tap K−1 = current token), then SiLU;
 *   3. split q, k, v; β = sigmoid(b); g = −exp(A_log)·softplus(a + dt_bias) (float32);
 *   4. value head h reads key head h // r; q, k L2-normalised (eps 1e−6), q × fl(1/√dk);
 *   5. first forward on an empty cache (prefill): the chunked kernel (gdn-chunked.ts) per value head;
 *      decode: the recurrent rule per value head, in the order of docs/host-architecture.md §3.7
 *        S ← S·exp(g); kv = Sᵀk; δ = (v − kv)·β; S ← S + k⊗δ; o = Sᵀq (updated S);
 *   6. gated RMSNorm per value head with z, then out_proj.
 *
 * Note (HF versions): the current recurrent torch function divides q by √dk, the chunked one
 * multiplies by dk^−0.5; we multiply by fl(1/√dk) in both (docs/host-architecture.md §7; ≤ 1 ulp apart).
 *
 * Skips that are bit-identical by construction:
 *  - exp(g) = 1 (a pinned head): the decay S·1 is skipped (x·1 = x for every float, −0 included);
 *  - sparse path only, decode: when the head's k is all ±0, v and β are finite and the state holds
 *    no −0 and no non-finite value, the kv/δ/update steps are skipped: each k_i·δ_j is ±0, and
 *    S + (±0) = S for every S ≠ −0 (a −0 entry would become +0, hence the −0 check);
 *  - sparse path in sequential order, decode: recurrentStepSparse, which keeps a per-head summary
 *    of S (all +0 / no −0 and finite / unknown, and its rows known to be all +0) in the cache, so
 *    unused heads cost O(dk + dv) and one-hot keys update one row (see there).
 * Single-token calls reuse per-layer buffers (GdnCache.buffers): a decode step allocates nothing
 * but the hook copies.
 */
import { ChipcError } from '../util/errors.ts';
import type { ModelConfig } from '../model/config.ts';
import type { CsrMatrix, GdnWeights, Matrix } from '../model/weights.ts';
import { chunkGatedDeltaRule } from './gdn-chunked.ts';
import { gdnDims, type GdnDims } from '../model/naming.ts';
import { allPlusZero, linear, type MatmulPath, type MatmulStats } from './matmul.ts';
import type { ExecNumericContext } from './numeric.ts';
import { exp32, rsqrt32, sigmoid32, silu32, softplus32 } from './numeric.ts';
import { gatedRmsNorm, l2norm } from './norms.ts';
import { deltaLinear, nextInputStamp, type DeltaShare, type InputChanges, type OutputSource } from './delta.ts';
import { phaseEnd, phaseStart } from './profile.ts';
import { rowStackOf } from './stack-rows.ts';

const f32 = Math.fround;

/** model/naming.ts gdnDims, refusing a layer without value heads (r = 0) before the executor sizes buffers by it. */
export function gdnDimsOf(cfg: ModelConfig): GdnDims {
  const d = gdnDims(cfg);
  if (d.r < 1) throw new ChipcError('exec.bad-config', `linear_num_value_heads (${d.hv}) must be a multiple of linear_num_key_heads (${d.hk})`);
  return d;
}

/**
 * What is known about one head's state S, for the sparse decode step (recurrentStepSparse):
 *  - STATE_ANY: nothing (it may hold −0 or non-finite entries);
 *  - STATE_CLEAN: no −0 and no non-finite entry (so S·(±0) = ±0 and S + (±0) = S everywhere);
 *  - STATE_ZERO: every entry is +0 (bit pattern 0), which implies STATE_POS;
 *  - STATE_POS: STATE_CLEAN and no entry has its sign bit set (every entry is +0 or positive
 *    finite), so S_ij·x has the sign of x for every ±0 x (a pinned RAM holds only +0 and T > 0).
 */
export const STATE_ANY = 0;
export const STATE_CLEAN = 1;
export const STATE_ZERO = 2;
export const STATE_POS = 3;

/**
 * An idle step's output for one cache: `out` (shared between caches, never written), `buf` the
 * cache's copy handed out by each idle step, `source` naming it as a vector that never changes
 * (delta.ts OutputSource).
 */
interface IdleOut { weights: GdnWeights; out: Float32Array; buf: Float32Array; source: OutputSource }

/** Per-layer GDN cache: conv state (channel c at c·K + j, j = K−1 newest) and one state per value head. */
export interface GdnCache {
  conv: Float32Array;
  /** S[i,j] at i·dv + j, per value head. */
  S: Float32Array[];
  /**
   * Per value head, the STATE_* kind of S as the decode steps left it. Trusted only while the live
   * array has not been handed out (see `exposed`); prefill resets it to STATE_ANY.
   */
  kind: Uint8Array;
  /** Per value head: 1 once the live S was handed out (Executor.gdnState): its kind is re-derived every step. */
  exposed: Uint8Array;
  /** Per value head, per row i of S: 0 only if row i is known to be all +0 (kept with `kind`). */
  rowNonZero: Uint8Array[];
  /** Buffers of single-token calls (decode), reused so a step allocates nothing; created on first use. */
  buffers?: GdnBuffers;
  /** What gdnDecodeTracked knows about the last decode step; undefined = nothing (rebuilt by a full step). */
  track?: GdnTrack;
  /**
   * 1 when every conv state entry is known to be +0 (bit pattern 0); 0 = unknown. See idleStep.
   * A new cache starts at 1 (its state is a fresh +0 array); prepareToken keeps it at 1 while its
   * steps find every channel cold, and the tracked step sets it to 0.
   */
  convZero?: number;
  /**
   * The stacked in_proj (stack-rows.ts; the same Matrix object while its parts keep their storage)
   * through which every conv step since the cache was made got its input: then a channel whose qkv
   * row is empty there has had only +0 inputs, and its state is all +0 (it started so). undefined
   * before the first step, null when unknown (a step ran without it, or with another stack).
   */
  convInputs?: Matrix | null;
  /**
   * The mixer output of an idle step (see idleStep), once one has run; valid for these weights
   * only.
   */
  idleOut?: IdleOut;
  /**
   * What idlePreconditions learnt of the last input it checked: the stamp (DeltaShare) of an input
   * found all finite (−1: none), and the index of an entry with a clear sign bit in the last input.
   */
  idleInput?: { finiteStamp: number; clearAt: number };
  /** The layer's dimensions (gdnDimsOf), kept with the cache. */
  dims?: GdnDims;
  /** The result object of single-token decode steps (singleResult), made on first use. */
  single?: GdnRunResult;
}

/** Per-layer scratch of a single-token GDN call (every array is fully rewritten before it is read). */
interface GdnBuffers {
  mixed: Float32Array; z: Float32Array; b: Float32Array; a: Float32Array; conved: Float32Array;
  q: Float32Array; k: Float32Array; beta: Float32Array; g: Float32Array;
  core: Float32Array; normed: Float32Array; out: Float32Array; step: SparseStepScratch;
  /**
   * Per value head: the (core, z) bit patterns `normed` was last computed from (2·dv words per
   * head), valid where normMemoValid is 1. `normed` is written only by that computation.
   */
  normMemo: Uint32Array; normMemoValid: Uint8Array;
  /** Bit views of conved, normed and the tracked step's oldCore scratch (made once: a view costs an allocation). */
  convedBits: Uint32Array; normedBits: Uint32Array;
  /** gdnDecodeTracked's result (rewritten by each call). */
  tracked: { out: Float32Array; source: OutputSource | null };
}

function gdnBuffers(d: GdnDims, H: number): GdnBuffers {
  const conved = new Float32Array(d.convDim);
  const normed = new Float32Array(d.valueDim);
  return {
    convedBits: new Uint32Array(conved.buffer), normedBits: new Uint32Array(normed.buffer), tracked: { out: conved, source: null }, mixed: new Float32Array(d.convDim), z: new Float32Array(d.valueDim), b: new Float32Array(d.hv), a: new Float32Array(d.hv),
    conved, q: new Float32Array(d.keyDim), k: new Float32Array(d.keyDim),
    beta: new Float32Array(d.hv), g: new Float32Array(d.hv), core: new Float32Array(d.valueDim),
    normed, out: new Float32Array(H), step: newSparseStepScratch(d.dk, d.dv),
    normMemo: new Uint32Array(2 * d.valueDim), normMemoValid: new Uint8Array(d.hv),
  };
}

export function newGdnCache(d: GdnDims): GdnCache {
  const S: Float32Array[] = [];
  for (let h = 0; h < d.hv; h++) S.push(new Float32Array(d.dk * d.dv));
  return {
    conv: new Float32Array(d.convDim * d.K), S, kind: new Uint8Array(d.hv).fill(STATE_ZERO), exposed: new Uint8Array(d.hv),
    rowNonZero: S.map(() => new Uint8Array(d.dk)), dims: d,
    // every optional field from the start: one object shape for the JIT (fields added later had
    // each cache change shape, deoptimizing the decode's code when a new executor's caches came)
    buffers: undefined, track: undefined, convZero: 1, convInputs: undefined, idleOut: undefined, idleInput: undefined,
    single: undefined,
  };
}

/**
 * The STATE_* kind of S by a scan of its bit patterns. With `rowNonZero` (length dk, S being
 * dk × dv) it also records which rows hold a bit pattern other than +0 (1) and which are all +0 (0).
 */
export function classifyState(S: Float32Array, rowNonZero?: Uint8Array): number {
  const u = new Uint32Array(S.buffer, S.byteOffset, S.length);
  let kind = STATE_ZERO;
  let neg = false;
  if (rowNonZero) rowNonZero.fill(0);
  const dv = rowNonZero ? S.length / rowNonZero.length : 0;
  for (let i = 0; i < u.length; i++) {
    const b = u[i];
    if (b === 0) continue;
    if (rowNonZero) rowNonZero[Math.floor(i / dv)] = 1;
    if (b === 0x80000000 || (b & 0x7f800000) === 0x7f800000) kind = STATE_ANY;
    else {
      if (b >>> 31 === 1) neg = true;
      if (kind === STATE_ZERO) kind = STATE_CLEAN;
    }
  }
  return kind === STATE_CLEAN && !neg ? STATE_POS : kind;
}

/** Per-token quantities after projections, conv, gates and q/k normalisation. */
interface GdnToken {
  /** [Hk·dk] l2-normalised and scaled queries, [Hk·dk] l2-normalised keys. */
  q: Float32Array; k: Float32Array;
  /** [Hv·dv] values (after conv + SiLU), [Hv·dv] gate input z. */
  v: Float32Array; z: Float32Array;
  beta: Float32Array; g: Float32Array;
}

function prepareToken(
  ctx: ExecNumericContext, d: GdnDims, w: GdnWeights, cache: GdnCache, x: Float32Array,
  path: MatmulPath, stats?: MatmulStats, buf?: GdnBuffers,
): GdnToken {
  let t0 = phaseStart();
  const { mixed, z, b, a, stack } = projectToken(ctx, d, w, x, path, stats, buf);
  noteConvInputs(cache, stack);
  t0 = phaseEnd('gdn.proj', t0);
  const { K, convDim } = d;
  const conv = cache.conv;
  const conved = buf ? buf.conved : new Float32Array(convDim);
  const sequential = ctx.order.kind === 'sequential';
  const cw = w.conv1d;
  // channels that shifted (not cold): while none does, an all-+0 state stays all +0 (convZero)
  let shifted = 0;
  if (sequential && ctx.profile === 'f32' && ctx.siluForm === 'mul') {
    const cz = convZeroOf(w, convDim, K);
    shifted = convStepF32(convDim, K, cw, conv, mixed, conved, cz.finite, cz.out);
  } else {
    const cz = sequential ? convZeroOf(w, convDim, K) : null;
    const mixedBits = new Uint32Array(mixed.buffer, mixed.byteOffset, convDim);
    const convBits = new Uint32Array(conv.buffer, conv.byteOffset, conv.length);
    for (let c = 0; c < convDim; c++) {
      const base = c * K;
      if (cz !== null && mixedBits[c] === 0 && cz.finite[c] === 1) {
        // Cold channel: input and state all +0 stay all +0 after the shift; output precomputed.
        let cold = true;
        for (let j = 0; j < K; j++) if (convBits[base + j] !== 0) { cold = false; break; }
        if (cold) { conved[c] = cz.out[c]; continue; }
      }
      shifted++;
      for (let j = 0; j < K - 1; j++) conv[base + j] = conv[base + j + 1];
      conv[base + K - 1] = mixed[c];
      let y: number;
      if (sequential) {
        // ctx.dot in sequential order, inlined (acc = −0, then fl(acc + fl(w·s)) in tap order)
        y = -0;
        for (let j = 0; j < K; j++) y = f32(y + f32(cw[base + j] * conv[base + j]));
      } else y = ctx.dot(cw, base, 1, conv, base, 1, K);
      y = ctx.act(y);
      conved[c] = ctx.act(silu32(y, ctx.siluForm));
    }
  }
  if (shifted !== 0) cache.convZero = 0;
  t0 = phaseEnd('gdn.conv', t0);
  const { hk, hv, dk, keyDim } = d;
  const scale = f32(Math.pow(dk, -0.5)); // HF: query.shape[-1] ** -0.5, used as a float32 scalar
  const q = buf ? buf.q : new Float32Array(keyDim);
  const k = buf ? buf.k : new Float32Array(keyDim);
  for (let h = 0; h < hk; h++) normalizeQk(ctx, conved, q, k, h, dk, keyDim, scale, sequential);
  const v = buf ? conved.subarray(2 * keyDim) : conved.slice(2 * keyDim);
  const beta = buf ? buf.beta : new Float32Array(hv);
  const g = buf ? buf.g : new Float32Array(hv);
  for (let h = 0; h < hv; h++) {
    beta[h] = ctx.act(sigmoid32(b[h]));
    g[h] = f32(-exp32(w.aLog[h]) * softplus32(f32(a[h] + w.dtBias[h])));
  }
  phaseEnd('gdn.qkGates', t0);
  return { q, k, v, z, beta, g };
}

/**
 * The four input projections of one token: mixed (qkv), z, b, a, each equal to linear()'s. On the
 * sparse path in sequential order they run as the stacked incremental matmul [qkv; z; b; a] that
 * the tracked decode step uses (delta.ts, stack-rows.ts; bit-identical to linear()), so the
 * positions of a prefill keep its memo current and the first decode step walks only the columns
 * that changed since the last of them, instead of building the memo from scratch. The results are
 * copies (the memo's output is rewritten by the next call), into `buf`'s arrays when given;
 * `stack` is the stacked matrix used, or null when the four ran through linear().
 */
function projectToken(
  ctx: ExecNumericContext, d: GdnDims, w: GdnWeights, x: Float32Array, path: MatmulPath,
  stats?: MatmulStats, buf?: GdnBuffers,
): { mixed: Float32Array; z: Float32Array; b: Float32Array; a: Float32Array; stack: Matrix | null } {
  if (path === 'sparse' && ctx.order.kind === 'sequential') {
    const stack = rowStackOf(inProjParts(w));
    const ps = stack === null ? null : deltaLinear(ctx, stack.m, x, 0, null, 0, stats, { stamp: nextInputStamp() });
    if (ps !== null && stack !== null) {
      const off = stack.offsets;
      const y = ps.y;
      const part = (o: number, n: number, into: Float32Array | undefined): Float32Array => {
        const v = into ?? new Float32Array(n);
        v.set(y.subarray(o, o + n));
        return v;
      };
      return {
        mixed: part(0, d.convDim, buf?.mixed), z: part(off[1], d.valueDim, buf?.z),
        b: part(off[2], d.hv, buf?.b), a: part(off[3], d.hv, buf?.a), stack: stack.m,
      };
    }
  }
  return {
    mixed: linear(ctx, w.inProjQkv, x, path, { stats, out: buf?.mixed }),
    z: linear(ctx, w.inProjZ, x, path, { stats, out: buf?.z }),
    b: linear(ctx, w.inProjB, x, path, { stats, out: buf?.b }),
    a: linear(ctx, w.inProjA, x, path, { stats, out: buf?.a }),
    stack: null,
  };
}

/**
 * Records which stacked in_proj gave a conv step's input (GdnCache.convInputs): the first step's
 * stack, kept while every later step uses the same one; null (unknown) once one does not.
 */
function noteConvInputs(cache: GdnCache, stack: Matrix | null): void {
  if (cache.convInputs === undefined) cache.convInputs = stack;
  else if (cache.convInputs !== stack) cache.convInputs = null;
}

/**
 * The conv + SiLU of prepareToken for the f32 profile, sequential order, silu 'mul' (the same
 * float operations, act being the identity there), in a small monomorphic function: channels whose
 * input and state are all +0 (bit patterns) with finite taps keep their all-+0 state and output
 * zeroOut[c] (convZeroOf); the others shift, sum the taps from −0 in order and apply silu.
 * Returns how many channels shifted (were not cold).
 */
export function convStepF32(
  convDim: number, K: number, cw: Float32Array, conv: Float32Array, mixed: Float32Array, conved: Float32Array,
  finite: Uint8Array, zeroOut: Float32Array,
): number {
  let shifted = 0;
  const mixedBits = new Uint32Array(mixed.buffer, mixed.byteOffset, convDim);
  const convBits = new Uint32Array(conv.buffer, conv.byteOffset, conv.length);
  for (let c = 0; c < convDim; c++) {
    const base = c * K;
    if (mixedBits[c] === 0 && finite[c] === 1) {
      let cold = true;
      for (let j = 0; j < K; j++) if (convBits[base + j] !== 0) { cold = false; break; }
      if (cold) { conved[c] = zeroOut[c]; continue; }
    }
    shifted++;
    for (let j = 0; j < K - 1; j++) conv[base + j] = conv[base + j + 1];
    conv[base + K - 1] = mixed[c];
    let y = -0;
    for (let j = 0; j < K; j++) y = f32(y + f32(cw[base + j] * conv[base + j]));
    conved[c] = silu32(y, 'mul');
  }
  return shifted;
}

/**
 * q and k of key head h from the conv outputs: q = fl(l2norm(q_conv)·scale), k = l2norm(k_conv)
 * (HF order). In sequential order each goes through l2normSeq (its zeros copied, not multiplied);
 * a shuffled sum counts its calls, so the plain l2norm always runs there.
 */
function normalizeQk(
  ctx: ExecNumericContext, conved: Float32Array, q: Float32Array, k: Float32Array, h: number, dk: number,
  keyDim: number, scale: number, sequential: boolean,
): void {
  if (sequential) {
    l2normSeq(conved, h * dk, dk, q, h * dk, scale);
    l2normSeq(conved, keyDim + h * dk, dk, k, h * dk, 1);
    return;
  }
  l2norm(ctx, conved, h * dk, dk, q, h * dk);
  for (let i = 0; i < dk; i++) q[h * dk + i] = f32(q[h * dk + i] * scale);
  l2norm(ctx, conved, keyDim + h * dk, dk, k, h * dk);
}

const nzScratch = new Int32Array(1024);

/**
 * out = fl(fl(x·r)·s) (s = 1: fl(x·r)) for r = rsqrt(fl(Σ fl(x_i²) + fl(1e−6))), the sum folded in
 * sequential order from −0: norms.ts l2norm with the sequential sum, then a scale s > 0. One pass
 * sums the non-zero squares and copies every entry; a second scales the non-zeros only. The same
 * bits: a ±0 square leaves a non-zero partial sum as it is and turns the starting −0 into +0,
 * which only the all-zero case keeps (and fl(±0 + fl(1e−6)) is the same), so r is the same; and
 * for r finite and positive, fl(±0·r) = ±0 and fl(±0·s) = ±0, the entry's own bits. Any other r
 * (a NaN or infinite input): the plain formula for every entry.
 */
export function l2normSeq(x: Float32Array, xOff: number, n: number, out: Float32Array, outOff: number, s: number): void {
  const nz = n <= nzScratch.length ? nzScratch : new Int32Array(n);
  let m = 0;
  let acc = -0;
  for (let i = 0; i < n; i++) {
    const v = x[xOff + i];
    out[outOff + i] = v;
    if (v !== 0) { nz[m++] = i; acc = f32(acc + f32(v * v)); }
  }
  const r = rsqrt32(f32(acc + f32(1e-6)));
  if (r - r === 0 && r > 0) {
    if (s === 1) for (let t = 0; t < m; t++) { const i = nz[t]; out[outOff + i] = f32(x[xOff + i] * r); }
    else for (let t = 0; t < m; t++) { const i = nz[t]; out[outOff + i] = f32(f32(x[xOff + i] * r) * s); }
  } else {
    for (let i = 0; i < n; i++) out[outOff + i] = s === 1 ? f32(x[xOff + i] * r) : f32(f32(x[xOff + i] * r) * s);
  }
}

/**
 * Per channel of a conv1d weight: whether its K taps are finite, and the conv + SiLU output of a
 * channel whose state (current input included) is all +0: y = Σ_j fl(w_j·(+0)) from −0 is −0 iff
 * every tap has its sign bit set (else +0), and act(±0) = ±0, silu(±0) = ±0, so the output is y.
 * Cached per weight array.
 */
const convZeroCache = new WeakMap<Float32Array, { finite: Uint8Array; out: Float32Array }>();

export function convZeroOf(w: GdnWeights, convDim: number, K: number): { finite: Uint8Array; out: Float32Array } {
  let z = convZeroCache.get(w.conv1d);
  if (z === undefined) {
    const finite = new Uint8Array(convDim);
    const out = new Float32Array(convDim);
    for (let c = 0; c < convDim; c++) {
      let ok = true;
      let y = -0;
      for (let j = 0; j < K; j++) {
        const wj = w.conv1d[c * K + j];
        if (!Number.isFinite(wj)) ok = false;
        y = f32(y + f32(wj * 0));
      }
      finite[c] = ok ? 1 : 0;
      out[c] = y;
    }
    z = { finite, out };
    convZeroCache.set(w.conv1d, z);
  }
  return z;
}

/** True when the state has no −0 and no non-finite entry (see the skip rule in the header). */
function stateSkippable(S: Float32Array): boolean {
  const u = new Uint32Array(S.buffer, S.byteOffset, S.length);
  for (let i = 0; i < u.length; i++) {
    const b = u[i];
    if (b === 0x80000000 || (b & 0x7f800000) === 0x7f800000) return false;
  }
  return true;
}

/**
 * One recurrent step for one value head (docs/host-architecture.md §3.7 order), in place on S; writes o[dv] at oOff.
 * q, k at qOff/kOff (length dk), v at vOff (length dv).
 */
export function recurrentStep(
  ctx: ExecNumericContext, dk: number, dv: number, S: Float32Array,
  q: Float32Array, qOff: number, k: Float32Array, kOff: number, v: Float32Array, vOff: number,
  g: number, beta: number, o: Float32Array, oOff: number, allowSkip: boolean,
): void {
  const eg = exp32(g);
  if (eg !== 1) for (let i = 0; i < S.length; i++) S[i] = f32(S[i] * eg);
  let skip = false;
  if (allowSkip && Number.isFinite(beta)) {
    skip = true;
    for (let i = 0; i < dk; i++) if (k[kOff + i] !== 0) { skip = false; break; }
    if (skip) for (let j = 0; j < dv; j++) if (!Number.isFinite(v[vOff + j])) { skip = false; break; }
    if (skip) skip = stateSkippable(S);
  }
  if (!skip) {
    const delta = new Float32Array(dv);
    for (let j = 0; j < dv; j++) {
      const kv = ctx.dot(S, j, dv, k, kOff, 1, dk);
      delta[j] = f32(f32(v[vOff + j] - kv) * beta);
    }
    for (let i = 0; i < dk; i++) {
      const ki = k[kOff + i];
      const row = i * dv;
      for (let j = 0; j < dv; j++) S[row + j] = f32(S[row + j] + f32(ki * delta[j]));
    }
  }
  for (let j = 0; j < dv; j++) o[oOff + j] = ctx.dot(S, j, dv, q, qOff, 1, dk);
}

/** Scratch buffers of recurrentStepSparse (sized for dk, dv; reused across calls). */
export interface SparseStepScratch {
  kIdx: Int32Array;
  qIdx: Int32Array;
  /** The entries of kIdx / qIdx a column dot visits (see nonZeroIndices). */
  kDot: Int32Array;
  qDot: Int32Array;
  /** [count of the dot list, 1 if every entry is finite]. */
  dotCount: Int32Array;
  nzRows: Int32Array;
  delta: Float32Array;
  /** Set by recurrentStepSparse: [0] = 1 if the step may have changed S, else 0. */
  modified: Uint8Array;
  /** Scratch of the row-wise column dots: kv_j (without a memo) and per-column flags. */
  kv: Float32Array;
  any: Uint8Array;
}

/**
 * Per value head of one layer, what a tracked decode step can reuse from the previous one (see
 * recurrentStepSparse's `memo`): kv_j = dot(S[:,j], k) as that step computed it, at h·dv + j, and
 * whether it still describes S (valid: computed on a finite-kind state that the step then left
 * unchanged) and whether k was all finite.
 */
export interface KvMemo {
  kv: Float32Array;
  valid: Uint8Array;
  kFinite: Uint8Array;
  /** 1 when k was all ±0 (no row of S can be updated while δ stays finite). */
  kZero: Uint8Array;
}

export function newKvMemo(hv: number, dv: number): KvMemo {
  return { kv: new Float32Array(hv * dv), valid: new Uint8Array(hv), kFinite: new Uint8Array(hv), kZero: new Uint8Array(hv) };
}

export function newSparseStepScratch(dk: number, dv: number): SparseStepScratch {
  return {
    kIdx: new Int32Array(dk), qIdx: new Int32Array(dk), kDot: new Int32Array(dk), qDot: new Int32Array(dk),
    dotCount: new Int32Array(2), nzRows: new Int32Array(dk), delta: new Float32Array(dv), modified: new Uint8Array(1),
    kv: new Float32Array(dv), any: new Uint8Array(dv),
  };
}

/** Sign bit of a float (true for −0 and negative values, and for NaNs with the bit set). */
function signBit(x: number): boolean {
  return x < 0 || Object.is(x, -0); // (V8 compiles the −0 test to a bit test, no division)
}

/**
 * Column dots out[outOff + j] = Σ_i S[i,j]·x[xOff+i] over i < dk for every j < dv, each in
 * sequential order from −0 (what ctx.dot computes in sequential order), visiting only the n
 * indices idx[0..n) where x is non-zero. Exact when S is
 * finite (kind ≥ STATE_CLEAN), by matmul.ts's argument: every skipped term S·(±0) is ±0, so a
 * non-zero sum of the visited terms is the full sum, and a zero one is +0 if some visited term was
 * non-zero (exact cancellation). If none was, every term is ±0 and the sum is −0 iff every term is
 * −0: a row known to be all +0 gives +0·x_i, −0 iff x_i has its sign bit set (`xNegOffRows`: true
 * iff that holds for every such row); the other rows (nzRows[0..nzn)) are checked one by one.
 * The rows are walked one by one (each visited row of S read contiguously), each column's sum
 * kept in out in idx order; `any` is scratch (dv).
 */
function columnDotsInto(
  S: Float32Array, dv: number, x: Float32Array, xOff: number, idx: Int32Array, n: number,
  nzRows: Int32Array, nzn: number, xNegOffRows: boolean, signOfX: number, out: Float32Array, outOff: number, any: Uint8Array,
): void {
  for (let j = 0; j < dv; j++) { out[outOff + j] = -0; any[j] = 0; }
  for (let t = 0; t < n; t++) {
    const i = idx[t];
    const xi = x[xOff + i];
    const row = i * dv;
    for (let j = 0; j < dv; j++) {
      const p = f32(S[row + j] * xi);
      if (p !== 0) { any[j] = 1; out[outOff + j] = f32(out[outOff + j] + p); }
    }
  }
  for (let j = 0; j < dv; j++) {
    const acc = out[outOff + j];
    if (acc !== 0 || Number.isNaN(acc)) continue;
    if (any[j] === 1 || !xNegOffRows) { out[outOff + j] = 0; continue; }
    // every term is ±0: as sparseColumnDot decides the sign of the zero
    if (signOfX >= 0) { out[outOff + j] = signOfX === 1 ? -0 : 0; continue; }
    let z = -0;
    for (let t = 0; t < nzn; t++) {
      const i = nzRows[t];
      if (1 / f32(S[i * dv + j] * x[xOff + i]) > 0) { z = 0; break; }
    }
    out[outOff + j] = z;
  }
}

/** Lists the rows marked in rowNonZero into out; returns how many. */
function listRows(rowNonZero: Uint8Array, out: Int32Array): number {
  let n = 0;
  for (let i = 0; i < rowNonZero.length; i++) if (rowNonZero[i]) out[n++] = i;
  return n;
}

/**
 * Indices of the non-zero entries of x[xOff .. xOff+dk) into idx; returns their count, and in
 * `negOff[0]` whether every entry of a row NOT in nzRows (rowNonZero[i] = 0) has its sign bit set,
 * in `allNeg[0]` whether every entry has it.
 * With dotIdx, also lists there (count in `dotCount[0]`) the non-zero entries a column dot over S
 * must visit: those in rows not known to be all +0, and any non-finite one. A finite x_i in an
 * all-+0 row gives the term fl(+0·x_i) = ±0, which sparseColumnDot skips anyway (its sign is
 * covered by negOff). `allFinite[0]`: every entry is finite.
 */
function nonZeroIndices(
  x: Float32Array, xOff: number, dk: number, idx: Int32Array, rowNonZero: Uint8Array, negOff: boolean[],
  dotIdx?: Int32Array, dotCount?: Int32Array,
): number {
  let n = 0;
  let nd = 0;
  let allNeg = true;
  let everyNeg = true;
  let finite = true;
  for (let i = 0; i < dk; i++) {
    const v = x[xOff + i];
    if (v !== 0) {
      idx[n++] = i;
      const fin = v - v === 0;
      if (!fin) finite = false;
      if (dotIdx && (rowNonZero[i] || !fin)) dotIdx[nd++] = i;
    }
    // (once both flags are false the sign bits no longer matter)
    if ((everyNeg || allNeg) && !signBit(v)) { everyNeg = false; if (!rowNonZero[i]) allNeg = false; }
  }
  negOff[0] = allNeg;
  negOff[1] = everyNeg;
  if (dotCount) { dotCount[0] = nd; dotCount[1] = finite ? 1 : 0; }
  return n;
}

const negOffScratch = [false, false];

/**
 * recurrentStep in sequential order, bit-identical to it, for a state whose STATE_* kind and
 * all-+0 rows are known (`kind` and `rowNonZero` — 0 only for a row of +0s — must be true of S on
 * entry; both are updated to stay true on exit; the kind is returned). Same math:
 *   S ← fl(S·exp(g)); kv_j = dot(S[:,j], k); δ_j = fl(fl(v_j − kv_j)·β); S_ij = fl(S_ij + fl(k_i·δ_j));
 *   o_j = dot(S[:,j], q)
 * with these exact shortcuts:
 *  - exp(g) = 1: no decay (x·1 = x); S all +0 and exp(g) finite: no decay (+0·e = +0 for e ≥ 0);
 *    a finite decay keeps +0 rows +0;
 *  - S finite (CLEAN/ZERO): kv and o visit only the non-zero k_i / q_i (sparseColumnDot), and a
 *    zero sum's sign needs only the rows not known to be +0;
 *  - S has no −0 and is finite and every δ_j is finite: rows i with k_i = ±0 are left alone, since
 *    fl(k_i·δ_j) = ±0 and S_ij + (±0) = S_ij for S_ij ≠ −0 (+0 + −0 = +0). A one-hot key (a pinned
 *    RAM write) touches one row; an all-zero key (an unused head) touches none.
 * Anything else (a state that may hold −0 or non-finite values, non-finite δ) runs the full update.
 *
 * `memo` (a tracked decode step, head h): when `same` — q and k are bit-identical to the previous
 * call's for this head, S has not changed since then, and o[oOff..] still holds that call's output
 * — and memo.valid[h], the kv_j are memo.kv's (a pure function of S, k and S's kind and +0 rows,
 * all unchanged), unless this step decays S. If then every δ_j is ±0 and k is finite, or k was
 * all ±0 and every δ_j is finite (the update leaves rows with k_i = ±0 alone), nothing changes S,
 * and o = dot(S[:,j], q) is the previous output: the step returns at once. Any other outcome runs
 * the step as above, which refreshes the memo (valid only when that step left S unchanged).
 */
export function recurrentStepSparse(
  dk: number, dv: number, S: Float32Array, kind: number, rowNonZero: Uint8Array,
  q: Float32Array, qOff: number, k: Float32Array, kOff: number, v: Float32Array, vOff: number,
  g: number, beta: number, o: Float32Array, oOff: number, scratch: SparseStepScratch,
  memo?: KvMemo, h = 0, same = false,
): number {
  const eg = exp32(g);
  scratch.modified[0] = 0;
  const decays = eg !== 1 && !(kind === STATE_ZERO && Number.isFinite(eg));
  if (memo && same && !decays && kind !== STATE_ANY && memo.valid[h] === 1 && memo.kFinite[h] === 1) {
    const kv = memo.kv;
    const m0 = h * dv;
    let unchanged = true;
    if (memo.kZero[h] === 1) {
      // k all ±0: every δ_j finite leaves S as it is (the update's rows with k_i = ±0 are left alone)
      for (let j = 0; j < dv; j++) { const dj = f32(f32(v[vOff + j] - kv[m0 + j]) * beta); if (dj - dj !== 0) { unchanged = false; break; } }
    } else {
      // δ all ±0, k finite: fl(k_i·δ_j) = ±0 and S_ij + (±0) = S_ij
      for (let j = 0; j < dv; j++) if (f32(f32(v[vOff + j] - kv[m0 + j]) * beta) !== 0) { unchanged = false; break; }
    }
    if (unchanged) return kind; // S, and so o, stay as they were
  }
  if (memo) memo.valid[h] = 0;
  if (decays) {
    scratch.modified[0] = 1;
    let nonZero = false;
    let dirty = false;
    let neg = false;
    for (let i = 0; i < S.length; i++) {
      const y = f32(S[i] * eg);
      S[i] = y;
      if (y !== 0) { nonZero = true; if (y - y !== 0) dirty = true; else if (y < 0) neg = true; } else if (1 / y < 0) dirty = true;
    }
    // not dirty ⇒ eg finite (a +0 row times inf would be NaN), so +0 rows stayed +0
    kind = dirty ? STATE_ANY : nonZero ? (neg ? STATE_CLEAN : STATE_POS) : STATE_ZERO;
  }
  const { kIdx, qIdx, kDot, qDot, dotCount, nzRows, delta } = scratch;
  const finiteState = kind !== STATE_ANY;
  let allDeltaFinite = true;
  let allDeltaZero = true;
  let kFinite = false;
  let kn = 0;
  if (finiteState) {
    kn = nonZeroIndices(k, kOff, dk, kIdx, rowNonZero, negOffScratch, kDot, dotCount);
    const kNegOff = negOffScratch[0];
    const kSign = kind === STATE_POS || kind === STATE_ZERO ? (negOffScratch[1] ? 1 : 0) : -1;
    const kdn = dotCount[0];
    kFinite = dotCount[1] === 1;
    const nzn = kSign >= 0 ? 0 : listRows(rowNonZero, nzRows);
    // kv_j for every j (into the memo, which keeps them for the next step, or into scratch)
    const kvArr = memo ? memo.kv : scratch.kv;
    const m0 = memo ? h * dv : 0;
    columnDotsInto(S, dv, k, kOff, kDot, kdn, nzRows, nzn, kNegOff, kSign, kvArr, m0, scratch.any);
    for (let j = 0; j < dv; j++) {
      const kv = kvArr[m0 + j];
      const dj = f32(f32(v[vOff + j] - kv) * beta);
      delta[j] = dj;
      if (dj - dj !== 0) allDeltaFinite = false;
      if (dj !== 0) allDeltaZero = false;
    }
  } else {
    for (let j = 0; j < dv; j++) {
      let kv = -0;
      for (let i = 0; i < dk; i++) kv = f32(kv + f32(S[i * dv + j] * k[kOff + i]));
      delta[j] = f32(f32(v[vOff + j] - kv) * beta);
    }
  }
  if (finiteState && allDeltaZero && kFinite) {
    // every δ_j = ±0 and k finite: fl(k_i·δ_j) = ±0, and S_ij + (±0) = S_ij since S holds no −0
  } else if (finiteState && allDeltaFinite) {
    let nonZero = kind !== STATE_ZERO;
    let dirty = false;
    // negative entries outside the updated rows may remain unless the state had none
    let neg = kind === STATE_CLEAN;
    if (kn > 0) scratch.modified[0] = 1;
    for (let t = 0; t < kn; t++) {
      const i = kIdx[t];
      const ki = k[kOff + i];
      const row = i * dv;
      rowNonZero[i] = 1;
      for (let j = 0; j < dv; j++) {
        const y = f32(S[row + j] + f32(ki * delta[j]));
        S[row + j] = y;
        if (y !== 0) { nonZero = true; if (y - y !== 0) dirty = true; else if (y < 0) neg = true; } else if (1 / y < 0) dirty = true;
      }
    }
    kind = dirty ? STATE_ANY : nonZero ? (neg ? STATE_CLEAN : STATE_POS) : STATE_ZERO;
  } else {
    scratch.modified[0] = 1;
    for (let i = 0; i < dk; i++) {
      const ki = k[kOff + i];
      const row = i * dv;
      for (let j = 0; j < dv; j++) S[row + j] = f32(S[row + j] + f32(ki * delta[j]));
    }
    kind = classifyState(S, rowNonZero);
  }
  // kv (computed above on a finite state) still describes S when the step left S as it was
  if (memo && finiteState && scratch.modified[0] === 0) { memo.valid[h] = 1; memo.kFinite[h] = kFinite ? 1 : 0; memo.kZero[h] = kn === 0 ? 1 : 0; }
  if (kind !== STATE_ANY) {
    nonZeroIndices(q, qOff, dk, qIdx, rowNonZero, negOffScratch, qDot, dotCount);
    const qNegOff = negOffScratch[0];
    const qSign = kind === STATE_POS || kind === STATE_ZERO ? (negOffScratch[1] ? 1 : 0) : -1;
    const qdn = dotCount[0];
    const nzn = qSign >= 0 ? 0 : listRows(rowNonZero, nzRows);
    columnDotsInto(S, dv, q, qOff, qDot, qdn, nzRows, nzn, qNegOff, qSign, o, oOff, scratch.any);
  } else {
    for (let j = 0; j < dv; j++) {
      let acc = -0;
      for (let i = 0; i < dk; i++) acc = f32(acc + f32(S[i * dv + j] * q[qOff + i]));
      o[oOff + j] = acc;
    }
  }
  return kind;
}

export interface GdnRunResult {
  /** Mixer output per token, [H] each. */
  out: Float32Array[];
  /** Per token: states after that token (copies), or null where not available. Only filled when wantStates. */
  states: (Float32Array[] | null)[];
  /**
   * Single-token decode: the versioned vector out[0] equals (delta.ts OutputSource), so a consumer
   * can tell which entries changed since the previous step; null when the step cannot tell.
   */
  outSource?: OutputSource | null;
}

/**
 * Runs the GDN mixer over the normalised inputs xs (one [H] vector per token).
 * mode 'prefill': chunked kernel over all tokens (states known only after the last token);
 * mode 'decode': the recurrent rule token by token.
 */
/**
 * Heads with bit-identical inputs (q, k, v, g, β and initial state) get bit-identical outputs and
 * final states from the chunked kernel, which is a pure function of them in sequential and FMA
 * order. Compiled models have many unused heads whose inputs are the same zeros, so the kernel
 * runs once per distinct input and its results are copied (shuffled order calls the kernel every
 * time: its permutations depend on a call counter).
 */
type ChunkMemo = Map<number, { inputs: Float32Array[]; out: Float32Array; state: Float32Array }[]>;

function allZero(x: Float32Array): boolean {
  for (let i = 0; i < x.length; i++) if (x[i] !== 0) return false;
  return true;
}

function chunkMemo(
  memo: ChunkMemo, ctx: ExecNumericContext,
  a: { L: number; dk: number; dv: number; q: Float32Array; k: Float32Array; v: Float32Array; g: Float32Array; beta: Float32Array; state: Float32Array },
): Float32Array {
  // A head whose q, k and v are all zero (an unused head) sums only zeros: its result is the same
  // in every order, so it may be memoized in shuffled order too; any other head draws its own permutations.
  if (ctx.order.kind === 'shuffled' && !(allZero(a.q) && allZero(a.k) && allZero(a.v))) return chunkGatedDeltaRule({ ...a, ctx });
  const inputs = [a.q, a.k, a.v, a.g, a.beta, a.state];
  let h = 0x811c9dc5 ^ a.L;
  for (const arr of inputs) {
    const u = new Uint32Array(arr.buffer, arr.byteOffset, arr.length);
    for (let i = 0; i < u.length; i++) h = Math.imul(h ^ u[i]!, 0x01000193);
  }
  const same = (x: Float32Array, y: Float32Array) => {
    if (x.length !== y.length) return false;
    const ux = new Uint32Array(x.buffer, x.byteOffset, x.length);
    const uy = new Uint32Array(y.buffer, y.byteOffset, y.length);
    for (let i = 0; i < ux.length; i++) if (ux[i] !== uy[i]) return false;
    return true;
  };
  const bucket = memo.get(h) ?? [];
  for (const e of bucket) {
    if (e.inputs.every((x, i) => same(x, inputs[i]!))) {
      a.state.set(e.state);
      return e.out.slice();
    }
  }
  const before = inputs.map((x) => x.slice());
  const out = chunkGatedDeltaRule({ ...a, ctx });
  bucket.push({ inputs: before, out: out.slice(), state: a.state.slice() });
  memo.set(h, bucket);
  return out;
}

export function gdnForward(
  ctx: ExecNumericContext, cfg: ModelConfig, w: GdnWeights, cache: GdnCache, xs: Float32Array[],
  mode: 'prefill' | 'decode', path: MatmulPath, wantStates: boolean, stats?: MatmulStats, share?: DeltaShare,
  kernelCtx: ExecNumericContext = ctx,
): GdnRunResult {
  const d = cache.dims ??= gdnDimsOf(cfg);
  const L = xs.length;
  const idle = mode === 'decode' && L === 1 && path === 'sparse' && ctx.order.kind === 'sequential'
    && idlePreconditions(d, w, cache, xs[0], share);
  if (idle) {
    if (cache.idleOut === undefined || cache.idleOut.weights !== w) {
      // an idle step of these weights in this numeric mode already ran (in any cache): its output
      const known = idleOutputs.get(w)?.get(idleModeKey(ctx));
      if (known !== undefined) cache.idleOut = newIdleOut(w, known);
    }
    const io = cache.idleOut;
    if (io !== undefined && io.weights === w) {
      io.buf.set(io.out);
      if (stats) stats.sparse += 5;
      phaseEnd('gdn.idle', phaseStart());
      return singleResult(cache, io.buf, wantStates, io.source);
    }
  }
  // A single-token call reuses the layer's buffers: its outputs are consumed before the next call.
  let buf: GdnBuffers | undefined;
  if (L === 1) buf = cache.buffers ??= gdnBuffers(d, w.outProj.rows);
  if (!idle && buf !== undefined && mode === 'decode' && path === 'sparse' && ctx.order.kind === 'sequential'
    && ctx.profile === 'f32' && ctx.siluForm === 'mul') {
    const o = gdnDecodeTracked(ctx, cfg, w, cache, xs[0], d, buf, stats, share);
    if (o !== null) {
      cache.convZero = 0;
      return singleResult(cache, o.out, wantStates, o.source);
    }
  }
  materializeLazyConv(cache, d.K);
  cache.track = undefined;
  const r = gdnForwardFull(ctx, cfg, w, cache, xs, mode, path, wantStates, d, buf, stats, kernelCtx);
  if (idle) {
    // Keep the output only if the step left the state as it found it (it does: see idleStep).
    // prepareToken kept convZero at 1 if every channel stayed cold; else the state is scanned.
    if (cache.convZero !== 1) cache.convZero = allPlusZeroBits(cache.conv) ? 1 : 0;
    let zero = cache.convZero === 1;
    for (let h = 0; h < d.hv && zero; h++) if (cache.kind[h] !== STATE_ZERO) zero = false;
    if (zero) {
      const out = r.out[0].slice();
      cache.idleOut = newIdleOut(w, out);
      let byMode = idleOutputs.get(w);
      if (byMode === undefined) { byMode = new Map(); idleOutputs.set(w, byMode); }
      byMode.set(idleModeKey(ctx), out);
    }
  }
  return r;
}

/**
 * The result of a single-token decode step (idle or tracked) in the cache's one result object,
 * rewritten by each such step (the caller reads it before the layer's next call), so that a
 * step allocates nothing; the states are copies when wanted.
 */
function singleResult(
  cache: GdnCache, out: Float32Array, wantStates: boolean, source: OutputSource | null,
): GdnRunResult {
  const r = cache.single ??= { out: [out], states: [null], outSource: source };
  r.out[0] = out;
  r.states[0] = wantStates ? cache.S.map((s) => s.slice()) : null;
  r.outSource = source;
  return r;
}

/**
 * Per GDN weights, per numeric mode (idleModeKey): the output of an idle step (idleStep), kept
 * once one has run in any cache. The step is a pure function of the weights and the numeric mode
 * (its preconditions fix every input it reads), so every cache of these weights that meets them
 * gets this vector; the array is shared and never written.
 */
const idleOutputs = new WeakMap<GdnWeights, Map<string, Float32Array>>();

/** What of a numeric context (sequential order) an idle step's output depends on. */
function idleModeKey(ctx: ExecNumericContext): string {
  return `${ctx.profile}|${ctx.siluForm}|${ctx.meanMode}`;
}

function newIdleOut(w: GdnWeights, out: Float32Array): IdleOut {
  const source: OutputSource = { version: 0, full: false, rows: new Int32Array(0), nRows: 0 };
  return { weights: w, out, buf: new Float32Array(out.length), source };
}

/**
 * Idle step (sparse path, sequential order, decode). A layer whose in_proj_qkv / z / b / a are all
 * +0 (isIdleLayer) maps a finite input with at least one activation of clear sign bit to mixed,
 * z, b, a = +0 exactly, whatever the input (matmul.ts rule 2). If moreover the conv state is all
 * +0 and every head's state is all +0 (kind STATE_ZERO, not handed out), the whole step is a pure
 * function of the weights alone: its output is the same vector every time, and it leaves the conv
 * state (shifted +0s) and S unchanged — checked after the first such step actually ran (the
 * output is stored only if the conv state is still all +0 and every head is still STATE_ZERO).
 * Later idle steps copy that output, in this cache and in any other cache of the same weights and
 * numeric mode (idleOutputs). Hooks still get copies of the (unchanged) states.
 */
function idlePreconditions(d: GdnDims, w: GdnWeights, cache: GdnCache, x: Float32Array, share?: DeltaShare): boolean {
  if (!isIdleLayer(w)) return false;
  const seen = cache.idleInput ??= { finiteStamp: -1, clearAt: 0 };
  // finite: the entries that changed since an input stamped and found finite, else every entry
  const since = share?.since;
  const n = since && seen.finiteStamp !== -1 && since.prevStamp === seen.finiteStamp ? since.nChanged : x.length;
  for (let t = 0; t < n; t++) {
    const v = x[n === x.length ? t : (since as InputChanges).changed[t]];
    if (v - v !== 0) { seen.finiteStamp = -1; return false; }
  }
  seen.finiteStamp = share?.stamp ?? -1;
  // an entry with a clear sign bit: the last one found, if it still is
  if (!(seen.clearAt < x.length && signClear(x[seen.clearAt]))) {
    let i = 0;
    while (i < x.length && !signClear(x[i])) i++;
    if (i === x.length) return false;
    seen.clearAt = i;
  }
  for (let h = 0; h < d.hv; h++) if (cache.kind[h] !== STATE_ZERO || cache.exposed[h]) return false;
  if (cache.convZero !== 1) {
    cache.convZero = allPlusZeroBits(cache.conv) ? 1 : 0;
    if (cache.convZero !== 1) return false;
  }
  return true;
}

/** True for +0 and positive values: a clear sign bit (the caller has ruled out NaN). */
function signClear(v: number): boolean {
  return v > 0 || (v === 0 && 1 / v > 0);
}

const idleLayers = new WeakMap<GdnWeights, boolean>();

/** True when in_proj_qkv, in_proj_z, in_proj_b and in_proj_a hold only +0 weights (cached). */
function isIdleLayer(w: GdnWeights): boolean {
  let v = idleLayers.get(w);
  if (v === undefined) {
    v = allPlusZero(w.inProjQkv) && allPlusZero(w.inProjZ) && allPlusZero(w.inProjB) && allPlusZero(w.inProjA);
    idleLayers.set(w, v);
  }
  return v;
}

function allPlusZeroBits(a: Float32Array): boolean {
  const u = new Uint32Array(a.buffer, a.byteOffset, a.length);
  for (let i = 0; i < u.length; i++) if (u[i] !== 0) return false;
  return true;
}

function gdnForwardFull(
  ctx: ExecNumericContext, cfg: ModelConfig, w: GdnWeights, cache: GdnCache, xs: Float32Array[],
  mode: 'prefill' | 'decode', path: MatmulPath, wantStates: boolean, d: GdnDims, buf: GdnBuffers | undefined,
  stats?: MatmulStats, kernelCtx: ExecNumericContext = ctx,
): GdnRunResult {
  const { hv, dk, dv, r, valueDim } = d;
  const L = xs.length;
  const toks = xs.map((x) => prepareToken(ctx, d, w, cache, x, path, stats, buf));
  let t0 = phaseStart();
  const core: Float32Array[] = buf ? [buf.core] : toks.map(() => new Float32Array(valueDim));
  const states: (Float32Array[] | null)[] = toks.map(() => null);
  if (mode === 'prefill') {
    const memo: ChunkMemo = new Map();
    for (let h = 0; h < hv; h++) {
      const kh = Math.floor(h / r);
      const q = new Float32Array(L * dk);
      const k = new Float32Array(L * dk);
      const v = new Float32Array(L * dv);
      const g = new Float32Array(L);
      const beta = new Float32Array(L);
      for (let t = 0; t < L; t++) {
        q.set(toks[t].q.subarray(kh * dk, (kh + 1) * dk), t * dk);
        k.set(toks[t].k.subarray(kh * dk, (kh + 1) * dk), t * dk);
        v.set(toks[t].v.subarray(h * dv, (h + 1) * dv), t * dv);
        g[t] = toks[t].g[h];
        beta[t] = toks[t].beta[h];
      }
      const o = chunkMemo(memo, kernelCtx, { L, dk, dv, q, k, v, g, beta, state: cache.S[h] });
      for (let t = 0; t < L; t++) {
        for (let j = 0; j < dv; j++) core[t][h * dv + j] = ctx.act(o[t * dv + j]);
      }
    }
    for (let h = 0; h < hv; h++) cache.kind[h] = classifyState(cache.S[h], cache.rowNonZero[h]);
    if (wantStates && L > 0) states[L - 1] = cache.S.map((s) => s.slice());
  } else if (path === 'sparse' && ctx.order.kind === 'sequential') {
    // The sparse decode step (bit-identical to recurrentStep in sequential order, see there).
    const scratch = buf ? buf.step : newSparseStepScratch(dk, dv);
    for (let t = 0; t < L; t++) {
      const tk = toks[t];
      const o = core[t];
      for (let h = 0; h < hv; h++) {
        const kh = Math.floor(h / r);
        const S = cache.S[h];
        const rows = cache.rowNonZero[h];
        const kind = cache.exposed[h] ? classifyState(S, rows) : cache.kind[h];
        cache.kind[h] = recurrentStepSparse(
          dk, dv, S, kind, rows, tk.q, kh * dk, tk.k, kh * dk, tk.v, h * dv, tk.g[h], tk.beta[h], o, h * dv, scratch,
        );
        for (let j = 0; j < dv; j++) o[h * dv + j] = ctx.act(o[h * dv + j]);
      }
      if (wantStates) states[t] = cache.S.map((s) => s.slice());
    }
  } else {
    for (let t = 0; t < L; t++) {
      const tk = toks[t];
      for (let h = 0; h < hv; h++) {
        const kh = Math.floor(h / r);
        recurrentStep(
          ctx, dk, dv, cache.S[h], tk.q, kh * dk, tk.k, kh * dk, tk.v, h * dv, tk.g[h], tk.beta[h],
          core[t], h * dv, path === 'sparse',
        );
        for (let j = 0; j < dv; j++) core[t][h * dv + j] = ctx.act(core[t][h * dv + j]);
      }
      if (wantStates) states[t] = cache.S.map((s) => s.slice());
    }
    cache.kind.fill(STATE_ANY);
    for (const rows of cache.rowNonZero) rows.fill(1);
  }
  t0 = phaseEnd(mode === 'prefill' ? 'gdn.chunked' : 'gdn.recurrent', t0);
  const out: Float32Array[] = [];
  const normed = buf ? buf.normed : new Float32Array(valueDim);
  for (let t = 0; t < L; t++) {
    if (buf !== undefined) {
      // The gated norm of a head is a pure function of its (core, z) bit patterns (fixed weights and
      // numeric context per cache): a head whose inputs repeat bit for bit keeps its last output.
      const memo = buf.normMemo;
      const cb = new Uint32Array(core[t].buffer, core[t].byteOffset, valueDim);
      const zb = new Uint32Array(toks[t].z.buffer, toks[t].z.byteOffset, valueDim);
      for (let h = 0; h < hv; h++) {
        const o0 = h * dv;
        const m0 = 2 * o0;
        let same = buf.normMemoValid[h] === 1;
        if (same) {
          for (let j = 0; j < dv; j++) {
            if (memo[m0 + j] !== cb[o0 + j] || memo[m0 + dv + j] !== zb[o0 + j]) { same = false; break; }
          }
        }
        if (same) continue; // normed[o0 ..) still holds this head's output
        gatedRmsNorm(ctx, core[t], o0, toks[t].z, o0, dv, w.norm, cfg.rmsNormEps, normed, o0);
        for (let j = 0; j < dv; j++) { memo[m0 + j] = cb[o0 + j]; memo[m0 + dv + j] = zb[o0 + j]; }
        buf.normMemoValid[h] = 1;
      }
    } else {
      for (let h = 0; h < hv; h++) {
        gatedRmsNorm(ctx, core[t], h * dv, toks[t].z, h * dv, dv, w.norm, cfg.rmsNormEps, normed, h * dv);
      }
    }
    t0 = phaseEnd('gdn.gatedNorm', t0);
    // out_proj through its incremental memo where it applies (as the tracked step's), so that the
    // first tracked step after a prefill reuses it; a copy, as the memo's output is rewritten later
    const os = path === 'sparse' && ctx.order.kind === 'sequential'
      ? deltaLinear(ctx, w.outProj, normed, 0, null, 0, stats) : null;
    if (os !== null) {
      const o = buf ? buf.out : new Float32Array(w.outProj.rows);
      o.set(os.y);
      out.push(o);
    } else out.push(linear(ctx, w.outProj, normed, path, { stats, out: buf?.out }));
    t0 = phaseEnd('gdn.outProj', t0);
  }
  return { out, states };
}

/**
 * What the last tracked decode step of a layer left behind (gdnDecodeTracked). Invariants between
 * tracked steps of one cache:
 *  - a conv channel not active (CH_ACTIVE) is settled: its K state taps are bit-identical and `conved[c]`
 *    (the layer buffer) is the conv + SiLU of that state;
 *  - buf.q / buf.k hold the l2-normalised queries / keys of buf.conved, buf.beta / buf.g the gates
 *    of the last step, buf.core each value head's last output, buf.normed its gated norm with
 *    the last z, and `headModified[h]` says whether the last step may have changed S of head h.
 */
export interface GdnTrack {
  weights: GdnWeights;
  active: Int32Array;
  nActive: number;
  /**
   * One record per conv channel c, at 4c … 4c+3, so a step reads one cache line per channel
   * (these were three arrays and the single-tap weights a fourth): `chan[4c]` lazySince (below),
   * `chan[4c+1]` flags (CH_ACTIVE: in `active`; CH_LISTED: in lazyList), `chanF[4c+2]` the
   * channel's single-tap weight (singleTapOf; NaN when it is not single-tap), `chan[4c+3]` the bit
   * pattern of the channel's newest state tap (only the tracked step writes the conv state while a
   * track lives). `chanF` is `chan` as floats.
   */
  chan: Int32Array;
  chanF: Float32Array;
  /** Per key head: its q / k inputs (conved) changed this step. Per value head: v changed. */
  qkDirty: Uint8Array;
  vDirty: Uint8Array;
  /** Per value head: S may have changed in the last step; core output changed this step. */
  headModified: Uint8Array;
  coreChanged: Uint8Array;
  /** Scratch: a value head's previous output; normed entries that changed this step. */
  oldCore: Float32Array;
  normedChanged: Int32Array;
  /** Tracked steps completed on this track (the conv step index of the next one). */
  step: number;
  /**
   * lazySince (in `chan`), per conv channel: −1, or the step at which the channel went *lazy*: its
   * output is fixed while its input stays, and its state lags behind by the shifts of that input
   * since (`catchUpChannel`, `materializeLazyConv`). The lazy channels, lazyList[0..nLazy) (may
   * hold channels that have since caught up: lazySince tells).
   */
  lazyList: Int32Array;
  nLazy: number;
  /** The value heads' kv from their last step (recurrentStepSparse's memo). */
  kvMemo: KvMemo;
  /** The version of the stacked input projections (delta.ts) that β and g were last computed from. */
  projVer: number;
  /**
   * When the last step's out_proj ran through linear() into buf.out (its delta form did not apply):
   * the matrix storage it used; null otherwise.
   */
  outLinearCsr: CsrMatrix | undefined | null;
  outLinearDense: Float32Array | undefined | null;
  /**
   * The source of buf.out while it holds linear()'s output (the delta form did not apply): its
   * version moves (full) when linear() recomputes and stays when the output is kept, so the
   * residual add after the layer recomputes nothing for it then.
   */
  linearOut: { version: number; full: boolean; rows: Int32Array; nRows: number };
  /** Bit views of the stacked projections' output, of the conv state and of oldCore (remade when their arrays change). */
  projBits: Uint32Array;
  convBits: Uint32Array;
  oldCoreBits: Uint32Array;
}

/** GdnTrack.chan flags. */
const CH_ACTIVE = 1;
const CH_LISTED = 2;

/** A new track; its channel records are written by the first step (freshConvStep). */
function newGdnTrack(w: GdnWeights, d: GdnDims): GdnTrack {
  const oldCore = new Float32Array(d.dv);
  const chan = new Int32Array(4 * d.convDim);
  const chanF = new Float32Array(chan.buffer);
  return {
    chan, chanF,
    projBits: new Uint32Array(0), convBits: new Uint32Array(0), oldCoreBits: new Uint32Array(oldCore.buffer),
    weights: w, active: new Int32Array(d.convDim), nActive: 0,
    qkDirty: new Uint8Array(d.hk), vDirty: new Uint8Array(d.hv), headModified: new Uint8Array(d.hv).fill(1),
    coreChanged: new Uint8Array(d.hv), oldCore, normedChanged: new Int32Array(d.valueDim),
    step: 0, lazyList: new Int32Array(d.convDim), nLazy: 0, kvMemo: newKvMemo(d.hv, d.dv), projVer: -1,
    outLinearCsr: null, outLinearDense: null, linearOut: { version: 0, full: true, rows: new Int32Array(0), nRows: 0 },
  };
}

/**
 * The first tracked step's conv: convStepF32's step (the same operations, so the same state and
 * output) fused with writing each channel's record (GdnTrack.chan: not lazy, the single-tap
 * weight, the newest tap's bits, CH_ACTIVE when its taps are not all equal) and listing the
 * active channels in `active`, in one pass, over channels list[0..n) (null: every channel
 * 0 … n−1). A cold channel (convStepF32) keeps its all-+0 taps: settled, newest bits 0. Returns
 * the number of active channels.
 */
function freshConvStep(
  list: Int32Array | null, n: number, K: number, cw: Float32Array, conv: Float32Array, mixed: Float32Array,
  conved: Float32Array, finite: Uint8Array, zeroOut: Float32Array, singleW: Float32Array, chan: Int32Array,
  active: Int32Array,
): number {
  const mixedBits = new Uint32Array(mixed.buffer, mixed.byteOffset, mixed.length);
  const convBits = new Uint32Array(conv.buffer, conv.byteOffset, conv.length);
  const chanF = new Float32Array(chan.buffer, chan.byteOffset, chan.length);
  let nActive = 0;
  for (let i = 0; i < n; i++) {
    const c = list === null ? i : list[i];
    const base = c * K;
    chan[4 * c] = -1;
    chanF[4 * c + 2] = singleW[c];
    const xb = mixedBits[c];
    if (xb === 0 && finite[c] === 1) {
      let cold = true;
      for (let j = 0; j < K; j++) if (convBits[base + j] !== 0) { cold = false; break; }
      if (cold) { conved[c] = zeroOut[c]; chan[4 * c + 1] = 0; chan[4 * c + 3] = 0; continue; }
    }
    // float copies, as convStepF32 makes them
    for (let j = 0; j < K - 1; j++) conv[base + j] = conv[base + j + 1];
    conv[base + K - 1] = mixed[c];
    let y = -0;
    for (let j = 0; j < K; j++) y = f32(y + f32(cw[base + j] * conv[base + j]));
    conved[c] = silu32(y, 'mul');
    const nb = convBits[base + K - 1];
    chan[4 * c + 3] = nb;
    let settled = true;
    for (let j = 0; j < K - 1; j++) if (convBits[base + j] !== nb) { settled = false; break; }
    if (settled) chan[4 * c + 1] = 0;
    else { chan[4 * c + 1] = CH_ACTIVE; active[nActive++] = c; }
  }
  return nActive;
}

/**
 * Per stacked in_proj and conv weight: the channels a conv step can find not cold, and the
 * records (GdnTrack.chan) of the others. A channel whose qkv row in the stack is empty gets
 * mixed = +0 from every step (an empty row is +0, matmul.ts), so a state that started all +0
 * stays all +0 (GdnCache.convInputs); with finite taps the channel is then cold at every step
 * (convStepF32): it keeps its state, its output is convZeroOf's, and its record is not lazy, not
 * active, its single-tap weight, newest bits 0 (`template`, every channel's). `list` holds the
 * others, ascending: a non-empty qkv row or a non-finite tap.
 */
interface ConvLive { cw: Float32Array; list: Int32Array; template: Int32Array; singleW: Float32Array }
const convLiveCache = new WeakMap<Matrix, ConvLive>();
function convLiveOf(stack: Matrix, cw: Float32Array, convDim: number, K: number, finite: Uint8Array): ConvLive {
  let cl = convLiveCache.get(stack);
  if (cl === undefined || cl.cw !== cw) {
    const rowPtr = (stack.csr as CsrMatrix).rowPtr;
    const singleW = singleTapOf(cw, convDim, K);
    const template = new Int32Array(4 * convDim);
    const templateF = new Float32Array(template.buffer);
    const live: number[] = [];
    for (let c = 0; c < convDim; c++) {
      template[4 * c] = -1;
      templateF[4 * c + 2] = singleW[c];
      if (rowPtr[c + 1] > rowPtr[c] || finite[c] !== 1) live.push(c);
    }
    cl = { cw, list: Int32Array.from(live), template, singleW };
    convLiveCache.set(stack, cl);
  }
  return cl;
}

/**
 * Per conv weight tensor, per channel: the newest tap's weight for a channel whose taps 0…K−2
 * are ±0 (only the newest tap weighs), NaN for any other channel (or a NaN newest weight, which
 * the fold handles). Dense, so a step reads one float per channel instead of its K weights.
 */
const singleTapCache = new WeakMap<Float32Array, Float32Array>();
function singleTapOf(cw: Float32Array, convDim: number, K: number): Float32Array {
  let st = singleTapCache.get(cw);
  if (st === undefined) {
    st = new Float32Array(convDim);
    for (let c = 0; c < convDim; c++) {
      let one = true;
      for (let j = 0; j < K - 1; j++) if (cw[c * K + j] !== 0) { one = false; break; }
      st[c] = one ? cw[c * K + K - 1]! : NaN;
    }
    singleTapCache.set(cw, st);
  }
  return st;
}

/**
 * Brings a lazy channel's state up to the end of the last completed step: the shifts of its
 * (unchanged) last input that were skipped, at most K − 1 (then every tap holds it).
 */
function catchUpChannel(t: GdnTrack, conv: Float32Array, c: number, K: number): void {
  const since = t.chan[4 * c];
  if (since < 0) return;
  t.chan[4 * c] = -1;
  replayShifts(conv, c * K, K, skippedShifts(t, since, K));
}

/** The shifts a channel that went lazy at step `since` has skipped by the end of the last completed step. */
function skippedShifts(t: GdnTrack, since: number, K: number): number {
  return Math.min(t.step - 1 - since, K - 1);
}

/**
 * n shifts of channel `base`'s state, each bringing in its newest tap again, in one pass: after n
 * shifts tap j holds old tap j + n, or the newest tap once j + n > K − 1.
 */
function replayShifts(conv: Float32Array, base: number, K: number, n: number): void {
  if (n === 0) return;
  const x = conv[base + K - 1]!;
  for (let j = 0; j < K - 1; j++) conv[base + j] = j + n < K ? conv[base + j + n]! : x;
}

/**
 * The conv state as the plain step would hold it: a copy of cache.conv with every lazy channel's
 * skipped shifts applied (for tests; the cache is not touched).
 */
export function gdnConvSnapshot(cache: GdnCache, K: number): Float32Array {
  const out = cache.conv.slice();
  const t = cache.track;
  if (t === undefined) return out;
  for (let i = 0; i < t.nLazy; i++) {
    const c = t.lazyList[i]!;
    const since = t.chan[4 * c];
    if (since >= 0) replayShifts(out, c * K, K, skippedShifts(t, since, K));
  }
  return out;
}

/**
 * Tells the tracked decode step that value head h's S was overwritten from outside (setGdnState):
 * its next step runs in full instead of repeating the previous one.
 */
export function noteGdnStateWritten(cache: GdnCache, h: number): void {
  if (cache.track) cache.track.headModified[h] = 1;
}

/** Catches up every lazy channel and ends their laziness (the caller then drops the track). */
export function materializeLazyConv(cache: GdnCache, K: number): void {
  const t = cache.track;
  if (t === undefined) return;
  for (let i = 0; i < t.nLazy; i++) {
    const c = t.lazyList[i]!;
    catchUpChannel(t, cache.conv, c, K);
    t.chan[4 * c + 1] &= ~CH_LISTED;
  }
  t.nLazy = 0;
}

/** True when taps 0…K−2 of the channel at `base` are finite. */
function olderTapsFinite(conv: Float32Array, base: number, K: number): boolean {
  for (let j = 0; j < K - 1; j++) { const v = conv[base + j]; if (v - v !== 0) return false; }
  return true;
}

/**
 * True when the channel at `base` (its state just shifted in its newest input x, its output fold
 * y finite) gives y again at each of the next K − 1 steps whose input is x: the fold −0 + Σ_j
 * fl(w_j·tap_j), in ascending j as convStepF32 computes it, over the window shifted by s = 1 … K−1
 * (taps j + s of the state, then x) equals y bit for bit. After K − 1 shifts every tap is x and
 * the window stops changing, so y then holds for as long as the input stays. This covers, e.g., a
 * single-tap channel whose input fell to 0 (y = ±0), whose zero's sign depends on the older taps.
 */
function steadyAhead(cw: Float32Array, conv: Float32Array, base: number, K: number, y: number): boolean {
  const x = conv[base + K - 1]!;
  for (let s = 1; s < K; s++) {
    let v = -0;
    for (let j = 0; j < K; j++) v = f32(v + f32(cw[base + j]! * (j + s < K ? conv[base + j + s]! : x)));
    if (!Object.is(v, y)) return false; // finite float32 values: Object.is is bit equality
  }
  return true;
}

/** True when the K taps of channel `base` are bit-identical. */
function tapsSettled(convBits: Uint32Array, base: number, K: number): boolean {
  const b = convBits[base];
  for (let j = 1; j < K; j++) if (convBits[base + j] !== b) return false;
  return true;
}

const inProjLists = new WeakMap<GdnWeights, Matrix[]>();
/** [in_proj_qkv, in_proj_z, in_proj_b, in_proj_a] of w, as one array kept per layer (a step allocates nothing). */
function inProjParts(w: GdnWeights): Matrix[] {
  let p = inProjLists.get(w);
  if (p === undefined || p[0] !== w.inProjQkv || p[1] !== w.inProjZ || p[2] !== w.inProjB || p[3] !== w.inProjA) {
    p = [w.inProjQkv, w.inProjZ, w.inProjB, w.inProjA];
    inProjLists.set(w, p);
  }
  return p;
}

/**
 * One decode step of the GDN mixer that recomputes only what changed since the previous step
 * (sparse path, sequential order, f32 profile, silu 'mul'; bit-identical to gdnForwardFull, by
 * purity: every recomputed quantity is a pure function of inputs that are compared bit for bit):
 *  - the projections through delta.ts (rows of changed input columns);
 *  - conv: a channel whose taps are all equal (bits) and whose new input equals them keeps its
 *    state and output; the others shift and recompute as convStepF32 does, and become settled
 *    once their taps are equal;
 *  - q / k of a key head are re-normalised only when one of its conv outputs changed;
 *  - a value head's recurrent step runs only when its q, k, v, β or g changed, or the previous step
 *    may have changed S (a write), or S was handed out: otherwise the step would repeat the
 *    previous one on the same S — same output, S unchanged;
 *  - the gated norm runs for heads whose output or z changed; out_proj through delta.ts with the
 *    changed normed entries as candidates.
 * The first step on a cache (or after any untracked call) runs every part in full. Returns the
 * output (buf.out), or null when a projection's delta form does not apply (nothing changed yet).
 */
function gdnDecodeTracked(
  ctx: ExecNumericContext, cfg: ModelConfig, w: GdnWeights, cache: GdnCache, x: Float32Array, d: GdnDims,
  buf: GdnBuffers, stats?: MatmulStats, inShare?: DeltaShare,
): { out: Float32Array; source: OutputSource | null } | null {
  let t0 = phaseStart();
  // the four projections read the same x: one stacked matrix [qkv; z; b; a] (stack-rows.ts)
  const stack = rowStackOf(inProjParts(w));
  if (stack === null) return null;
  const ps = deltaLinear(ctx, stack.m, x, 0, null, 0, stats, inShare ?? { stamp: nextInputStamp() });
  if (ps === null) return null;
  noteConvInputs(cache, stack.m);
  const off = stack.offsets;
  const zOff = off[1], bOff = off[2], aOff = off[3];
  t0 = phaseEnd('gdn.proj', t0);
  phaseEnd('gdn.tracked', phaseStart()); // marks (with profiling on) that a tracked step ran
  const { K, convDim, hk, hv, dk, dv, r, keyDim } = d;
  const fresh = cache.track === undefined || cache.track.weights !== w;
  if (fresh) materializeLazyConv(cache, K);
  const t = fresh ? newGdnTrack(w, d) : cache.track as GdnTrack;
  // one output vector: qkv (mixed) at 0, z at zOff, b at bOff, a at aOff
  const y = ps.y;
  const mixed = y;
  const conv = cache.conv;
  const conved = buf.conved;
  const conBits = buf.convedBits;
  const cw = w.conv1d;
  if (t.projBits.buffer !== y.buffer || t.projBits.byteOffset !== y.byteOffset) t.projBits = new Uint32Array(y.buffer, y.byteOffset, y.length);
  if (t.convBits.buffer !== conv.buffer || t.convBits.byteOffset !== conv.byteOffset) t.convBits = new Uint32Array(conv.buffer, conv.byteOffset, conv.length);
  const convBits = t.convBits;
  if (fresh) {
    const cz = convZeroOf(w, convDim, K);
    const live = convLiveOf(stack.m, cw, convDim, K, cz.finite);
    if (cache.convInputs === stack.m) {
      // the channels off the live list are cold (ConvLive): their records and outputs are copies
      t.chan.set(live.template);
      conved.set(cz.out);
      t.nActive = freshConvStep(
        live.list, live.list.length, K, cw, conv, mixed, conved, cz.finite, cz.out, live.singleW, t.chan, t.active,
      );
    } else {
      t.nActive = freshConvStep(null, convDim, K, cw, conv, mixed, conved, cz.finite, cz.out, live.singleW, t.chan, t.active);
    }
    t.qkDirty.fill(1);
    t.vDirty.fill(1);
    t.step = 1;
    cache.track = t;
  } else {
    t.qkDirty.fill(0);
    t.vDirty.fill(0);
    const mixedBits = t.projBits;
    const { active, chan, chanF } = t;
    let n = t.nActive;
    // settled channels whose input differs from their (equal) taps join the active list
    if (ps.full) {
      for (let c = 0; c < convDim; c++) if ((chan[4 * c + 1] & CH_ACTIVE) === 0 && (mixedBits[c] | 0) !== chan[4 * c + 3]) { chan[4 * c + 1] |= CH_ACTIVE; active[n++] = c; }
    } else {
      for (let i = 0; i < ps.nRows; i++) {
        const c = ps.rows[i];
        if (c < zOff && (chan[4 * c + 1] & CH_ACTIVE) === 0 && (mixedBits[c] | 0) !== chan[4 * c + 3]) { chan[4 * c + 1] |= CH_ACTIVE; active[n++] = c; }
      }
    }
    const lazyList = t.lazyList;
    let m = 0;
    for (let i = 0; i < n; i++) {
      const c = active[i];
      const base = c * K;
      // the shifts a lazy channel skipped (catchUpChannel) and this step's, in one pass: one more
      // replayed shift with the new input written over the newest tap is this step's shift
      const since = chan[4 * c];
      if (since >= 0) chan[4 * c] = -1;
      replayShifts(conv, base, K, since >= 0 ? skippedShifts(t, since, K) + 1 : 1);
      conv[base + K - 1] = mixed[c];
      chan[4 * c + 3] = mixedBits[c];
      const sw = chanF[4 * c + 2];
      const single = sw === sw;
      let y = single ? f32(sw * conv[base + K - 1]) : 0;
      if (y === 0 || !olderTapsFinite(conv, base, K)) {
        // the fold itself; a single-tap channel with a product p ≠ 0 and finite older taps folds
        // −0 + (±0)… + p = p (the older taps weigh ±0), which the line above computed
        y = -0;
        for (let j = 0; j < K; j++) y = f32(y + f32(cw[base + j] * conv[base + j]));
      }
      const before = conBits[c];
      conved[c] = silu32(y, 'mul');
      if (conBits[c] !== before) {
        if (c < 2 * keyDim) t.qkDirty[Math.floor((c < keyDim ? c : c - keyDim) / dk)] = 1;
        else t.vDirty[Math.floor((c - 2 * keyDim) / dv)] = 1;
      }
      if (tapsSettled(convBits, base, K)) chan[4 * c + 1] &= ~CH_ACTIVE;
      else if ((single && y !== 0 && y - y === 0) || (y - y === 0 && steadyAhead(cw, conv, base, K, y))) {
        // Lazy: while the input stays, every later step's fold is the same y. A single-tap channel
        // with y ≠ 0: its older taps weigh ±0 and are finite (else y would be NaN), so the fold is
        // −0 + (±0)… + p = p whatever they hold. Any other channel: the K − 1 shifted windows were
        // folded ahead (steadyAhead). The skipped shifts are replayed when the channel next runs
        // (catchUpChannel) or before anything else reads the state (materializeLazyConv).
        chan[4 * c] = t.step;
        if ((chan[4 * c + 1] & CH_LISTED) === 0) lazyList[t.nLazy++] = c;
        chan[4 * c + 1] = CH_LISTED; // (no longer active)
      } else active[m++] = c;
    }
    t.nActive = m;
    t.step++;
    if (stats) stats.convChannels += n;
  }
  t0 = phaseEnd('gdn.conv', t0);
  const scale = d.qScale;
  const { q, k } = buf;
  for (let h = 0; h < hk; h++) if (t.qkDirty[h] === 1) normalizeQk(ctx, conved, q, k, h, dk, keyDim, scale, true);
  const vOff = 2 * keyDim; // v in conved
  const { beta, g } = buf;
  const gateDirty = t.vDirty; // β / g changes are folded into the per-value-head dirty flags
  // β_h and g_h are pure functions of b_h and a_h: when the projections advanced by one version
  // since β and g were computed, only the heads of their recomputed rows can change
  const gateRows = !fresh && !ps.full && t.projVer === ps.version - 1;
  const nGate = gateRows ? ps.nRows : hv;
  for (let i = 0; i < nGate; i++) {
    let h = i;
    if (gateRows) {
      const r = ps.rows[i];
      if (r < bOff) continue;
      h = r < aOff ? r - bOff : r - aOff;
    }
    const nb = sigmoid32(y[bOff + h]);
    const ng = f32(-exp32(w.aLog[h]) * softplus32(f32(y[aOff + h] + w.dtBias[h])));
    if (fresh || !Object.is(nb, beta[h]) || !Object.is(ng, g[h]) || nb !== nb || ng !== ng) gateDirty[h] = 1;
    beta[h] = nb;
    g[h] = ng;
  }
  t.projVer = ps.version;
  t0 = phaseEnd('gdn.qkGates', t0);
  const core = buf.core;
  const scratch = buf.step;
  const { oldCore, coreChanged, headModified } = t;
  for (let h = 0; h < hv; h++) {
    const kh = Math.floor(h / r);
    coreChanged[h] = 0;
    if (!fresh && t.vDirty[h] === 0 && t.qkDirty[kh] === 0 && headModified[h] === 0 && cache.exposed[h] === 0) continue;
    const S = cache.S[h];
    const rows = cache.rowNonZero[h];
    const kind = cache.exposed[h] ? classifyState(S, rows) : cache.kind[h];
    const o0 = h * dv;
    // same q, k and S as this head's previous step (whose output core still holds): kv can be reused
    const same = !fresh && t.qkDirty[kh] === 0 && headModified[h] === 0 && cache.exposed[h] === 0;
    if (!same) for (let j = 0; j < dv; j++) oldCore[j] = core[o0 + j];
    cache.kind[h] = recurrentStepSparse(dk, dv, S, kind, rows, q, kh * dk, k, kh * dk, conved, vOff + h * dv, g[h], beta[h], core, o0, scratch, t.kvMemo, h, same);
    headModified[h] = scratch.modified[0];
    // the output is a function of q and S: with both as before it is as before; a step that wrote S
    // counts as a change (the gated norm below compares what it recomputes)
    if (same) coreChanged[h] = scratch.modified[0];
    else for (let j = 0; j < dv; j++) if (!Object.is(core[o0 + j], oldCore[j])) { coreChanged[h] = 1; break; }
  }
  t0 = phaseEnd('gdn.recurrent', t0);
  // gated norm of the heads whose output or z changed
  if (!fresh && !ps.full) {
    for (let i = 0; i < ps.nRows; i++) {
      const r = ps.rows[i];
      if (r >= zOff && r < bOff) coreChanged[Math.floor((r - zOff) / dv)] = 1;
    }
  }
  const normed = buf.normed;
  const nb = buf.normedBits;
  const changedList = t.normedChanged;
  let nc = 0;
  for (let h = 0; h < hv; h++) {
    if (!fresh && !ps.full && coreChanged[h] === 0) continue;
    const o0 = h * dv;
    for (let j = 0; j < dv; j++) oldCore[j] = normed[o0 + j];
    gatedRmsNorm(ctx, core, o0, y, zOff + o0, dv, w.norm, cfg.rmsNormEps, normed, o0);
    const ob = t.oldCoreBits;
    for (let j = 0; j < dv; j++) if (nb[o0 + j] !== ob[j]) changedList[nc++] = o0 + j;
  }
  buf.normMemoValid.fill(0); // the untracked path's memo no longer describes `normed`
  t0 = phaseEnd('gdn.gatedNorm', t0);
  // Where the delta form does not apply, buf.out keeps linear()'s output of the last step: a pure
  // function of normed's bits and the matrix, so with no normed entry changed (and the same
  // storage) it is this step's output too — and the delta form, a pure function of the same bits,
  // would fail again, so it is not retried (its check scans every input: the chip's idle RAM
  // layers, whose gated norm outputs all −0, failed it every token).
  const outProj = w.outProj;
  const kept = !fresh && !ps.full && nc === 0 && t.outLinearCsr === outProj.csr && t.outLinearDense === outProj.dense;
  const os = kept ? null : deltaLinear(ctx, outProj, normed, 0, fresh || ps.full ? null : changedList, nc, stats);
  // the incremental output is handed out as it is (its memo is next written by this layer's next step)
  if (os === null) {
    if (!kept) {
      linear(ctx, outProj, normed, 'sparse', { stats, out: buf.out });
      t.outLinearCsr = outProj.csr;
      t.outLinearDense = outProj.dense;
      t.linearOut.version++;
    } else if (stats) { stats.sparse++; stats.outProjKept++; }
  } else t.outLinearCsr = t.outLinearDense = null;
  phaseEnd('gdn.outProj', t0);
  const res = buf.tracked;
  res.out = os !== null ? os.y : buf.out;
  res.source = os !== null ? os : t.linearOut;
  return res;
}
