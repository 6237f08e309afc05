/**
 * Feed-forward blocks in Hugging Face transformers' float32 order (docs/host-architecture.md §5):
 *  - dense SwiGLU: down( act(silu(act(x·Gᵀ))) ⊙ act(x·Uᵀ) ), the product rounded (and act'ed);
 *  - MoE (Qwen3-Next `SparseMoeBlock`): router logits x·W_rᵀ; softmax in float32
 *    (max-subtracted, p = fl(e · fl(1/Σe))); top-k by probability with ties to the lowest expert
 *    id; if norm_topk_prob, w ← fl(w / Σ_topk w) (Σ through ctx.sum in top-k order); weights cast
 *    to the activation dtype; experts added in ASCENDING expert id into a +0 vector:
 *    acc = act(fl(acc + act(fl(Expert_e(x) · w_e)))); then
 *    acc = act(fl(acc + act(fl(act(sigmoid(x·w_sgᵀ)) · Shared(x))))).
 */
import { ChipcError } from '../util/errors.ts';
import type { Matrix, MoeMlpWeights } from '../model/weights.ts';
import { linear, linearEx, linearOnSupport, type MatmulPath, type MatmulStats } from './matmul.ts';
import { nonEmptyRowUnion } from './matmul-plans.ts';
import type { ExecMemos, ExecPlans, FfnDeltaState } from './plans.ts';
import type { ExecNumericContext } from './numeric.ts';
import { exp32, sigmoid32, silu32 } from './numeric.ts';
import { deltaLinear, newDeltaSite, nextInputStamp, wasmHeapOf, type DeltaShare, type DeltaSite, type OutputSource } from './delta.ts';
import { phaseEnd, phaseStart } from './profile.ts';
import { newStackSite, rowStackAt, rowStackOf, type StackSite } from './stack-rows.ts';
import { ViewAt } from './wasm-heap.ts';

const f32 = Math.fround;

/**
 * Per gate/up row union U (nonEmptyRowUnion): an input buffer for the down projection that stays
 * +0 outside U (plans.supportBuffers). Kept per union, not per matrix: when gate or up get new
 * storage, a new union gets a new buffer, and no value written for a row of the old union stays.
 */
function supportBufferOf(plans: ExecPlans, union: Int32Array, n: number): Float32Array {
  const supportBuffers = plans.supportBuffers;
  let b = supportBuffers.get(union);
  if (!b || b.length !== n) {
    b = new Float32Array(n);
    supportBuffers.set(union, b);
  }
  return b;
}

/** [gate_proj, up_proj] of m, as one array kept per MLP (plans.gateUpLists: a step allocates nothing). */
export function gateUpParts(plans: ExecPlans, m: { gateProj: Matrix; upProj: Matrix }): Matrix[] {
  const gateUpLists = plans.gateUpLists;
  let p = gateUpLists.get(m);
  if (p === undefined || p[0] !== m.gateProj || p[1] !== m.upProj) {
    p = [m.gateProj, m.upProj];
    gateUpLists.set(m, p);
  }
  return p;
}

/**
 * h_i = act(act(silu(gate_i)) · up_i) for every unit (gate at go[i], up at go[n + i]): swigluDelta's
 * form when its previous h does not describe the stacked output's previous version. A function of
 * its own so that the incremental loop's optimised code is compiled from feedback of incremental
 * steps (the first step of a fresh executor runs this form only).
 */
function swigluAll(ctx: ExecNumericContext, go: Float32Array, h: Float32Array, n: number, form: 'mul' | 'div'): void {
  for (let i = 0; i < n; i++) {
    const gi = go[i];
    h[i] = ctx.act(f32((gi === 0 ? gi : ctx.act(silu32(gi, form))) * go[n + i]));
  }
}

/**
 * The SwiGLU through delta.ts's incremental matmuls (sparse path, sequential order, CSR-only
 * matrices): gate and up, stacked into one matrix [gate; up] (stack-rows.ts), keep their outputs
 * across calls and recompute the rows of changed input columns; h_i = act(fl(act(silu(g_i))·u_i))
 * (g_i = ±0 passes through: silu(±0) = ±0) is recomputed for the units of those rows only (rows no
 * column reaches have g = u = +0, so h = act(fl(+0·+0)) = +0) — it is a pure function of
 * (g_i, u_i), and the h it keeps was computed from the stack's output of the previous call
 * (checked by its version; otherwise every unit is recomputed); the down projection gets the
 * rows whose h bit pattern changed as its candidate columns. Each matmul equals linear()'s
 * (delta.ts, module comment). Returns the output: with `io` (a tracked decode step, which reads it
 * before this matrix's next call) the down projection's own incremental output, not copied;
 * otherwise `out`, filled. Returns null, having written nothing to `out`, when a delta
 * precondition fails.
 */
