/**
 * The tracked decode step of the GDN mixer (gdnDecodeTracked): one decode step that recomputes
 * only what changed since the previous one, bit-identical to gdn.ts's full step by purity — every
 * recomputed quantity is a pure function of inputs that are compared bit for bit (see
 * gdnDecodeTracked for each part). It applies to single-token decode on the sparse path in
 * sequential order, in either profile and silu form (conv outputs are gdn-token.ts convOutput(y,
 * ctx.siluForm, bf16): a pure function of y for the track's form and profile, which a track records
 * and keeps); gdn.ts gdnForward calls it and runs the full step when it returns null.
 *
 * What a step leaves for the next is the cache's GdnTrack (declared in gdn-cache.ts). Its conv
 * channels are active, settled (K equal taps: the output cannot change while the input equals
 * them) or *lazy*: a channel whose output stays the same while its input does, whose state then
 * lags behind by the skipped shifts of that input (single-tap channels; channels that fold ahead,
 * steadyAhead). Anything that reads the conv state other than the tracked step must first
 * catch the lazy channels up (materializeLazyConv, as gdnForward does before a full step) or read
 * gdnConvSnapshot; a state written from outside must be reported (noteGdnStateWritten).
 */
import type { ModelConfig } from '../model/config.ts';
import type { CsrMatrix, GdnWeights, Matrix } from '../model/weights.ts';
import type { GdnDims } from '../model/naming.ts';
import { linear, type MatmulStats } from './matmul.ts';
import type { ExecNumericContext } from './numeric.ts';
import { exp32, roundBf16, sigmoid32, softplus32 } from './numeric.ts';
import { f32BitsToBf16 } from '../safetensors/dtype.ts';
import { deltaLinear, newDeltaSite, nextInputStamp, type DeltaShare, type OutputSource } from './delta.ts';
import { phaseEnd, phaseStart } from './profile.ts';
import { newStackSite, rowStackAt } from './stack-rows.ts';
import type { ConvLive, DeltaLinearState, ExecPlans, SingleTaps } from './plans.ts';
import { absSum, BETA_ZERO_BOUND, beyondVBound, classifyState, newKvMemo, recurrentStepSparse, STATE_ANY } from './gdn-sparse-step.ts';
import { CH_ACTIVE, CH_LISTED, type ConvKernel, type GdnBuffers, type GdnCache, type GdnTrack } from './gdn-cache.ts';
import { CONV_CTL } from './wasm-layout.ts';
import { gatedNormHead, gatedNormWasm, O_MAY_MOVE, Z_MAY_MOVE } from './gdn-gated-norm.ts';
import { convOutput, convZeroOf, inProjParts, l2normSeq, noteConvInputs } from './gdn-token.ts';
import { aliasesOfTrack, convAliasOf, copyAliasOutputs, copyAliasWindows, followAliases, reducedStackOf } from './conv-alias.ts';

const f32 = Math.fround;



/** A new track; its channel records are written by the first step (freshConvStep). */
function newGdnTrack(w: GdnWeights, d: GdnDims, siluForm: 'mul' | 'div', bf16: boolean, buf: GdnBuffers): GdnTrack {
  // the conv kernels' arrays when the layer has them (cleared: what a new track's arrays hold)
  const kern = buf.convKernel;
  const chan = kern !== null ? kern.chan.fill(0) : new Int32Array(4 * d.convDim);
  const chanF = new Float32Array(chan.buffer, chan.byteOffset, chan.length);
  const nk = buf.normKernel; // (and the gated norm kernel's)
  return {
    chan, chanF, tapAt: new Uint8Array(0),
    projBits: new Uint32Array(0), convBits: new Uint32Array(0), projSrc: null, convSrc: null, normMoved: new Int32Array(d.dv),
    vBeyond: kern !== null ? kern.vBeyond.fill(0) : new Int32Array(d.hv), kAbs: new Float64Array(d.hk),
    weights: w, alias: null, siluForm, bf16, active: kern !== null ? kern.active.fill(0) : new Int32Array(d.convDim), nActive: 0,
    qDirty: kern !== null ? kern.qDirty.fill(0) : new Uint8Array(d.hk), kDirty: kern !== null ? kern.kDirty.fill(0) : new Uint8Array(d.hk),
    vDirty: kern !== null ? kern.vDirty.fill(0) : new Uint8Array(d.hv), headModified: new Uint8Array(d.hv).fill(1),
    writtenOutside: new Uint8Array(d.hv),
    coreChanged: nk !== null ? nk.coreChanged.fill(0) : new Uint8Array(d.hv), normedChanged: nk !== null ? nk.normedChanged.fill(0) : new Int32Array(d.valueDim),
    normIn: nk !== null ? nk.normIn.fill(0) : new Uint32Array(d.valueDim), normZ: nk !== null ? nk.normZ.fill(0) : new Uint32Array(d.valueDim),
    normAcc: nk !== null ? nk.normAcc.fill(0) : new Float32Array(d.hv), normR: nk !== null ? nk.normR.fill(0) : new Float32Array(d.hv),
    normKept: nk !== null ? nk.normKept.fill(0) : new Uint8Array(d.hv),
    step: 0, lazyList: kern !== null ? kern.lazyList.fill(0) : new Int32Array(d.convDim), nLazy: 0, kvMemo: newKvMemo(d.hv, d.dv, buf.memoKv), projVer: -1,
    // b's rows follow qkv's and z's in the stacked in_proj [qkv; z; b; a]
    bRows: Int32Array.from({ length: d.hv }, (_, h) => d.convDim + d.valueDim + h),
    outLinearCsr: null, outLinearDense: null, linearOut: { version: 0, full: true, rows: new Int32Array(0), nRows: 0 },
  };
}

