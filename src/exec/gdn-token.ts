/**
 * Per-token preparation of the GDN mixer (steps 1–4 of gdn.ts's header), shared by the reference
 * forward (gdn.ts) and the tracked decode step (gdn-tracked.ts): the four input projections, the
 * causal depthwise conv1d step over the conv state + SiLU, the gates β = sigmoid(b) and
 * g = −exp(A_log)·softplus(a + dt_bias), and q, k L2-normalised (eps 1e−6) with q × fl(1/√dk).
 *
 * The shortcuts are bit-identical by construction, each argued at its function: a *cold* conv
 * channel (input and state all +0, finite taps) keeps its all-+0 state and outputs convZeroOf's
 * precomputed value; l2normSeq copies zero entries instead of multiplying them; on the sparse path
 * in sequential order the projections run as one stacked incremental matmul (projectToken; equal
 * to linear()).
 */
import type { GdnWeights, Matrix } from '../model/weights.ts';
import type { GdnDims } from '../model/naming.ts';
import { linear, type MatmulPath, type MatmulStats } from './matmul.ts';
import type { ExecNumericContext } from './numeric.ts';
import { exp32, roundBf16, rsqrt32, sigmoid32, silu32, softplus32 } from './numeric.ts';
import { l2norm } from './norms.ts';
import { deltaLinear, nextInputStamp } from './delta.ts';
import { phaseEnd, phaseStart } from './profile.ts';
import { rowStackOf } from './stack-rows.ts';
import type { ConvZero, ExecPlans } from './plans.ts';
import type { GdnBuffers, GdnCache } from './gdn-cache.ts';

const f32 = Math.fround;

/** Per-token quantities after projections, conv, gates and q/k normalisation. */
export interface GdnToken {
  /** [Hk·dk] l2-normalised and scaled queries, [Hk·dk] l2-normalised keys. */
  q: Float32Array; k: Float32Array;
  /** [Hv·dv] values (after conv + SiLU), [Hv·dv] gate input z. */
  v: Float32Array; z: Float32Array;
  beta: Float32Array; g: Float32Array;
}