function swigluDelta(
  ctx: ExecNumericContext, m: { gateProj: Matrix; upProj: Matrix; downProj: Matrix }, x: Float32Array,
  stats: MatmulStats | undefined, out: Float32Array, io?: SwigluIo,
): Float32Array | null {
  const n = m.gateProj.rows;
  const H = m.gateProj.cols;
  if (m.downProj.cols !== n || m.upProj.rows !== n || m.upProj.cols !== H || out.length < m.downProj.rows || x.length < H) return null;
  // per numeric context and gate matrix (ctx.memos.ffnDeltaStates): h and the gate/up memo version it reflects
  const byM = ctx.memos.ffnDeltaStates;
  const sites = io?.sites;
  let st = sites !== undefined && sites.gate === m.gateProj && sites.memos === ctx.memos ? sites.state : byM.get(m.gateProj);
  if (st == null || st.h.length !== n) {
    // h and the changed units in the context's wasm memory: the SwiGLU runs there and the down
    // projection's walk reads its input there (either profile)
    const heap = wasmHeapOf(ctx);
    const a = heap?.carve({ h: [Float32Array, n], changed: [Int32Array, n] }) ?? null;
    const h = a !== null ? a.h : new Float32Array(n);
    const changed = a !== null ? a.changed : new Int32Array(n);
    st = {
      h, hBits: new Uint32Array(h.buffer, h.byteOffset, n), valid: false, changed, ver: -1,
      heap: a !== null ? heap : null, hAt: a !== null ? a.h.byteOffset : -1, changedAt: a !== null ? a.changed.byteOffset : -1,
      goAt: new ViewAt(), rowsAt: new ViewAt(),
    };
    byM.set(m.gateProj, st);
  }
  if (sites !== undefined) { sites.memos = ctx.memos; sites.gate = m.gateProj; sites.state = st; }
  let t0 = phaseStart();
  // gate and up read the same x: one stacked matrix [gate; up] (stack-rows.ts), unit i at rows i, n + i
  const stack = sites !== undefined
    ? rowStackAt(sites.stack, ctx.plans, m, gateUpParts, m.gateProj, m.upProj)
    : rowStackOf(ctx.plans, gateUpParts(ctx.plans, m));
  const gus = stack === null ? null
    : deltaLinear(ctx, stack.m, x, 0, null, 0, stats, io?.share ?? { stamp: nextInputStamp() }, 'ffn.gateUp', sites?.gateUp);
  t0 = phaseEnd('ffn.gateUp', t0);
  if (gus === null) { st.valid = false; return null; }
  const h = st.h;
  const go = gus.y; // gate at i, up at n + i
  const form = ctx.siluForm;
  let nch = 0;
  let cand: Int32Array | null = null;
  if (!st.valid || gus.full || st.ver !== gus.version - 1) swigluAll(ctx, go, h, n, form);
  else {
    const hb = st.hBits;
    const changed = st.changed;
    const f32Profile = ctx.profile === 'f32'; // act is the identity
    const rows = gus.rows;
    const nr = gus.nRows;
    const heap = ctx.memos.wasmHeap;
    // (the addresses kept with the state: FfnDeltaState)
    const goAt = st.heap !== null ? st.goAt.of(st.heap, go) : -1;
    const rowsAt = st.heap !== null ? st.rowsAt.of(st.heap, rows) : -1;
    if (heap != null && st.heap === heap && goAt >= 0 && rowsAt >= 0) {
      // the same loop in wasm (wasm-kernels.ts swiglu; swigluBf16 with bf16's casts)
      nch = heap.swigluAt(nr, rowsAt, n, goAt, st.hAt, st.changedAt, form, !f32Profile);
    } else if (f32Profile) {
      for (let t = 0; t < nr; t++) {
        const r = rows[t];
        const i = r < n ? r : r - n;
        const gi = go[i];
        const old = hb[i];
        h[i] = (gi === 0 ? gi : silu32(gi, form)) * go[n + i];
        if (hb[i] !== old) changed[nch++] = i; // changed bits
      }
    } else {
      for (let t = 0; t < nr; t++) {
        const r = rows[t];
        const i = r < n ? r : r - n;
        const gi = go[i];
        const old = hb[i];
        h[i] = ctx.act(f32((gi === 0 ? gi : ctx.act(silu32(gi, form))) * go[n + i]));
        if (hb[i] !== old) changed[nch++] = i;
      }
    }
    cand = changed;
  }
  st.ver = gus.version;
  st.valid = true;
  t0 = phaseEnd('ffn.act', t0);
  const ds = deltaLinear(ctx, m.downProj, h, 0, cand, nch, stats, undefined, 'ffn.down', sites?.down);
  let y = out;
  if (ds === null) linear(ctx, m.downProj, h, 'sparse', { stats, out });
  else if (io) y = ds.y; // (a copy of 2,560 floats per layer and token at qwen3.5-4b, saved)
  else out.set(ds.y);
  if (io) io.outSource = ds;
  phaseEnd('ffn.down', t0);
  return y;
}