/**
 * The first tracked step's conv: convStepF32's step in silu `form` (the same operations, so the
 * same state and output) fused with writing each channel's record (t.chan: the single-tap
 * weight, the newest tap's bits, CH_ACTIVE when its taps are not all equal) and listing the
 * active channels (t.active), in one pass, over channels list[0..n) (null: every
 * channel 0 … n−1). A cold channel (convStepF32) keeps its all-+0 taps: settled, newest bits 0. A
 * single-tap channel whose fold is finite and non-zero and whose taps from its weighed one on are
 * equal is not active but lazy at once, as trackedConvStep would make it at the next step (while
 * its input stays its fold is fl(w·x) whatever its older taps hold): lazy since this step (step
 * 0), listed in t.lazyList.
 * (A fresh cache's first tracked step had every such channel of every layer to visit again.)
 * Returns the active count; the lazy one is kept in lazyCount[0] (0 on entry).
 */
function freshConvStep(
  t: GdnTrack, list: Int32Array | null, n: number, K: number, cw: Float32Array, conv: Float32Array, mixed: Float32Array,
  conved: Float32Array, finite: Uint8Array, zeroOut: Float32Array, single: SingleTaps, form: 'mul' | 'div',
  lazyCount: Int32Array,
): number {
  const { chan, active, lazyList } = t;
  const singleW = single.w;
  const singleAt = single.at;
  const mixedBits = new Uint32Array(mixed.buffer, mixed.byteOffset, mixed.length);
  const convBits = new Uint32Array(conv.buffer, conv.byteOffset, conv.length);
  const chanF = new Float32Array(chan.buffer, chan.byteOffset, chan.length);
  let nActive = 0;
  let nLazy = 0;
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
    conved[c] = convOutput(y, form, t.bf16);
    const nb = convBits[base + K - 1];
    chan[4 * c + 3] = nb;
    let settled = true;
    for (let j = 0; j < K - 1; j++) if (convBits[base + j] !== nb) { settled = false; break; }
    const sw = singleW[c];
    if (settled) chan[4 * c + 1] = 0;
    else if (sw === sw && y !== 0 && y - y === 0 && tapsEqualFrom(convBits, base, K, singleAt[c])) {
      chan[4 * c] = 0;
      chan[4 * c + 1] = CH_LISTED;
      lazyList[nLazy++] = c;
      lazyCount[0] = nLazy;
    } else { chan[4 * c + 1] = CH_ACTIVE; active[nActive++] = c; }
  }
  // (the active count is returned and the lazy one kept in the loop, not stored after it: the JIT
  // compiles the loop while the first call runs it, and an operation after the loop, never run
  // before, threw that code away at every layer's first step)
  return nActive;
}

/** The ConvLive of a stacked in_proj and conv weight (plans.ts, which says what it holds; kept in plans.convLive). */
function convLiveOf(plans: ExecPlans, stack: Matrix, cw: Float32Array, convDim: number, K: number, finite: Uint8Array): ConvLive {
  const convLiveCache = plans.convLive;
  let cl = convLiveCache.get(stack);
  if (cl === undefined || cl.cw !== cw) {
    const rowPtr = (stack.csr as CsrMatrix).rowPtr;
    const single = singleTapOf(plans, cw, convDim, K);
    const template = new Int32Array(4 * convDim);
    const live = new Int32Array(convDim);
    const n = fillConvLive(rowPtr, finite, single.w, convDim, template, live);
    cl = { cw, list: live.slice(0, n), template, single };
    convLiveCache.set(stack, cl);
  }
  return cl;
}

/**
 * Per conv weight tensor, per channel: the weight of the one tap that weighs and which tap it is
 * (plans.ts SingleTaps: the newest for most channels, an older one for a channel that reads an
 * earlier position's input). Dense, so a step reads one float per channel instead of its K
 * weights. Kept in plans.singleTap.
 */
function singleTapOf(plans: ExecPlans, cw: Float32Array, convDim: number, K: number): SingleTaps {
  const singleTapCache = plans.singleTap;
  let st = singleTapCache.get(cw);
  if (st === undefined) {
    st = { w: new Float32Array(convDim), at: new Uint8Array(convDim) };
    fillSingleTaps(cw, convDim, K, st.w, st.at);
    singleTapCache.set(cw, st);
  }
  return st;
}

/**
 * convLiveOf's template records (lazySince −1, the single-tap weight) and its live channels
 * (listed in `live`; returns how many). convLiveOf's and fillSingleTaps' loops are functions of
 * their own, and nothing follows them: the JIT compiles a loop while the first call runs it, and an
 * operation after it, never run before, threw that code away at every layer's first step.
 */
