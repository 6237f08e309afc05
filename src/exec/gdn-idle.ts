/**
 * The idle-layer memo of the GDN mixer (sparse path, sequential order, single-token decode).
 *
 * A layer whose in_proj_qkv / z / b / a are all +0 (isIdleLayer) maps a finite input with at least
 * one activation of clear sign bit to mixed, z, b, a = +0 exactly, whatever the input (matmul.ts's
 * module comment: a row whose terms are all ±0 is −0 only when every term is −0, and a column
 * without an entry gives the +0 weight's term, +0 where the activation's sign bit is clear). If
 * moreover the conv state is all +0 and every head's state is all +0 (kind STATE_ZERO, not handed
 * out), the whole step — the *idle step* — is a pure function of the weights and the numeric mode
 * alone: its output is the same vector every time, and it leaves the conv state (shifted +0s) and S
 * unchanged. That is checked after the first such step actually ran (keepIdleOutput stores the
 * output only if the conv state is still all +0 and every head is still STATE_ZERO). Later idle
 * steps copy that output (idleOutOf), in this cache and in any other cache of the same weights and
 * numeric mode (ctx.plans.idleOutputs). Hooks still get copies of the (unchanged) states. gdn.ts
 * gdnForward tests idlePreconditions and uses the two.
 */
import type { GdnWeights } from '../model/weights.ts';
import type { GdnDims } from '../model/naming.ts';
import { allPlusZero } from './matmul-plans.ts';
import type { ExecNumericContext } from './numeric.ts';
import type { ExecPlans } from './plans.ts';
import type { DeltaShare, InputChanges, OutputSource } from './delta.ts';
import { STATE_ZERO } from './gdn-sparse-step.ts';
import type { GdnCache, IdleOut } from './gdn-cache.ts';

/*
 * ctx.plans.idleOutputs (plans.ts): per GDN weights, per numeric mode (idleModeKey), the output of
 * an idle step (see the header), kept once one has run in any cache. The step is a pure function
 * of the weights and the numeric mode (its preconditions fix every input it reads), so every cache
 * of these weights that meets them gets this vector; the array is shared and never written.
 */

/** What of a numeric context (sequential order) an idle step's output depends on. */
function idleModeKey(ctx: ExecNumericContext): string {
  return `${ctx.profile}|${ctx.siluForm}|${ctx.meanMode}`;
}

function newIdleOut(w: GdnWeights, out: Float32Array): IdleOut {
  const source: OutputSource = { version: 0, full: false, rows: new Int32Array(0), nRows: 0 };
  return { weights: w, out, buf: new Float32Array(out.length), source };
}

/**
 * The stored output of an idle step for this cache's weights: cache.idleOut, taken over from
 * idleOutputs when an idle step of these weights in this numeric mode already ran in any cache;
 * undefined while none has run.
 */
export function idleOutOf(ctx: ExecNumericContext, w: GdnWeights, cache: GdnCache): IdleOut | undefined {
  if (cache.idleOut === undefined || cache.idleOut.weights !== w) {
    // an idle step of these weights in this numeric mode already ran (in any cache): its output
    const known = ctx.plans.idleOutputs.get(w)?.get(idleModeKey(ctx));
    if (known !== undefined) cache.idleOut = newIdleOut(w, known);
  }
  const io = cache.idleOut;
  return io !== undefined && io.weights === w ? io : undefined;
}

/**
 * After an idle step ran in full (gdnForward): keeps a copy of its output `out` for this cache and
 * for every cache of these weights in this numeric mode, only if the step left the state as it
 * found it (it does: see the header). prepareToken kept convZero at 1 if every channel stayed
 * cold; else the state is scanned.
 */
export function keepIdleOutput(ctx: ExecNumericContext, w: GdnWeights, cache: GdnCache, d: GdnDims, out: Float32Array): void {
  if (cache.convZero !== 1) cache.convZero = allPlusZeroBits(cache.conv) ? 1 : 0;
  let zero = cache.convZero === 1;
  for (let h = 0; h < d.hv && zero; h++) if (cache.kind[h] !== STATE_ZERO) zero = false;
  if (zero) {
    const kept = out.slice();
    cache.idleOut = newIdleOut(w, kept);
    const idleOutputs = ctx.plans.idleOutputs;
    let byMode = idleOutputs.get(w);
    if (byMode === undefined) { byMode = new Map(); idleOutputs.set(w, byMode); }
    byMode.set(idleModeKey(ctx), kept);
  }
}

/**
 * Whether this single-token decode step is an idle step (see the header): the layer is idle
 * (isIdleLayer), x is finite with an entry of clear sign bit (the finiteness checked only on the
 * entries that changed since an input found finite, through `share`), every head's state is
 * STATE_ZERO and not handed out, and the conv state is all +0 (GdnCache.convZero, rescanned when
 * unknown).
 */
export function idlePreconditions(
  plans: ExecPlans, w: GdnWeights, cache: GdnCache, x: Float32Array, share?: DeltaShare,
): boolean {
  if (cache.idleOf !== w) { cache.idle = isIdleLayer(plans, w); cache.idleOf = w; }
  if (cache.idle !== true) return false;
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
  if (!headsAtRest(cache)) return false;
  if (cache.convZero !== 1) {
    cache.convZero = allPlusZeroBits(cache.conv) ? 1 : 0;
    if (cache.convZero !== 1) return false;
  }
  return true;
}