/**
 * A decode step's exchange with the incremental SwiGLU: in, the input's stamp and changes
 * (delta.ts DeltaShare); out, the versioned vector the output equals (OutputSource), or null
 * when the step cannot tell.
 */
export interface SwigluIo {
  share?: DeltaShare;
  outSource: OutputSource | null;
  /** The layer's memos of what its step looks up (FfnSites). */
  sites?: FfnSites;
}

/**
 * A decode layer's memos of what its SwiGLU looks up at every step: the gate/up stack
 * (StackSite), the two projections' delta states (DeltaSite) and h's state (the gate matrix and
 * the memos it belongs to), kept while those stay the same objects.
 */
export interface FfnSites {
  stack: StackSite;
  gateUp: DeltaSite;
  down: DeltaSite;
  memos: ExecMemos | null;
  gate: Matrix | null;
  state: FfnDeltaState | null;
}

export function newFfnSites(): FfnSites {
  return { stack: newStackSite(), gateUp: newDeltaSite(), down: newDeltaSite(), memos: null, gate: null, state: null };
}

/**
 * SwiGLU MLP: down(silu(gate(x)) ⊙ up(x)), into `out` when given (else a fresh array). `io` (a
 * decode step's incremental exchange) gets outSource set (null unless the incremental form ran);
 * with `io` the result may instead be the incremental form's own output vector, valid until the
 * next call on the same down projection: read it, do not write it.
 */
export function swiglu(
  ctx: ExecNumericContext, m: { gateProj: Matrix; upProj: Matrix; downProj: Matrix }, x: Float32Array,
  path: MatmulPath, stats?: MatmulStats, out?: Float32Array, io?: SwigluIo,
): Float32Array {
  if (io) io.outSource = null;
  const n = m.gateProj.rows;
  if (m.upProj.rows !== n) {
    throw new ChipcError('exec.bad-weights', `SwiGLU: up_proj has ${m.upProj.rows} rows but gate_proj has ${n}`);
  }
  const scratch = ctx.plans.ffnScratch;
  if (scratch.g.length < n) ctx.plans.ffnScratch = { g: new Float32Array(n), u: new Float32Array(n) };
  const { g: gScratch, u: uScratch } = ctx.plans.ffnScratch;
  // g, u and h live only inside this call: scratch of ctx.plans (no re-entrancy), sliced to the width.
  if (path === 'sparse' && ctx.order.kind === 'sequential' && !m.gateProj.dense && !m.upProj.dense && !m.downProj.dense) {
    const y = swigluDelta(ctx, m, x, stats, out ?? new Float32Array(m.downProj.rows), io);
    if (y !== null) return y;
  }
  let t0 = phaseStart();
  const gr = linearEx(ctx, m.gateProj, x, path, { stats, out: gScratch.subarray(0, n) });
  const ur = linearEx(ctx, m.upProj, x, path, { stats, out: uScratch.subarray(0, n) });
  const g = gr.out;
  const u = ur.out;
  t0 = phaseEnd('ffn.gateUp', t0);
  if (gr.usedSparse && ur.usedSparse && !m.gateProj.dense && !m.upProj.dense && !m.downProj.dense) {
    // Rows empty in both gate and up: g = u = E, the call's one empty-row value (±0, the same for
    // both since they read the same x), so h = act(fl(act(silu(E))·E)) = act(fl(E·E)) = +0
    // (silu(±0) = ±0, (±0)·(±0) with equal signs = +0). Only the union U of their non-empty rows
    // is computed; the down projection reads h from a per-matrix buffer that is +0 outside U.
    const U = nonEmptyRowUnion(ctx.plans, m.gateProj, m.upProj);
    const h = supportBufferOf(ctx.plans, U, n);
    for (let t = 0; t < U.length; t++) {
      const i = U[t];
      const gi = g[i];
      h[i] = ctx.act(f32((gi === 0 ? gi : ctx.act(silu32(gi, ctx.siluForm))) * u[i]));
    }
    t0 = phaseEnd('ffn.act', t0);
    const y = linearOnSupport(ctx, m.downProj, h, U, U.length, path, out ?? new Float32Array(m.downProj.rows), stats);
    phaseEnd('ffn.down', t0);
    return y;
  }
  const h = g;
  for (let i = 0; i < n; i++) h[i] = ctx.act(f32(ctx.act(silu32(g[i], ctx.siluForm)) * u[i]));
  t0 = phaseEnd('ffn.act', t0);
  const y = linear(ctx, m.downProj, h, path, { stats, out });
  phaseEnd('ffn.down', t0);
  return y;
}