function fillConvLive(
  rowPtr: Uint32Array | Int32Array, finite: Uint8Array, singleW: Float32Array, convDim: number, template: Int32Array, live: Int32Array,
): number {
  const templateF = new Float32Array(template.buffer, template.byteOffset, template.length);
  let n = 0;
  for (let c = 0; c < convDim; c++) {
    template[4 * c] = -1;
    templateF[4 * c + 2] = singleW[c];
    if (rowPtr[c + 1] > rowPtr[c] || finite[c] !== 1) live[n++] = c;
  }
  return n;
}

/** singleTapOf's weights and taps into w and at (plans.ts SingleTaps). */
function fillSingleTaps(cw: Float32Array, convDim: number, K: number, w: Float32Array, at: Uint8Array): void {
  for (let c = 0; c < convDim; c++) {
    // the taps that weigh (a weight other than ±0; NaN weighs): none → the newest, weighing ±0
    let n = 0;
    let tap = K - 1;
    for (let j = 0; j < K; j++) if (cw[c * K + j] !== 0) { n++; tap = j; }
    w[c] = n <= 1 ? cw[c * K + tap]! : NaN;
    at[c] = tap;
  }
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
 * skipped shifts applied (Executor.cacheSnapshot and tests; the cache is not touched).
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
  if (t.alias !== null) copyAliasWindows(t.alias, out);
  return out;
}

/**
 * The conv outputs as the plain step would hold them: a copy of the layer's conved buffer with the
 * aliased blocks' entries taken from their representatives (for tests; the buffer is not touched).
 */
export function gdnConvedSnapshot(cache: GdnCache): Float32Array | null {
  const co = cache.buffers?.conved;
  if (co === undefined) return null;
  const out = co.slice();
  if (cache.track?.alias) copyAliasOutputs(cache.track.alias, out);
  return out;
}

/**
 * Tells the tracked decode step that value head h's S was overwritten from outside (setGdnState):
 * its next step runs in full instead of repeating the previous one.
 */
export function noteGdnStateWritten(cache: GdnCache, h: number): void {
  if (cache.track) { cache.track.headModified[h] = 1; cache.track.writtenOutside[h] = 1; }
}

/** Ends tracking: catches up every lazy channel and drops the track (before an untracked step; the next tracked step starts fresh). */
export function dropGdnTrack(cache: GdnCache, K: number): void {
  materializeLazyConv(cache, K);
  cache.track = undefined;
}

/**
 * Catches up every lazy channel and ends their laziness, and gives the aliased blocks their
 * representatives' windows (the caller then drops the track).
 */
export function materializeLazyConv(cache: GdnCache, K: number): void {
  const t = cache.track;
  if (t === undefined) return;
  for (let i = 0; i < t.nLazy; i++) {
    const c = t.lazyList[i]!;
    catchUpChannel(t, cache.conv, c, K);
    t.chan[4 * c + 1] &= ~CH_LISTED;
  }
  t.nLazy = 0;
  if (t.alias !== null) copyAliasWindows(t.alias, cache.conv);
}

/** True when every tap of the channel at `base` but tap `at` is finite. */
function otherTapsFinite(conv: Float32Array, base: number, K: number, at: number): boolean {
  for (let j = 0; j < K; j++) { const v = conv[base + j]; if (j !== at && v - v !== 0) return false; }
  return true;
}