/**
 * forwardTracked's record, per layer, for passing over an idle GDN mixer (idleSkipHolds).
 */
export interface IdleSkip {
  /**
   * The stored idle output (cache.idleOut) that the layer's last step gave, having copied it into
   * its buffer — an idle step, or a step passed over after one — or null.
   */
  last: IdleOut | null;
  /** Every entry of the layer input met IDLE_SKIP_INPUT_MAX at the last step checked (then only changed entries are checked). */
  checked: boolean;
  /** An index a where the input x_a and fl(1 + w_a) had a clear sign bit at the last check. */
  clearAt: number;
  /** Whether the input norm allows it (every fl(1 + w_i) finite with |·| ≤ 2, and fl(eps) > 0); null until known. */
  normOk: boolean | null;
}

export function newIdleSkip(): IdleSkip {
  return { last: null, checked: false, clearAt: 0, normOk: null };
}

/** idleSkipHolds' bound on the layer input's magnitudes. */
const IDLE_SKIP_INPUT_MAX = 2 ** 50;

/**
 * Whether a single-token decode step (sparse path, sequential order, no hook that takes GDN
 * states, not fresh) may pass over this layer's GDN mixer and its input norm, taking the stored
 * idle output as the mixer's output unchanged: true when the layer's last step gave the stored
 * output `s.last` (an idle step of this layer: the layer is idle, and that output is in its
 * buffer) and this step would be an idle step too: the cache still holds that output, every head
 * is STATE_ZERO and not handed out, the conv state is +0 (as idlePreconditions checks them), and
 * the normalised input would meet idlePreconditions, which is shown from the layer input x
 * without normalising it:
 *  - every x_i finite with |x_i| ≤ 2^50 (checked on the entries x's list says changed, after a
 *    step that checked them all), so the sum of squares P ≤ H·2^100 < 2^112 for H < 2^12 is
 *    finite; with fl(eps) > 0 the norm's factor r = rsqrt32(fl(mean(P) + fl(eps))) lies in
 *    [2^−56, 2^75], and each output fl(fl(x_i·r)·fl(1 + w_i)) with |fl(1 + w_i)| ≤ 2 is finite
 *    (below 2^126, in the bf16 profile's rounding too);
 *  - some x_a and fl(1 + w_a) have a clear sign bit, so the output at a has one (x_a·r ≥ +0, times
 *    a value ≥ +0, is ≥ +0).
 * The step passed over would then have copied the stored output into the cache's buffer, which
 * already holds it. The caller marks the norm site behind (NormSite.passOver).
 */
export function idleSkipHolds(s: IdleSkip, cache: GdnCache, w: GdnWeights, x: { v: Float32Array; changed: Int32Array; n: number; all: boolean },
  w1: Float32Array, eps: number): boolean {
  const io = cache.idleOut;
  if (s.last === null || io !== s.last || io.weights !== w || cache.convZero !== 1) { s.checked = false; return false; }
  if (!headsAtRest(cache)) { s.checked = false; return false; }
  if (s.normOk === null) {
    let ok = Math.fround(eps) > 0 && w1.length === x.v.length && x.v.length < 2 ** 12;
    for (let i = 0; i < w1.length && ok; i++) if (!(Math.abs(w1[i]) <= 2)) ok = false;
    s.normOk = ok;
  }
  if (!s.normOk) return false;
  const v = x.v;
  if (!s.checked || x.all) {
    s.checked = false;
    for (let i = 0; i < v.length; i++) if (!(Math.abs(v[i]) <= IDLE_SKIP_INPUT_MAX)) return false;
    s.checked = true;
  } else {
    for (let t = 0; t < x.n; t++) if (!(Math.abs(v[x.changed[t]]) <= IDLE_SKIP_INPUT_MAX)) { s.checked = false; return false; }
  }
  if (!(signClear(v[s.clearAt]) && signClear(w1[s.clearAt]))) {
    let a = 0;
    while (a < v.length && !(signClear(v[a]) && signClear(w1[a]))) a++;
    if (a === v.length) return false;
    s.clearAt = a;
  }
  return true;
}

/** Every head's state all +0 (STATE_ZERO) and none handed out. */
function headsAtRest(cache: GdnCache): boolean {
  for (let h = 0; h < cache.kind.length; h++) if (cache.kind[h] !== STATE_ZERO || cache.exposed[h]) return false;
  return true;
}

/** True for +0 and positive values: a clear sign bit (the caller has ruled out NaN). */
function signClear(v: number): boolean {
  return v > 0 || (v === 0 && 1 / v > 0);
}

/** True when in_proj_qkv, in_proj_z, in_proj_b and in_proj_a hold only +0 weights (cached in plans.idleLayers). */
function isIdleLayer(plans: ExecPlans, w: GdnWeights): boolean {
  const idleLayers = plans.idleLayers;
  let v = idleLayers.get(w);
  if (v === undefined) {
    v = allPlusZero(plans, w.inProjQkv) && allPlusZero(plans, w.inProjZ) && allPlusZero(plans, w.inProjB) && allPlusZero(plans, w.inProjA);
    idleLayers.set(w, v);
  }
  return v;
}

export function allPlusZeroBits(a: Float32Array): boolean {
  const u = new Uint32Array(a.buffer, a.byteOffset, a.length);
  for (let i = 0; i < u.length; i++) if (u[i] !== 0) return false;
  return true;
}