/** Float32 softmax with max subtraction: p_i = fl(fl(exp(fl(x_i − max))) · fl(1/Σ)). */
export function softmax32(ctx: ExecNumericContext, x: Float32Array): Float32Array {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) {
    if (Number.isNaN(x[i])) m = NaN;
    else if (x[i] > m) m = x[i];
  }
  const e = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) e[i] = exp32(f32(x[i] - m));
  const inv = f32(1 / ctx.sum(e, 0, 1, e.length));
  for (let i = 0; i < x.length; i++) e[i] = f32(e[i] * inv);
  return e;
}

/** Indices of the k largest values, descending; ties: lowest index first; NaN ranks below everything. */
export function topK(p: Float32Array, k: number): number[] {
  if (!Number.isInteger(k) || k < 1 || k > p.length) {
    throw new ChipcError('exec.bad-config', `top-k: k = ${k} must be in [1, ${p.length}]`);
  }
  const idx = Array.from({ length: p.length }, (_, i) => i);
  const key = (i: number): number => (Number.isNaN(p[i]) ? -Infinity : p[i]);
  idx.sort((a, b) => (key(b) - key(a)) || (a - b));
  return idx.slice(0, k);
}

export interface MoeRouting {
  experts: number[];
  weights: number[];
}

/** Router of an MoE block: selected experts (top-k order) and their (optionally renormalised) weights. */
export function moeRoute(
  ctx: ExecNumericContext, w: MoeMlpWeights, x: Float32Array, k: number, normTopk: boolean, path: MatmulPath,
  stats?: MatmulStats,
): MoeRouting {
  const logits = linear(ctx, w.gate, x, path, { stats });
  const p = softmax32(ctx, logits);
  const experts = topK(p, k);
  const tw = new Float32Array(experts.map((e) => p[e]));
  if (normTopk) {
    const s = ctx.sum(tw, 0, 1, tw.length);
    for (let i = 0; i < tw.length; i++) tw[i] = f32(tw[i] / s);
  }
  return { experts, weights: Array.from(tw, (v) => ctx.act(v)) };
}

/** MoE feed-forward (see the module header for the exact order). */
export function moeForward(
  ctx: ExecNumericContext, w: MoeMlpWeights, x: Float32Array, k: number, normTopk: boolean, H: number,
  path: MatmulPath, stats?: MatmulStats,
): Float32Array {
  const route = moeRoute(ctx, w, x, k, normTopk, path, stats);
  const order = route.experts.map((e, i) => ({ e, wt: route.weights[i] })).sort((a, b) => a.e - b.e);
  const acc = new Float32Array(H); // torch.zeros: +0
  for (const { e, wt } of order) {
    const ex = w.experts[e];
    if (!ex) throw new ChipcError('exec.bad-weights', `MoE router selected expert ${e}, but only ${w.experts.length} experts exist`);
    const y = swiglu(ctx, ex, x, path, stats);
    for (let i = 0; i < H; i++) acc[i] = ctx.act(f32(acc[i] + ctx.act(f32(y[i] * wt))));
  }
  const sg = ctx.act(sigmoid32(linear(ctx, w.sharedExpertGate, x, path, { stats })[0]));
  const sh = swiglu(ctx, w.sharedExpert, x, path, stats);
  for (let i = 0; i < H; i++) acc[i] = ctx.act(f32(acc[i] + ctx.act(f32(sg * sh[i]))));
  return acc;
}