/** True when taps at … K−1 of the channel at `base` are bit-identical (always, for at = K − 1). */
function tapsEqualFrom(convBits: Uint32Array, base: number, K: number, at: number): boolean {
  const b = convBits[base + K - 1];
  for (let j = at; j < K - 1; j++) if (convBits[base + j] !== b) return false;
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

/** Σ|k_i| of key head kh's k (t.kAbs), taken at its first use since k was normalised (NaN until then; a NaN sum is taken again). */
function kAbsOf(t: GdnTrack, k: Float32Array, kh: number, dk: number): number {
  let a = t.kAbs[kh];
  if (a !== a) { a = absSum(k, kh * dk, dk); t.kAbs[kh] = a; }
  return a;
}

/** t.vBeyond from scratch: per value head, how many of its v entries (conved bits from vOff) are beyond the β = ±0 shortcut's bound. */
function countBeyondVBound(t: GdnTrack, conBits: Uint32Array, vOff: number, hv: number, dv: number): void {
  for (let h = 0; h < hv; h++) {
    let n = 0;
    for (let j = 0; j < dv; j++) n += beyondVBound(conBits[vOff + h * dv + j]);
    t.vBeyond[h] = n;
  }
}

/**
 * After a step's conv part: the blocks that repeat another's channels (conv-alias.ts) and hold
 * what it holds run through it from the next step on; with every repeating block aliased, the
 * stack without their rows is given this step's input (so that its next call, the next step's
 * walk, is incremental). Set up once per track, at the step ExecTuning.aliasConvBlocks names: the
 * layer's aliases and its reduced stack cost a few ms to find and build once per weights, and a
 * stack walked for the first time builds its plans and takes a full pass, which a short run would
 * not make up.
 */
function setUpAliases(
  ctx: ExecNumericContext, t: GdnTrack, stack: Matrix, cw: Float32Array, d: GdnDims, convBits: Uint32Array, conBits: Uint32Array,
  x: Float32Array,
): void {
  const al = convAliasOf(ctx.plans, stack, cw, d);
  const nOut = Int32Array.of(t.nActive);
  const a = aliasesOfTrack(al, stack, d, convBits, t.chan, conBits, t.active, t.nActive, nOut);
  t.alias = a;
  t.nActive = nOut[0];
  if (a?.complete === true) {
    a.walk = reducedStackOf(ctx.plans, stack, al);
    deltaLinear(ctx, a.walk, x, 0, null, 0, undefined, { stamp: nextInputStamp() }, 'gdn.inProj');
  }
}

/**
 * The conv part of a tracked step after the first (gdnDecodeTracked's list): channels whose input
 * moved join the active list, every active channel shifts and refolds, and channels become settled
 * or lazy; marks the key and value heads whose conv outputs changed (t.qDirty, kDirty, vDirty).
 * A function of its own, apart from the first step's form (freshConvStep), so that its optimised
 * code is compiled from feedback of the steps that run it.
 */
function trackedConvStep(
  t: GdnTrack, cache: GdnCache, ps: DeltaLinearState, mixed: Float32Array, buf: GdnBuffers, cw: Float32Array, K: number,
  convDim: number, zOff: number, keyDim: number, dk: number, dv: number, form: 'mul' | 'div', stats?: MatmulStats,
): void {
  const conv = cache.conv;
  const conved = buf.conved;
  const conBits = buf.convedBits;
  const convBits = t.convBits;
  t.qDirty.fill(0);
  t.kDirty.fill(0);
  t.vDirty.fill(0);
  const mixedBits = t.projBits;
  const { active, chan } = t;
  const kern = buf.convKernel;
  if (kern !== null && active === kern.active && t.tapAt === kern.tapAt && kern.cwSrc === cw) {
    const heap = kern.heap;
    const v = kern.views;
    const convAt = v.conv.of(heap, conv);
    const mixedAt = v.mixed.of(heap, mixed);
    const convedAt = v.conved.of(heap, conved);
    const rowsAt = ps.full ? -1 : v.rows.of(heap, ps.rows);
    if (convAt >= 0 && mixedAt >= 0 && convedAt >= 0 && (ps.full || rowsAt >= 0)) {
      convStepWasm(t, kern, ps, convAt, mixedAt, convedAt, rowsAt, conv, convBits, mixed, mixedBits, conved, conBits, cw, K, zOff, keyDim,
        dk, dv, form, stats);
      return;
    }
  }
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
  let m = 0;
  for (let i = 0; i < n; i++) m = convChannel(t, active[i], m, conv, convBits, mixed, mixedBits, conved, conBits, cw, K, keyDim, dk, dv, form);
  t.nActive = m;
  t.step++;
  if (stats) stats.convChannels += n;
}

/**
 * trackedConvStep in wasm (wasm-gdn-kernels.ts convActivate, convChannels): the same activation,
 * channel steps and lists, over arrays in the kernels' memory; a channel whose window or fold is
 * not finite is left to convChannel, and the kernel goes on after it.
 */
function convStepWasm(
  t: GdnTrack, kern: ConvKernel, ps: DeltaLinearState, convAt: number, mixedAt: number, convedAt: number, rowsAt: number,
  conv: Float32Array, convBits: Uint32Array, mixed: Float32Array,
  mixedBits: Uint32Array, conved: Float32Array, conBits: Uint32Array, cw: Float32Array, K: number, zOff: number,
  keyDim: number, dk: number, dv: number, form: 'mul' | 'div', stats?: MatmulStats,
): void {
  const { ctl, heap } = kern;
  // (the layer's own arrays and dimensions are in ctl already: gdn-cache.ts convKernelOf)
  ctl[CONV_CTL.rowsAt] = ps.full ? -1 : rowsAt;
  ctl[CONV_CTL.nRows] = ps.nRows;
  ctl[CONV_CTL.nActive] = t.nActive;
  ctl[CONV_CTL.nLazy] = t.nLazy;
  ctl[CONV_CTL.step] = t.step;
  ctl[CONV_CTL.convAt] = convAt;
  ctl[CONV_CTL.mixedAt] = mixedAt;
  ctl[CONV_CTL.convedAt] = convedAt;
  ctl[CONV_CTL.zOff] = zOff;
  ctl[CONV_CTL.form] = form === 'mul' ? 0 : 1;
  const n = heap.convActivateAt(kern.ctlAt);
  ctl[CONV_CTL.resume] = 0;
  ctl[CONV_CTL.m] = 0;
  while (heap.convChannelsAt(kern.ctlAt, K, t.bf16) === 1) {
    // a channel with a non-finite tap or fold, untouched by the kernel: JavaScript's step, then the kernel from the next
    const i = ctl[CONV_CTL.resume];
    t.nLazy = ctl[CONV_CTL.nLazy];
    ctl[CONV_CTL.m] = convChannel(t, t.active[i], ctl[CONV_CTL.m], conv, convBits, mixed, mixedBits, conved, conBits, cw, K, keyDim, dk, dv, form);
    ctl[CONV_CTL.nLazy] = t.nLazy;
    ctl[CONV_CTL.resume] = i + 1;
  }
  t.nActive = ctl[CONV_CTL.m];
  t.nLazy = ctl[CONV_CTL.nLazy];
  t.step++;
  if (stats) stats.convChannels += n;
}

/**
 * trackedConvStep's step of one active channel c (the wasm kernel's, for a channel it leaves to
 * JavaScript): its skipped and this step's shifts, its fold and output, the heads it dirties, and
 * whether it settles, goes lazy or stays active (then appended at active[m]); returns the new m.
 */
function convChannel(
  t: GdnTrack, c: number, m: number, conv: Float32Array, convBits: Uint32Array, mixed: Float32Array, mixedBits: Uint32Array,
  conved: Float32Array, conBits: Uint32Array, cw: Float32Array, K: number, keyDim: number, dk: number, dv: number, form: 'mul' | 'div',
): number {
  const { chan, chanF, tapAt, active, lazyList } = t;
  const base = c * K;
  // the shifts a lazy channel skipped (catchUpChannel) and this step's, in one pass: one more
  // replayed shift with the new input written over the newest tap is this step's shift
  const since = chan[4 * c];
  if (since >= 0) chan[4 * c] = -1;
  replayShifts(conv, base, K, since >= 0 ? skippedShifts(t, since, K) + 1 : 1);
  conv[base + K - 1] = mixed[c];
  // a new input differs from the tap it was shifted past: the taps cannot be settled (below)
  const moved = (mixedBits[c] | 0) !== chan[4 * c + 3];
  chan[4 * c + 3] = mixedBits[c];
  const sw = chanF[4 * c + 2];
  const single = sw === sw;
  const at = single ? tapAt[c] : K - 1;
  let y = single ? f32(sw * conv[base + at]) : 0;
  if (y === 0 || !otherTapsFinite(conv, base, K, at)) {
    // the fold itself; a single-tap channel with a product p ≠ 0 and its other taps finite
    // folds −0 + (±0)… + p + (±0)… = p (the other taps weigh ±0), which the line above computed
    y = -0;
    for (let j = 0; j < K; j++) y = f32(y + f32(cw[base + j] * conv[base + j]));
  }
  const before = conBits[c];
  conved[c] = convOutput(y, form, t.bf16);
  if (conBits[c] !== before) {
    if (c < keyDim) t.qDirty[Math.floor(c / dk)] = 1;
    else if (c < 2 * keyDim) t.kDirty[Math.floor((c - keyDim) / dk)] = 1;
    else {
      const h = Math.floor((c - 2 * keyDim) / dv);
      t.vDirty[h] = 1;
      t.vBeyond[h] += beyondVBound(conBits[c]) - beyondVBound(before);
    }
  }
  if (!moved && tapsSettled(convBits, base, K)) chan[4 * c + 1] &= ~CH_ACTIVE;
  else if (single && y !== 0 && y - y === 0
    ? tapsEqualFrom(convBits, base, K, at)
    : y - y === 0 && steadyAhead(cw, conv, base, K, y)) {
    // Lazy: while the input stays, every later step's fold is the same y. A single-tap channel
    // with y ≠ 0: its other taps weigh ±0 and are finite (else y would be NaN), so the fold is
    // −0 + (±0)… + p + (±0)… = p whatever they hold, and the shifts bring taps at + 1 … K − 1
    // and then the input to its tap: the same bits, when they equal the newest (always, for
    // the newest tap; a channel of an older tap whose taps differ stays active until they do,
    // without folding ahead). Any other channel: the K − 1 shifted windows were folded ahead
    // (steadyAhead). The skipped shifts are replayed when the channel next runs
    // (catchUpChannel) or before anything else reads the state (materializeLazyConv).
    chan[4 * c] = t.step;
    if ((chan[4 * c + 1] & CH_LISTED) === 0) lazyList[t.nLazy++] = c;
    chan[4 * c + 1] = CH_LISTED; // (no longer active)
  } else active[m++] = c;
  return m;
}

/**
 * One decode step of the GDN mixer that recomputes only what changed since the previous step
 * (sparse path, sequential order, either profile and silu form; bit-identical to gdnForwardFull,
 * by purity: every recomputed quantity is a pure function of inputs that are compared bit for bit;
 * a conv output is convOutput(y, form, bf16) of its fold y for the track's form and profile, so a
 * channel whose y is unchanged — settled, lazy, cold — keeps its output, and a context of another
 * form or profile starts a fresh track; bf16's casts — the conv outputs, β, each head's output
 * after its step, the gated norm's entries — are pure functions of values compared by their bits,
 * and the conv and gated norm kernels have bf16 forms that make them):
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
export function gdnDecodeTracked(
  ctx: ExecNumericContext, cfg: ModelConfig, w: GdnWeights, cache: GdnCache, x: Float32Array, d: GdnDims,
  buf: GdnBuffers, stats?: MatmulStats, inShare?: DeltaShare,
): { out: Float32Array; source: OutputSource | null } | null {
  let t0 = phaseStart();
  // the four projections read the same x: one stacked matrix [qkv; z; b; a] (stack-rows.ts)
  const sites = cache.sites ??= { stack: newStackSite(), inProj: newDeltaSite(), outProj: newDeltaSite() };
  const stack = rowStackAt(sites.stack, ctx.plans, w, inProjParts, w.inProjQkv, w.inProjZ, w.inProjB, w.inProjA);
  if (stack === null) return null;
  const form = ctx.siluForm;
  const bf16 = ctx.profile === 'bf16';
  const fresh = cache.track === undefined || cache.track.weights !== w || cache.track.siluForm !== form || cache.track.bf16 !== bf16;
  // a track that runs every aliased block through its representative walks the stack without
  // their rows (conv-alias.ts reducedStackOf: the other rows' outputs are the same bits)
  const ta = fresh ? null : (cache.track as GdnTrack).alias;
  const walked = ta !== null && ta.walk !== null && ta.stack === stack.m ? ta.walk : stack.m;
  const ps = deltaLinear(ctx, walked, x, 0, null, 0, stats, inShare ?? { stamp: nextInputStamp() }, 'gdn.inProj', sites.inProj);
  if (ps === null) return null;
  // (the aliased channels' inputs are the full stack's: their windows are their representatives')
  noteConvInputs(cache, stack.m);
  const off = stack.offsets;
  const zOff = off[1], bOff = off[2], aOff = off[3];
  t0 = phaseEnd('gdn.proj', t0);
  phaseEnd('gdn.tracked', phaseStart()); // marks (with profiling on) that a tracked step ran
  const { K, convDim, hk, hv, dk, dv, r, keyDim } = d;
  if (fresh) materializeLazyConv(cache, K);
  const t = fresh ? newGdnTrack(w, d, form, bf16, buf) : cache.track as GdnTrack;
  // one output vector: qkv (mixed) at 0, z at zOff, b at bOff, a at aOff
  const y = ps.y;
  const mixed = y;
  const conv = cache.conv;
  const conved = buf.conved;
  const conBits = buf.convedBits;
  const cw = w.conv1d;
  if (t.projSrc !== y) { t.projBits = new Uint32Array(y.buffer, y.byteOffset, y.length); t.projSrc = y; }
  if (t.convSrc !== conv) { t.convBits = new Uint32Array(conv.buffer, conv.byteOffset, conv.length); t.convSrc = conv; }
  const convBits = t.convBits;
  if (fresh) {
    const lazyCount = new Int32Array(1);
    const cz = convZeroOf(ctx.plans, w, convDim, K);
    const live = convLiveOf(ctx.plans, stack.m, cw, convDim, K, cz.finite);
    if (cache.convInputs === stack.m) {
      // the channels off the live list are cold (ConvLive): their records and outputs are copies
      t.chan.set(live.template);
      conved.set(cz.out);
      t.nActive = freshConvStep(t, live.list, live.list.length, K, cw, conv, mixed, conved, cz.finite, cz.out, live.single, form, lazyCount);
    } else {
      t.nActive = freshConvStep(t, null, convDim, K, cw, conv, mixed, conved, cz.finite, cz.out, live.single, form, lazyCount);
    }
    t.tapAt = live.single.at;
    const kern = buf.convKernel;
    if (kern !== null) {
      // the kernels read the weights and taps from the wasm memory: copies, made again for others
      if (kern.cwSrc !== cw) { kern.cw.set(cw); kern.cwSrc = cw; }
      if (kern.tapSrc !== live.single.at) { kern.tapAt.set(live.single.at); kern.tapSrc = live.single.at; }
      t.tapAt = kern.tapAt;
    }
    t.nLazy = lazyCount[0];
    t.qDirty.fill(1);
    t.kDirty.fill(1);
    t.vDirty.fill(1);
    countBeyondVBound(t, conBits, 2 * keyDim, hv, dv);
    t.step = 1;
    cache.track = t;
    if (ctx.tuning.aliasConvBlocks === 1) setUpAliases(ctx, t, stack.m, cw, d, convBits, conBits, x);
  } else {
    if (quietStep(ctx, t, cache, buf, ps, hv)) {
      // the rest of the step would change nothing (quietStep): its result is the last one
      t.step++;
      t.projVer = ps.version;
      if (stats) stats.gdnQuietSteps++;
      return buf.tracked;
    }
    trackedConvStep(t, cache, ps, y, buf, cw, K, convDim, zOff, keyDim, dk, dv, form, stats);
    if (t.alias !== null) followAliases(t.alias, hk, t.qDirty, t.kDirty, t.vDirty, t.vBeyond);
    else if (t.step === ctx.tuning.aliasConvBlocks) setUpAliases(ctx, t, stack.m, cw, d, convBits, conBits, x);
  }
  t0 = phaseEnd('gdn.conv', t0);
  const scale = d.qScale;
  const { q, k } = buf;
  // q of key head h is a function of its q conv outputs alone, k of its k ones (normalizeQk's
  // sequential form, in its two parts): a head renormalises only what moved
  // (in wasm where conved, q and k lie in its memory: wasm-gdn-kernels.ts l2norm, the same bits;
  // a head whose r is not finite and positive is left to the JavaScript)
  // (conved, q and k are the layer buffers' own: their addresses were kept when they were carved)
  const lh = buf.step.heap;
  const l2 = lh !== null && buf.convedAt >= 0 && buf.qAt >= 0 && buf.kAt >= 0 && dk % 4 === 0 && Math.fround(scale) === scale ? lh : null;
  const l2nzAt = buf.step.at.l2nz;
  // (a head of an aliased block reads its representative's outputs: conv-alias.ts)
  const src = t.alias?.src ?? null;
  for (let h = 0; h < hk; h++) {
    if (t.qDirty[h] === 1) {
      const at = (src !== null ? src[h] : h) * dk;
      const st = l2 === null ? 1 : l2.gdnL2normAt(buf.convedAt + 4 * at, dk, buf.qAt + 4 * h * dk, scale, l2nzAt);
      if (st !== 0) l2normSeq(conved, at, dk, q, h * dk, scale);
    }
    if (t.kDirty[h] === 1) {
      const at = (src !== null ? src[hk + h] : hk + h) * dk;
      const st = l2 === null ? 1 : l2.gdnL2normAt(buf.convedAt + 4 * at, dk, buf.kAt + 4 * h * dk, 1, l2nzAt);
      if (st !== 0) l2normSeq(conved, at, dk, k, h * dk, 1);
      t.kAbs[h] = NaN; // taken when the β = ±0 test reaches it (kAbsOf)
    }
  }
  const vOff = 2 * keyDim; // v in conved
  const { beta, g } = buf;
  const gateDirty = t.vDirty; // β / g changes are folded into the per-value-head dirty flags
  // β_h and g_h are pure functions of b_h and a_h: when the projections advanced by one version
  // since β and g were computed, only the heads of their recomputed rows can change; otherwise
  // every head's b row is listed (one loop over a row list either way: a branch first taken late
  // in a decode had the JIT's optimised code of this function thrown away)
  const gateRows = !fresh && !ps.full && t.projVer === ps.version - 1;
  const gateList = gateRows ? ps.rows : t.bRows;
  const nGate = gateRows ? ps.nRows : hv;
  // (the same walk over the recomputed rows marks the heads with a z row among them, for the gated norm)
  const { coreChanged, headModified } = t;
  coreChanged.fill(0);
  for (let i = 0; i < nGate; i++) {
    const r = gateList[i];
    if (r < bOff) {
      if (r >= zOff) coreChanged[Math.floor((r - zOff) / dv)] = Z_MAY_MOVE;
      continue;
    }
    const h = r < aOff ? r - bOff : r - aOff;
    const nb = ctx.act(sigmoid32(y[bOff + h])); // (bf16: HF's b.sigmoid() in bf16)
    const ng = f32(-exp32(w.aLog[h]) * softplus32(f32(y[aOff + h] + w.dtBias[h])));
    // every test evaluated (no short circuit): a test first reached late in a decode — the first
    // step whose β stayed, say — had the JIT's optimised code of this function thrown away
    const kept = +Object.is(nb, beta[h]) & +Object.is(ng, g[h]) & +(nb === nb) & +(ng === ng);
    if (fresh || kept === 0) gateDirty[h] = 1;
    beta[h] = nb;
    g[h] = ng;
  }
  t.projVer = ps.version;
  t0 = phaseEnd('gdn.qkGates', t0);
  // (the z rows of a step whose projections did not advance by one version: listed apart)
  if (!fresh && !ps.full && !gateRows) {
    for (let i = 0; i < ps.nRows; i++) {
      const r = ps.rows[i];
      if (r >= zOff && r < bOff) coreChanged[Math.floor((r - zOff) / dv)] = Z_MAY_MOVE;
    }
  }
  const core = buf.core;
  const scratch = buf.step;
  for (let h = 0; h < hv; h++) {
    const kh = Math.floor(h / r);
    if (!fresh && (t.vDirty[h] | t.qDirty[kh] | t.kDirty[kh] | headModified[h] | cache.exposed[h]) === 0) continue;
    const S = cache.S[h];
    const rows = cache.rowNonZero[h];
    const kind = cache.exposed[h] ? classifyState(S, rows, cache.sMax, h) : cache.kind[h];
    const o0 = h * dv;
    // same k and S as this head's previous step: its kv memo still applies (a query moved alone)
    const kSame = !fresh && t.kDirty[kh] === 0 && headModified[h] === 0 && cache.exposed[h] === 0;
    // same q too (whose output core still holds): kv can be reused and the output kept
    const same = kSame && t.qDirty[kh] === 0;
    // same q as this head's previous step (q changes only where qDirty is set, and then every head
    // of the key head steps) and S as that step left it (not written from outside since): if this
    // step leaves S alone, the output that step wrote to core is this step's too
    const qSame = !fresh && t.qDirty[kh] === 0 && cache.exposed[h] === 0 && t.writtenOutside[h] === 0;
    t.writtenOutside[h] = 0;
    // β = ±0, no decay, a finite state B = sMax with B·Σ|k_i| ≤ 2^125 and every |v_j| ≤ 2^126
    // (t.kAbs, t.vBeyond): the step leaves S as it is (recurrentStepSparse's β = ±0 shortcut, the
    // same test), and with q and S as at this head's previous step so is its output. A kv memo of
    // this k and S still describes them; one of another k does not (the step would drop it).
    if (qSame && beta[h] === 0 && exp32(g[h]) === 1 && kind !== STATE_ANY && cache.sMax[h] <= BETA_ZERO_BOUND
      && cache.sMax[h] * kAbsOf(t, k, kh, dk) <= BETA_ZERO_BOUND && t.vBeyond[h] === 0) {
      if (!kSame) t.kvMemo.valid[h] = 0;
      headModified[h] = 0;
      if (stats) stats.gdnHeadsBetaZero++;
      continue;
    }
    if (stats && !fresh) stats.gdnHeadSteps++;
    const vAt = vOff + (src !== null ? src[2 * hk + h] : h) * dv;
    cache.kind[h] = recurrentStepSparse(dk, dv, S, kind, rows, q, kh * dk, k, kh * dk, conved, vAt, g[h], beta[h], core, o0, scratch, t.kvMemo, h, same, qSame, cache.sMax, kSame,
      cache.headAt.s[h], cache.headAt.rnz[h]);
    headModified[h] = scratch.modified[0];
    // (bf16: the kernel's output cast to bf16, HF's core_attn_out.to(dtype); a kept output is cast already)
    // (on the bits, as roundBf16 casts them, but for a NaN)
    if (bf16) {
      const cb = buf.coreBits;
      for (let j = o0; j < o0 + dv; j++) {
        const b = cb[j];
        if ((b & 0x7fffffff) > 0x7f800000) core[j] = roundBf16(core[j]);
        else cb[j] = f32BitsToBf16(b) << 16;
      }
    }
    // the output is a function of q and S: with both as before it is as before unless the step
    // wrote S; otherwise it may have moved (the gated norm compares each entry with the bits it
    // was computed from)
    coreChanged[h] |= same || qSame ? scratch.modified[0] * O_MAY_MOVE : O_MAY_MOVE;
  }
  t0 = phaseEnd('gdn.recurrent', t0);
  // gated norm of the heads whose output or z changed
  const normed = buf.normed;
  const nk = buf.normKernel;
  let nc: number;
  const yAt = nk !== null ? nk.zView.of(nk.heap, y) : -1;
  if (!fresh && nk !== null && t.normIn === nk.normIn && yAt >= 0) {
    nc = gatedNormWasm(ctx, t, nk, w, y, yAt, zOff, ps.full, cfg.rmsNormEps, d, buf, form);
  } else {
    nc = 0;
    for (let h = 0; h < hv; h++) nc = gatedNormHead(ctx, t, h, core, buf.coreBits, y, zOff, w.norm, normed, buf.normedBits, fresh, ps.full, cfg.rmsNormEps, dv, nc, form);
  }
  const changedList = t.normedChanged;
  buf.normMemoValid.fill(0); // the untracked path's memo no longer describes `normed`
  t0 = phaseEnd('gdn.gatedNorm', t0);
  // Where the delta form does not apply, buf.out keeps linear()'s output of the last step: a pure
  // function of normed's bits and the matrix, so with no normed entry changed (and the same
  // storage) it is this step's output too — and the delta form, a pure function of the same bits,
  // would fail again, so it is not retried (its check scans every input: the chip's idle RAM
  // layers, whose gated norm outputs all −0, failed it every token).
  const outProj = w.outProj;
  const kept = !fresh && !ps.full && nc === 0 && t.outLinearCsr === outProj.csr && t.outLinearDense === outProj.dense;
  const os = kept ? null
    : deltaLinear(ctx, outProj, normed, 0, fresh || ps.full ? null : changedList, nc, stats, undefined, 'gdn.outProj', sites.outProj);
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

/**
 * Whether the rest of a tracked step after its input projections would change nothing, so that
 * the last step's result is this step's: buf.tracked is what the layer's last call returned (the
 * cache's single-token result names its source; an idle step's names the memo's, and a full step
 * drops the track, so the next tracked step is fresh), and no projection row was
 * recomputed (so no conv input, z, β or g moved, and the gates are the last step's: projVer one
 * version behind), no conv channel is active (every channel's window is settled or its output is
 * its newest tap's, which did not move: lazy channels catch up from t.step, which the caller
 * advances), and no value head has S modified by the last step or from outside or handed out.
 * Then trackedConvStep would mark no q, k or v dirty and recompute no channel, the gate loop would
 * walk an empty row list, every head would be passed over, the gated norm would recompute no head
 * (nc = 0), and the out projection, given no changed input, would keep its output: a later step's
 * changes are still taken against the output it last computed. Not at the step that sets up the
 * conv aliases (ExecTuning.aliasConvBlocks).
 */
function quietStep(ctx: ExecNumericContext, t: GdnTrack, cache: GdnCache, buf: GdnBuffers, ps: DeltaLinearState, hv: number): boolean {
  const last = cache.single?.outSource ?? null;
  if (ctx.tuning.quietSteps !== 1 || last === null || last !== buf.tracked.source || ps.full || ps.nRows !== 0 || t.nActive !== 0 || t.projVer !== ps.version - 1) return false;
  if (t.alias === null && t.step + 1 === ctx.tuning.aliasConvBlocks) return false;
  const { headModified } = t;
  const exposed = cache.exposed;
  for (let h = 0; h < hv; h++) if ((headModified[h] | exposed[h]) !== 0) return false;
  return true;
}