export function prepareToken(
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
  if (sequential && ctx.profile === 'f32') {
    const cz = convZeroOf(ctx.plans, w, convDim, K);
    shifted = convStepF32(convDim, K, cw, conv, mixed, conved, cz.finite, cz.out, ctx.siluForm);
  } else {
    const cz = sequential ? convZeroOf(ctx.plans, w, convDim, K) : null;
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
      conved[c] = convOutput(y, ctx.siluForm, ctx.profile === 'bf16');
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
    const stack = rowStackOf(ctx.plans, inProjParts(ctx.plans, w));
    const ps = stack === null ? null : deltaLinear(ctx, stack.m, x, 0, null, 0, stats, { stamp: nextInputStamp() }, 'gdn.inProj');
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
export function noteConvInputs(cache: GdnCache, stack: Matrix | null): void {
  if (cache.convInputs === undefined) cache.convInputs = stack;
  else if (cache.convInputs !== stack) cache.convInputs = null;
}

/**
 * The conv + SiLU of prepareToken for the f32 profile, sequential order, in the context's silu
 * `form` (the same float operations as the generic loop, act being the identity there: silu32(y,
 * form) of the same y), in a small function: channels whose input and state are all +0 (bit
 * patterns) with finite taps keep their all-+0 state and output zeroOut[c] (convZeroOf, which holds
 * for both forms: silu(±0) = ±0 in each); the others shift, sum the taps from −0 in order and
 * apply silu. Returns how many channels shifted (were not cold).
 */
export function convStepF32(
  convDim: number, K: number, cw: Float32Array, conv: Float32Array, mixed: Float32Array, conved: Float32Array,
  finite: Uint8Array, zeroOut: Float32Array, form: 'mul' | 'div',
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
    conved[c] = silu32(y, form);
  }
  return shifted;
}

/**
 * A conv channel's output from its fold y: silu32(y, form) in the f32 profile, bf(silu32(bf(y),
 * form)) in bf16 (HF: conv1d in bf16, then SiLU in bf16), for prepareToken's loops and the tracked
 * step's (gdn-tracked.ts) alike. A pure function of y's bits, so a channel whose fold keeps its
 * bits keeps its output in either profile.
 */
export function convOutput(y: number, form: 'mul' | 'div', bf16: boolean): number {
  return bf16 ? roundBf16(silu32(roundBf16(y), form)) : silu32(y, form);
}

/**
 * q and k of key head h from the conv outputs: q = fl(l2norm(q_conv)·scale), k = l2norm(k_conv)
 * (HF order). In sequential order each goes through l2normSeq (its zeros copied, not multiplied);
 * a shuffled sum counts its calls, so the plain l2norm always runs there.
 */
export function normalizeQk(
  ctx: ExecNumericContext, conved: Float32Array, q: Float32Array, k: Float32Array, h: number, dk: number,
  keyDim: number, scale: number, sequential: boolean,
): void {
  if (sequential) {
    normalizeQSeq(conved, q, h, dk, scale);
    normalizeKSeq(conved, k, h, dk, keyDim);
    return;
  }
  l2norm(ctx, conved, h * dk, dk, q, h * dk);
  for (let i = 0; i < dk; i++) q[h * dk + i] = f32(q[h * dk + i] * scale);
  l2norm(ctx, conved, keyDim + h * dk, dk, k, h * dk);
}

/** normalizeQk's sequential q of key head h alone (a function of its q conv outputs only). */
export function normalizeQSeq(conved: Float32Array, q: Float32Array, h: number, dk: number, scale: number): void {
  l2normSeq(conved, h * dk, dk, q, h * dk, scale);
}

/** normalizeQk's sequential k of key head h alone (a function of its k conv outputs only). */
export function normalizeKSeq(conved: Float32Array, k: Float32Array, h: number, dk: number, keyDim: number): void {
  l2normSeq(conved, keyDim + h * dk, dk, k, h * dk, 1);
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
 * every tap has its sign bit set (else +0), and act(±0) = ±0, silu(±0) = ±0 in both forms
 * (±0·sigmoid(±0) = ±0·0.5, ±0/fl(1 + exp(∓0)) = ±0/2), so the output is y whatever the
 * context's form. Cached per weight array (plans.convZero).
 */
export function convZeroOf(plans: ExecPlans, w: GdnWeights, convDim: number, K: number): ConvZero {
  const convZeroCache = plans.convZero;
  let z = convZeroCache.get(w.conv1d);
  if (z === undefined) {
    const finite = new Uint8Array(convDim);
    const out = new Float32Array(convDim);
    fillConvZero(w.conv1d, convDim, K, finite, out);
    z = { finite, out };
    convZeroCache.set(w.conv1d, z);
  }
  return z;
}

/**
 * convZeroOf's channels, from the weights' bits (a fresh process runs this over every channel of
 * every GDN layer in its first forward, before the JIT has compiled it): with finite taps each
 * fl(w_j·0) is ±0 with w_j's sign, and the fold from −0 stays −0 only while every term is −0; a
 * non-finite tap gives NaN (the fold itself is kept for those channels). The loop is the whole
 * function: the JIT compiles it while the first call runs it, and an operation after it, never
 * run before, would throw that code away.
 */
function fillConvZero(cw: Float32Array, convDim: number, K: number, finite: Uint8Array, out: Float32Array): void {
  const bits = new Uint32Array(cw.buffer, cw.byteOffset, cw.length);
  for (let c = 0; c < convDim; c++) {
    let exps = 0;
    let signs = 1;
    for (let j = c * K; j < c * K + K; j++) {
      const b = bits[j];
      exps |= +((b & 0x7f800000) === 0x7f800000);
      signs &= b >>> 31;
    }
    if (exps === 0) {
      finite[c] = 1;
      out[c] = signs === 1 ? -0 : 0;
      continue;
    }
    let y = -0;
    for (let j = 0; j < K; j++) y = f32(y + f32(cw[c * K + j] * 0));
    out[c] = y;
  }
}

/** [in_proj_qkv, in_proj_z, in_proj_b, in_proj_a] of w, as one array kept per layer (plans.inProjLists: a step allocates nothing). */
export function inProjParts(plans: ExecPlans, w: GdnWeights): Matrix[] {
  const inProjLists = plans.inProjLists;
  let p = inProjLists.get(w);
  if (p === undefined || p[0] !== w.inProjQkv || p[1] !== w.inProjZ || p[2] !== w.inProjB || p[3] !== w.inProjA) {
    p = [w.inProjQkv, w.inProjZ, w.inProjB, w.inProjA];
    inProjLists.set(w, p);
  }
  return p;
}
