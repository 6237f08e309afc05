/**
 * The Gated DeltaNet (linear_attention) mixer in Hugging Face transformers' float32 order
 * (docs/host-architecture.md §3, HF `Qwen3_5GatedDeltaNet.forward`) — the reference layer:
 *   1. projections mixed = x·W_qkvᵀ ([q|k|v]), z, b, a;
 *   2. causal depthwise conv1d over mixed with the conv state = the last K pre-activation inputs,
 *      y_c = Σ_j w[c,j]·state[c,j] (taps in ascending j, tap K−1 = current token), then SiLU;
 *   3. split q, k, v; β = sigmoid(b); g = −exp(A_log)·softplus(a + dt_bias) (float32);
 *   4. value head h reads key head h // r; q, k L2-normalised (eps 1e−6), q × fl(1/√dk);
 *   5. first forward on an empty cache (prefill): the chunked kernel (gdn-chunked.ts) per value head;
 *      decode: the recurrent rule per value head, in the order of docs/host-architecture.md §3.7
 *        S ← S·exp(g); kv = Sᵀk; δ = (v − kv)·β; S ← S + k⊗δ; o = Sᵀq (updated S);
 *   6. gated RMSNorm per value head with z, then out_proj.
 * Steps 1–4 are gdn-token.ts (prepareToken); the cache and the layer's types are gdn-cache.ts.
 *
 * Note (HF versions): the current recurrent torch function divides q by √dk, the chunked one
 * multiplies by dk^−0.5; we multiply by fl(1/√dk) in both (docs/host-architecture.md §7; ≤ 1 ulp apart).
 *
 * Skips that are bit-identical by construction (recurrentStep):
 *  - exp(g) = 1 (a pinned head): the decay S·1 is skipped (x·1 = x for every float, −0 included);
 *  - sparse path only, decode: when the head's k is all ±0, v and β are finite and the state holds
 *    no −0 and no non-finite value, the kv/δ/update steps are skipped: each k_i·δ_j is ±0, and
 *    S + (±0) = S for every S ≠ −0 (a −0 entry would become +0, hence the −0 check).
 *
 * The fast decoder, each part bit-identical to this reference (gdnForward picks it):
 *  - gdn-sparse-step.ts: recurrentStepSparse, the recurrent step on the sparse path in sequential
 *    order, which keeps a summary of each head's S so unused heads cost O(dk + dv);
 *  - gdn-idle.ts: a layer whose input projections are all +0, on an all-+0 state, repeats a stored
 *    output;
 *  - gdn-tracked.ts: a decode step that recomputes only what changed since the previous one
 *    (either profile and silu form).
 */
import type { ModelConfig } from '../model/config.ts';
import type { GdnWeights } from '../model/weights.ts';
import type { GdnDims } from '../model/naming.ts';
import { chunkGatedDeltaRule } from './gdn-chunked.ts';
import { chunkGatedDeltaRuleSparse } from './gdn-chunked-sparse.ts';
import { linear, type MatmulPath, type MatmulStats } from './matmul.ts';
import type { ExecNumericContext } from './numeric.ts';
import { exp32 } from './numeric.ts';
import { gatedRmsNorm } from './norms.ts';
import { deltaLinear, wasmHeapOf, type DeltaShare, type OutputSource } from './delta.ts';
import { phaseEnd, phaseStart } from './profile.ts';
import { classifyState, newSparseStepScratch, recurrentStepSparse, STATE_ANY } from './gdn-sparse-step.ts';
import { gdnBuffers, gdnDimsOf, type GdnBuffers, type GdnCache, type GdnRunResult } from './gdn-cache.ts';
import { prepareToken } from './gdn-token.ts';
import { idleOutOf, idlePreconditions, keepIdleOutput } from './gdn-idle.ts';
import { dropGdnTrack, gdnDecodeTracked } from './gdn-tracked.ts';

const f32 = Math.fround;

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
  const out = chunkGatedDeltaRuleSparse({ ...a, ctx }, ctx.order.kind) ?? chunkGatedDeltaRule({ ...a, ctx });
  bucket.push({ inputs: before, out: out.slice(), state: a.state.slice() });
  memo.set(h, bucket);
  return out;
}

/**
 * Runs the GDN mixer over the normalised inputs xs (one [H] vector per token).
 * mode 'prefill': chunked kernel over all tokens (states known only after the last token);
 * mode 'decode': the recurrent rule token by token.
 * A single-token decode on the sparse path in sequential order first tries the idle memo
 * (gdn-idle.ts), then the tracked step (gdn-tracked.ts); anything else runs gdnForwardFull.
 */
export function gdnForward(
  ctx: ExecNumericContext, cfg: ModelConfig, w: GdnWeights, cache: GdnCache, xs: Float32Array[],
  mode: 'prefill' | 'decode', path: MatmulPath, wantStates: boolean, stats?: MatmulStats, share?: DeltaShare,
  kernelCtx: ExecNumericContext = ctx,
): GdnRunResult {
  const d = cache.dims ??= gdnDimsOf(cfg);
  const L = xs.length;
  const idle = mode === 'decode' && L === 1 && path === 'sparse' && ctx.order.kind === 'sequential'
    && idlePreconditions(ctx.plans, w, cache, xs[0], share);
  if (idle) {
    const io = idleOutOf(ctx, w, cache);
    if (io !== undefined) {
      io.buf.set(io.out);
      if (stats) stats.sparse += 5;
      phaseEnd('gdn.idle', phaseStart());
      return singleResult(cache, io.buf, wantStates, io.source);
    }
  }
  // A single-token call reuses the layer's buffers: its outputs are consumed before the next call.
  let buf: GdnBuffers | undefined;
  if (L === 1) buf = cache.buffers ??= gdnBuffers(d, w.outProj.rows, wasmHeapOf(ctx));
  if (!idle && buf !== undefined && mode === 'decode' && path === 'sparse' && ctx.order.kind === 'sequential') {
    const o = gdnDecodeTracked(ctx, cfg, w, cache, xs[0], d, buf, stats, share);
    if (o !== null) {
      cache.convZero = 0;
      return singleResult(cache, o.out, wantStates, o.source);
    }
  }
  dropGdnTrack(cache, d.K);
  const r = gdnForwardFull(ctx, cfg, w, cache, xs, mode, path, wantStates, d, buf, stats, kernelCtx);
  // an idle step that ran in full: its output, kept if it left the state as it found it (gdn-idle.ts)
  if (idle) keepIdleOutput(ctx, w, cache, d, r.out[0]);
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
 * The full mixer over xs: prepareToken per token, then per value head the chunked kernel
 * (prefill) or the recurrent step (decode: recurrentStepSparse on the sparse path in sequential
 * order, recurrentStep otherwise), then the gated norm and out_proj.
 */
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
    for (let h = 0; h < hv; h++) cache.kind[h] = classifyState(cache.S[h], cache.rowNonZero[h], cache.sMax, h);
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
        const kind = cache.exposed[h] ? classifyState(S, rows, cache.sMax, h) : cache.kind[h];
        cache.kind[h] = recurrentStepSparse(
          dk, dv, S, kind, rows, tk.q, kh * dk, tk.k, kh * dk, tk.v, h * dv, tk.g[h], tk.beta[h], o, h * dv, scratch,
          undefined, h, false, false, cache.sMax,
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
    cache.sMax.fill(Infinity);
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
      ? deltaLinear(ctx, w.outProj, normed, 0, null, 0, stats, undefined, 'gdn.outProj') : null;
    if (os !== null) {
      const o = buf ? buf.out : new Float32Array(w.outProj.rows);
      o.set(os.y);
      out.push(o);
    } else out.push(linear(ctx, w.outProj, normed, path, { stats, out: buf?.out }));
    t0 = phaseEnd('gdn.outProj', t0);
  }
  return { out, states };
}
