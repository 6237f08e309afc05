/**
 * Incremental decode: a matmul's output kept across single-token steps and recomputed only where
 * its input changed (sparse path, sequential order). Compiled circuits change few residual dims
 * per token (the anchors keep every RMSNorm factor constant, docs/numerics.md), so a decode step
 * mostly repeats the previous one; the rows whose inputs repeat bit for bit keep their values.
 *
 * Exactness. Under the scatter form's precondition (matmul-argmax.ts scatterInto: CSR matrix with
 * sorted rows and finite weights, no dense −0 rows, finite input, maxRowNnz < cols − negTotal), row r of
 * y = x·Wᵀ as linear() computes it equals
 *     y_r = act( fold over r's stored entries in ascending column c, from +0, of
 *                acc ← fl(acc + p) for each p = fl(w_rc·x_c) ≠ 0 )
 * (+0 when no product is non-zero): a pure function of the x_c of r's stored columns. So when the
 * precondition holds for the previous input and for the current one, a row none of whose stored
 * columns changed (bit pattern) has the same value, and only the rows of the changed columns are
 * recomputed with the formula above. The state is a memo of y for the input bits it records:
 * correct for any caller using the same numeric context (states are kept per context).
 *
 * Exact rows: update instead of refold. A row's fold is the exact real sum Σ_c w_rc·x_c whenever
 * every product and every partial sum is a float32, and then the new value is the old one plus
 * Σ over the changed columns of w·(x_new − x_old): the cost of a changed column is its stored
 * entries, not the full rows it reaches. A row is *exact* when, for g = a lower bound on the
 * lowest set bit (the exponent of its last significant bit) of every non-zero product w·x in it,
 *     g ≥ −149,   max(P, N) < T = min(2^(24+g), 2^126),
 * P and N the sums of the magnitudes of its positive and of its negative products (so
 * max(P, N) = (S + |yD|)/2 for S = Σ|w·x| = P + N and the exact sum yD = Σ w·x = P − N). Each
 * product, and each partial sum of the fold (in any order: some positive products less some
 * negative ones, so within [−N, P]), is then an integer multiple of 2^g below 2^(24+g) in
 * magnitude — a float32 (an integer below 2^24, which a float32 significand holds, times 2^g,
 * g ≥ −149, below 2^126) — so every
 * rounding in the fold is exact and it equals the exact sum (+0 when that is 0: the fold starts at
 * +0 and exact cancellation gives +0). The state keeps, per tracked row, yD and S in double, g
 * and T. A changed column updates an exact row only when its new product p has
 * lowbit(p) ≥ g and |p| < T (lowbit(w·x) = lowbit(w) + lowbit(x): odd × odd is odd); otherwise
 * the row is refolded from scratch, which recomputes yD, S and g. Under those checks every value
 * the update touches is a multiple of 2^g below 2^(45+g) (at most 2^20 terms each below
 * 2^(24+g), S below 2T), exact in double, and the row stays exact iff the updated S + |yD| < 2T:
 * checked after each column's update (a row that reaches the bound is refolded, even if a later
 * column would bring it back), so each accepted update writes its exact sum to y at once and no
 * pass over the reached rows is needed. Rows that are not exact are refolded. (The bound on
 * max(P, N) rather than on S matters where products cancel: the chip's RAM value rows, with S of
 * 1,205–1,867 against T = 2^10, were refolded at every change; most now take the update.)
 *
 * Bounded rows: the same update without a per-row record. The state keeps, per
 * column c, M_c ≥ every |x_c| and L_c ≤ the lowest set bit of every non-zero x_c it has seen
 * since it was built (widened when a changed column's new value falls outside them), and per row
 *     B_r ≥ Σ_c |w_rc|·M_c   (each addition rounded to nearest, then scaled by 1 + 2^−50, so B_r
 *                             stays an upper bound of the real sum however many widenings come),
 *     G_r = min over r's stored w_rc ≠ 0 with a seen column of (lowbit(w_rc) + L_c).
 * A row is *bounded* while G_r ≥ −149 and B_r < T(G_r) = min(2^(24+G_r), 2^126) (or it has no
 * such entry). Then for every input within the column bounds — the old one, the new one and each
 * mix of the two — S ≤ B_r < T and every product is a multiple of 2^(G_r): the row is exact with
 * g = G_r, its fold is the exact sum, and that sum is a float32. So a changed column updates a
 * bounded row by y_r ← y_r + (w·x_new − w·x_old) in double, with no check: both products are
 * exact (24 × 24 bits), their difference and the new sum are multiples of 2^(G_r) below
 * 2^(26+G_r) (exact in double), and the new sum is the exact sum of a mixed input (a float32).
 * The difference is computed as w·(x_new − x_old), once per column: |w|·M_c ≤ B_r < 2^(24+G_r)
 * and G_r ≤ lowbit(w) + L_c give M_c < 2^(24+L_c), so x_new − x_old is a multiple of 2^(L_c)
 * below 2^(25+L_c), exact in double, and w times it (24 × 25 bits) is exact in double. It
 * is never −0: y starts as a fold from +0 (never −0) and +0 + (−0) = +0. A widening that breaks a
 * row's bound makes it a tracked row for good; it is refolded in that call (which builds its
 * record).
 *
 * The profile's cast. Every update and refold above works on the uncast fold (`acc`: y itself in
 * f32). In bf16, y_r = act(acc_r) is written for each row a call reaches, after its updates and
 * refolds, and for every row at a fresh fold: a pure function of the row's sum, which the state
 * keeps exact.
 *
 * The pass over the candidates, or its walks, run as WebAssembly functions where their arrays are
 * in the context's wasm memory (wasm-kernels.ts), over acc in either profile: the same operations
 * in the same order, so the same bits, marks and lists.
 */
import type { Matrix } from '../model/weights.ts';
import type { DeltaRole, MatmulStats } from './matmul.ts';
import { cscPlanOf, sparsePlanOf } from './matmul-plans.ts';
import { siluFormula, type ExecNumericContext } from './numeric.ts';
import type { CscPlan, DeltaKernel, DeltaLinearState, ExecMemos, ExecPlans, SparsePlan, WeightLows } from './plans.ts';
import { carveArrays } from './arena.ts';
import { BOUND_INFLATE, boundedRow, boundOf, exactRow, lowbit32, NO_LOW, weightLows } from './delta-bounds.ts';
import { addressIn, deltaAtOf, ViewAt, WasmHeap } from './wasm-heap.ts';
import { TRACK, TRACK_WORDS } from './wasm-layout.ts';

export type { DeltaLinearState } from './plans.ts';

const f32 = Math.fround;


/**
 * What a caller knows of the input vector: `stamp` names it (a fresh `nextInputStamp()` per
 * vector, not mutated while it is used). (Matrices that read the same vector are stacked into one
 * instead: stack-rows.ts.)
 */
export interface DeltaShare {
  stamp: number;
  /**
   * The producer's account of how the input changed: every column that may differ between the
   * vector stamped `prevStamp` and this one is in changed[0..nChanged). A matmul whose previous
   * input was stamped `prevStamp` takes them as its candidates instead of scanning every column.
   */
  since?: InputChanges | null;
}

/** A superset of the columns where the vector stamped `prevStamp` and the current one differ. */
export interface InputChanges {
  prevStamp: number;
  changed: Int32Array;
  nChanged: number;
}

/**
 * A producer's output as a versioned vector (a DeltaLinearState is one): each call that may change
 * it bumps `version`, and unless `full`, rows[0..nRows) holds every index where it may differ from
 * the previous version. A consumer that saw version v of the same source knows the changes when
 * the version is v + 1 (those rows) or v (none); otherwise any index may have changed.
 */
export interface OutputSource {
  readonly version: number;
  readonly full: boolean;
  readonly rows: Int32Array;
  readonly nRows: number;
}

let inputStamps = 0;
/** A fresh stamp for an input vector (DeltaShare). */
export function nextInputStamp(): number {
  return ++inputStamps;
}


/** The largest call epoch a mark holds (14 bits); then every mark is reset to its tracked bit. */
const MAX_EPOCH = (1 << 14) - 1;

/**
 * Builds the column records and the row bounds from the current input (after a full recompute),
 * marks each row bounded or tracked and writes each bounded row's fold to y (f32; the tracked rows
 * are refolded with their records after), in one walk of the CSC's entries of the non-zero input
 * columns. Row r's products reach it in ascending column order, as in a walk of its CSR row, so its
 * fold, its bound (B_r ← (B_r + |w|·M_c)·(1 + 2^−50)) and its lowest bit see the same entries in
 * the same order; an entry whose input is ±0 feeds none of them, so those columns are not walked,
 * and a row that no entry reaches keeps its +0 y, bound, NO_LOW − G and mark (bounded: at a prompt's
 * first position a fresh process reaches 120,000 of the layers' 395,000 rows, and the pages of the
 * others are not touched). Precondition: those four +0 for every row. Each reached row is listed in
 * `list` at its first entry; the rows to refold are written to `refold` and their count returned.
 * wasm-fold-kernel.ts foldColumns is this function, operation for operation.
 */
function foldByColumns(
  st: DeltaLinearState, colEnd: number, x: Float32Array, xOff: number, xb: Uint32Array, colPtr: Uint32Array,
  rowIdx: Uint16Array | Uint32Array, values: Float32Array, wLowCsc: WeightLows, y: Float32Array, list: Int32Array, refold: Int32Array,
): number {
  const { colVals, colInts, rowBound, rowLowGap, mark } = st;
  let n = 0;
  for (let c = 0; c < colEnd; c++) {
    const v = x[xOff + c];
    const low = lowbit32(xb[c]);
    const av = Math.abs(v);
    colVals[4 * c + 1] = av;
    colInts[4 * c + 2] = v === 0 ? NO_LOW : low;
    if (v === 0) continue;
    for (let k = colPtr[c]; k < colPtr[c + 1]; k++) {
      const w = values[k];
      if (w === 0) continue;
      const r = rowIdx[k];
      const p = f32(w * v);
      if (p !== 0) y[r] = y[r] + p;
      const B = rowBound[r];
      if (B === 0) list[n++] = r;
      rowBound[r] = (B + Math.abs(w) * av) * BOUND_INFLATE;
      const gap = NO_LOW - (wLowCsc[k] + low);
      if (gap > rowLowGap[r]) rowLowGap[r] = gap;
    }
  }
  let nf = 0;
  for (let t = 0; t < n; t++) {
    const r = list[t];
    if (boundedRow(rowBound[r], NO_LOW - rowLowGap[r])) continue;
    mark[r] = 1;
    refold[nf++] = r;
  }
  return nf;
}

/** The memo of m in ctx (ctx.memos.deltaStates), made on first use. */
function stateOf(ctx: ExecNumericContext, m: Matrix): DeltaLinearState {
  const byM = ctx.memos.deltaStates;
  let st = byM.get(m);
  if (st === undefined) {
    // what the wasm kernels read and write (the column records, the rows' marks, bounds and lowest
    // bits, y, the reached rows, the changed columns, the tracked rows' slots, records and refold
    // list; in bf16 the uncast sums too): in the context's wasm memory where they can run there
    // (rows that a 16-bit index names), else in one buffer (arena.ts: only the pages written
    // fault; the exact-row records then grow as slots are taken)
    const bf16 = ctx.profile !== 'f32';
    const w = m.rows <= 0x10000 ? walkArraysOf(ctx, m.rows, m.cols, bf16) : null;
    const r = w ?? {
      ...carveArrays({
        colBits: [Uint32Array, 4 * (m.cols + 1)], changed: [Int32Array, m.cols], y: [Float32Array, m.rows], rows: [Int32Array, m.rows],
        mark: [Uint16Array, m.rows], rowSlot: [Int32Array, m.rows], refold: [Int32Array, m.rows],
        rowBound: [Float64Array, m.rows], rowLowGap: [Uint16Array, m.rows], acc: [Float32Array, bf16 ? m.rows : 0],
      }, ctx.memos.recordArena),
      rowExact: new Float64Array(4 * 16),
    };
    const colBits = r.colBits;
    st = {
      colBits, colVals: new Float32Array(colBits.buffer, colBits.byteOffset, colBits.length),
      colInts: new Int32Array(colBits.buffer, colBits.byteOffset, colBits.length), negTotal: 0, y: r.y, acc: bf16 ? r.acc : r.y, valid: false, full: false,
      rows: r.rows, nRows: 0, mark: r.mark, epoch: 0, changed: r.changed, nChanged: 0, usable: 0,
      version: 0,
      rowExact: r.rowExact, rowSlot: r.rowSlot, nSlots: 0, refold: r.refold, nUpdated: 0, stamp: -1,
      rowBound: r.rowBound, rowLowGap: r.rowLowGap, nBounded: 0, inSrc: null, inOff: 0, inView: null, inAt: -1,
      plan: null, csc: null, lows: null, planCsr: undefined, planDense: undefined, kernel: null,
    };
    byM.set(m, st);
  }
  return st;
}

/** The context's wasm kernel memory (wasm-kernels.ts), made on first use; null when off or unavailable. */
export function wasmHeapOf(ctx: ExecNumericContext): WasmHeap | null {
  let heap = ctx.memos.wasmHeap;
  if (heap === undefined) heap = ctx.memos.wasmHeap = WasmHeap.create(ctx.tuning.wasmHeapMiB, siluFormula);
  return heap;
}

/**
 * A state's column records, changed-column list, y, reached-row list, row marks, bounds and lowest
 * bits, and the tracked rows' slots, exact-row records (4 float64 a slot, slots 1 … rows: room for
 * every row, so they never grow; only the pages of the slots taken are touched) and refold list,
 * carved from the context's wasm memory, or null when they do not fit.
 */
function walkArraysOf(ctx: ExecNumericContext, rows: number, cols: number, bf16: boolean): {
  colBits: Uint32Array; changed: Int32Array; y: Float32Array; rows: Int32Array; mark: Uint16Array; rowSlot: Int32Array; refold: Int32Array;
  rowExact: Float64Array; rowBound: Float64Array; rowLowGap: Uint16Array; acc: Float32Array;
} | null {
  const heap = wasmHeapOf(ctx);
  return heap === null ? null : heap.carve({
    colBits: [Uint32Array, 4 * (cols + 1)], changed: [Int32Array, cols], y: [Float32Array, rows], rows: [Int32Array, rows], mark: [Uint16Array, rows],
    rowSlot: [Int32Array, rows], refold: [Int32Array, rows], rowExact: [Float64Array, 4 * (rows + 1)],
    rowBound: [Float64Array, rows], rowLowGap: [Uint16Array, rows], acc: [Float32Array, bf16 ? rows : 0],
  });
}

/**
 * The state's wasm kernels for its plan `csc` (DeltaKernel): the plan's rows and weights (copies
 * unless it was built in this heap), the walk list, the listed columns' values for the tracked
 * rows' updates (which take a weight's low bit from its bits), and the track block
 * (wasm-kernels.ts TRACK) naming the state's slots, records and refold list, in the heap that
 * holds the state's records, marks, y, rows and those; null when they are not there, the plan's
 * rows are 32-bit, or the rest does not fit.
 */
function kernelOf(ctx: ExecNumericContext, st: DeltaLinearState, csc: CscPlan, cols: number): DeltaKernel | null {
  const heap = ctx.memos.wasmHeap;
  if (heap == null || st.acc.buffer !== heap.buffer || st.rowExact.buffer !== heap.buffer || !(csc.rowIdx instanceof Uint16Array)) return null;
  const nnz = csc.values.length;
  // the plan's own arrays where it was built in this heap (cscPlanOf), else copies
  const copy = csc.rowIdx.buffer !== heap.buffer || csc.values.buffer !== heap.buffer;
  const a = heap.carve({
    rowIdx: [Uint16Array, copy ? nnz : 0], values: [Float32Array, copy ? nnz : 0],
    walkList: [Int32Array, 4 * cols], walkX: [Float64Array, 2 * cols], walkLow: [Int32Array, cols], io: [Int32Array, 8],
    track: [Int32Array, TRACK_WORDS],
  });
  if (a === null) return null;
  if (copy) {
    a.rowIdx.set(csc.rowIdx);
    a.values.set(csc.values);
  }
  const t = a.track;
  t[TRACK.slotAt] = st.rowSlot.byteOffset;
  t[TRACK.exactAt] = st.rowExact.byteOffset;
  t[TRACK.refoldAt] = st.refold.byteOffset;
  t[TRACK.walkXAt] = a.walkX.byteOffset;
  t[TRACK.walkLowAt] = a.walkLow.byteOffset;
  const rowIdx = copy ? a.rowIdx : csc.rowIdx, values = copy ? a.values : csc.values;
  const at = deltaAtOf({
    colBits: st.colBits, rowIdx, values, mark: st.mark, y: st.acc, rows: st.rows, track: t, changed: st.changed, io: a.io, walkList: a.walkList,
  });
  // (each field named, one shape for every kernel: a spread of `a` cost the decode 3.8 µs per token)
  return {
    heap, at, candAt: new ViewAt(), yAt: addressIn(heap, st.y), rowIdx, values,
    walkList: a.walkList, walkDx: new Float64Array(a.walkList.buffer, a.walkList.byteOffset, 2 * cols),
    walkX: a.walkX, walkLow: a.walkLow, io: a.io, track: t,
    // a matrix of short columns (the chip's down and out projections) is not listed (ExecTuning)
    listed: nnz >= ctx.tuning.wasmMinEntriesPerColumn * csc.usedCols,
  };
}

/**
 * The lowest set bits of a matrix's stored weights in CSR and CSC (cscPlanOf) order, kept per CSR
 * values array in plans.weightLowbits (new storage, new bits).
 */
function lowbitsOf(plans: ExecPlans, csrValues: Float32Array, cscValues: Float32Array): { csr: WeightLows; csc: WeightLows } {
  const weightLowbits = plans.weightLowbits;
  let lows = weightLowbits.get(csrValues);
  if (lows === undefined) {
    lows = { csr: weightLows(csrValues), csc: weightLows(cscValues) };
    weightLowbits.set(csrValues, lows);
  }
  return lows;
}

function signSet(b: number): number {
  return b >>> 31;
}

/**
 * Refolds row r from the current input: acc_r = the fold (module comment; both callers then write
 * y_r = act(acc_r) for every row they reached, this one included) and, for the exact-row update,
 * the row's exact sum, Σ|w·x|, the lowest set bit of its non-zero products and whether it is
 * exact.
 */
function refoldRow(
  st: DeltaLinearState, r: number, rowPtr: Uint32Array | Int32Array, colIdx: Uint32Array | Int32Array,
  values: Float32Array, x: Float32Array, xOff: number, xb: Uint32Array, wLowCsr: WeightLows,
): void {
  let acc = 0;
  let exactSum = 0;
  let sumAbs = 0;
  // g: the lowest set bit over the non-zero products, in the same pass (the rows refolded at every
  // step, the chip's RAM value rows, mostly needed it, and a second pass over the row found it)
  let g = 32767;
  for (let k = rowPtr[r]; k < rowPtr[r + 1]; k++) {
    const c = colIdx[k];
    const xv = x[xOff + c];
    if (xv === 0) continue;
    const w = values[k];
    const p = f32(w * xv);
    if (p !== 0) acc = f32(acc + p);
    const pd = w * xv; // exact in double (24 × 24 bits)
    if (pd === 0) continue;
    exactSum += pd;
    sumAbs += Math.abs(pd);
    const lb = lowbit32(xb[c]) + wLowCsr[k];
    if (lb < g) g = lb;
  }
  st.acc[r] = acc;
  // exactSum and sumAbs are exact when the row is exact (same argument as the update's): then
  // the positive and the negative products add up to P, N < T, so S = P + N < 2T, a multiple of
  // 2^g below 2^(25+g), and every partial sum of either in double is exact
  const bound = g >= -149 ? boundOf(g) : 0;
  let s = st.rowSlot[r];
  if (s === 0) {
    s = st.rowSlot[r] = ++st.nSlots;
    if (4 * s + 4 > st.rowExact.length) {
      const grown = new Float64Array(2 * st.rowExact.length);
      grown.set(st.rowExact);
      st.rowExact = grown;
    }
  }
  const e = st.rowExact;
  e[4 * s] = exactSum;
  e[4 * s + 1] = sumAbs;
  e[4 * s + 2] = exactRow(sumAbs, exactSum, bound) ? bound : 0;
  e[4 * s + 3] = g;
}

/**
 * A call site's memo of the delta state of the matrix it walks (a decode layer's projection):
 * deltaLinear takes the state from it while the matrix and the context's memos are the ones it
 * was found for, instead of looking it up (stateOf, a WeakMap) at every call. A state is made once
 * per matrix and memos and never replaced, so the memo stays right.
 */
export interface DeltaSite {
  memos: ExecMemos | null;
  m: Matrix | null;
  st: DeltaLinearState | null;
}

export function newDeltaSite(): DeltaSite {
  return { memos: null, m: null, st: null };
}

/**
 * y = x[xOff .. xOff+cols)·Wᵀ, maintained incrementally (see the module comment); returns the
 * state (y in `state.y`, which stays valid until the next call for this matrix and context) or null
 * when the form does not apply (then nothing is computed and the caller runs linear()).
 * `cand` (with nCand), when given, lists every input column that may differ from the previous
 * call's input (e.g. the rows the producer recomputed); otherwise all columns are compared.
 * `role` names the matrix for the work breakdown (stats.deltaByRole); `site`, the caller's memo
 * of the state (DeltaSite).
 */
export function deltaLinear(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, xOff: number, cand: Int32Array | null, nCand: number,
  stats?: MatmulStats, share?: DeltaShare, role?: DeltaRole, site?: DeltaSite,
): DeltaLinearState | null {
  if (ctx.order.kind !== 'sequential' || xOff + m.cols > x.length) return null;
  let st: DeltaLinearState;
  if (site !== undefined && site.m === m && site.memos === ctx.memos) st = site.st as DeltaLinearState;
  else {
    st = stateOf(ctx, m);
    if (site !== undefined) { site.memos = ctx.memos; site.m = m; site.st = st; }
  }
  const stamp = share?.stamp ?? -1;
  const since = share?.since;
  if (cand === null && since && stamp !== -1 && st.valid && st.stamp !== -1 && st.stamp === since.prevStamp) {
    cand = since.changed;
    nCand = since.nChanged;
    if (stats) stats.deltaShared++;
  }
  st.stamp = -1; // set again below when the call succeeds
  const r = deltaLinearIn(ctx, m, st, x, xOff, cand, nCand, stats, role);
  if (r !== null) st.stamp = stamp;
  return r;
}

/**
 * deltaLinearIn's first call on a state (or after it lost validity): every non-empty row folded
 * from scratch and every column's record set. A function of its own so that the incremental form's
 * optimised code is compiled from feedback of incremental calls only (the first step of a fresh
 * executor runs this form for every matrix; compiled with it, the incremental code was thrown
 * away at the next step for want of feedback: a visible part of a cold run's first tokens).
 */
function foldFresh(
  ctx: ExecNumericContext, m: Matrix, st: DeltaLinearState, plan: SparsePlan, csc: CscPlan, x: Float32Array, xOff: number,
  xb: Uint32Array, wLowCsr: WeightLows, wLowCsc: WeightLows, bf16: boolean, stats?: MatmulStats,
): DeltaLinearState | null {
  const cols = m.cols;
  const { rowPtr, colIdx, values } = plan.csr;
  // A state never computed keeps the records of the columns past the last one with an entry as
  // allocated (+0), but for the input bits of the non-zero inputs among them: no row reads their
  // M_c or L_c, and their walks are empty (start and end 0; the first such column's start is the
  // last used one's end, above its own end of 0). The chip's down projections use 816 and fewer
  // of their 9,216 columns: the records of the rest were fresh pages written in the first step.
  const colEnd = st.version === 0 ? csc.usedCols : cols;
  // the input's sign count and finiteness, and the column records' bits and walk starts: in wasm
  // where the input (st.inAt, deltaLinearIn) and the starts are in its memory (a state with
  // kernels has all its records there: walkArraysOf carves them together, kernelOf asks for them)
  const kern = st.kernel;
  let negTotal = 0;
  if (kern !== null && st.inAt >= 0 && addressIn(kern.heap, csc.colPtr) >= 0) {
    negTotal = kern.heap.foldInputs(cols, colEnd, x, xOff, st.colBits, csc.colPtr);
    if (negTotal < 0) return null;
  } else {
    for (let c = 0; c < cols; c++) {
      const v = x[xOff + c];
      if (v - v !== 0) return null;
      negTotal += signSet(xb[c]);
    }
    fillColumnRecords(st.colBits, st.colInts, xb, csc.colPtr, cols, colEnd);
  }
  if (csc.maxRowNnz >= cols - negTotal) return null;
  const acc = st.acc;
  if (st.version !== 0) acc.fill(0); // (a state never computed holds +0 already: its pages stay untouched)
  // bounded rows folded alone, the others refolded with their records; in wasm where the state
  // has kernels (it reads the column records' bits and entry ranges)
  if (st.version !== 0) { st.rowBound.fill(0); st.rowLowGap.fill(0); st.mark.fill(0); }
  const refold = st.refold;
  const nf = kern !== null
    ? kern.heap.foldColumns(colEnd, st.colBits, kern.rowIdx, kern.values, acc, st.rowBound, st.rowLowGap, st.mark, st.rows, refold)
    : foldByColumns(st, colEnd, x, xOff, xb, csc.colPtr, csc.rowIdx, csc.values, wLowCsc, acc, st.rows, refold);
  for (let i = 0; i < nf; i++) refoldRow(st, refold[i], rowPtr, colIdx, values, x, xOff, xb, wLowCsr);
  st.nBounded = m.rows - nf;
  // bf16: every row's output is its cast sum (a row with no stored entry: bf(+0) = +0)
  if (bf16) { const y = st.y; for (let r = 0; r < m.rows; r++) y[r] = ctx.act(acc[r]); }
  st.negTotal = negTotal;
  st.valid = true;
  st.full = true;
  st.nRows = 0;
  st.nChanged = 0;
  st.nUpdated = 0;
  st.version++;
  if (stats) { stats.sparse++; stats.delta++; }
  return st;
}

/**
 * foldFresh's column records: the input bits of columns below colEnd and of the non-zero inputs
 * past it (the others hold +0 already), and the walks' starts up to colEnd (foldFresh).
 */
function fillColumnRecords(colBits: Uint32Array, colInts: Int32Array, xb: Uint32Array, colPtr: Uint32Array, cols: number, colEnd: number): void {
  // (one loop over the bits, every test made from its first column: a second loop's, first run
  // after the JIT had compiled the first, had that code thrown away)
  for (let c = 0; c < cols; c++) {
    const b = xb[c];
    if (c < colEnd || b !== 0) colBits[4 * c] = b;
  }
  fillColumnStarts(colInts, colPtr, colEnd);
}

function fillColumnStarts(colInts: Int32Array, colPtr: Uint32Array, colEnd: number): void {
  for (let c = 0; c <= colEnd; c++) colInts[4 * c + 3] = colPtr[c];
}

/**
 * A tracked row's exact update by one entry (module comment): the row's record at e[s4 … s4+3]
 * takes w·x_new − w·x_old and y_r its exact sum; true when the checks fail (the row is then
 * refolded after the pass, which rewrites its record and y). The update is written before the
 * checks, and the checks are evaluated whole (no short circuit), so every operation of this path
 * runs from the first calls on: an exact update first taken after the JIT had compiled the walk
 * (the RAM value rows' records become exact a few tokens into a run) had that code thrown away
 * ("insufficient type feedback").
 */
function trackedUpdate(e: Float64Array, s4: number, yv: Float32Array, r: number, w: number, xn: number, xo: number, wLow: number, lx: number): boolean {
  const T = e[s4 + 2];
  const pn = w * xn;
  const po = w * xo;
  const v = (e[s4] += pn - po);
  const sAbs = (e[s4 + 1] += Math.abs(pn) - Math.abs(po));
  yv[r] = v + 0; // exact when accepted: a float32 (an exact 0 folds to +0: −0 + 0 = +0)
  return (+(T === 0) | (+(pn !== 0) & (+(wLow + lx < e[s4 + 3]) | +(Math.abs(pn) >= T))) | +!exactRow(sAbs, v, T)) !== 0;
}

/**
 * The wasm walk of the nw listed columns (wasm-kernels.ts walk), the tracked rows' exact updates
 * included: returns the refold count after it (nf before), the reached-row count in kern.io[0].
 */
function walkListed(kern: DeltaKernel, nw: number, cur: number, nr: number, nf: number): number {
  kern.track[TRACK.nf] = nf;
  kern.io[0] = kern.heap.walkAt(nw, kern.at, cur, nr);
  return kern.track[TRACK.nf];
}

function deltaLinearIn(
  ctx: ExecNumericContext, m: Matrix, st: DeltaLinearState, x: Float32Array, xOff: number, cand: Int32Array | null, nCand: number,
  stats?: MatmulStats, role?: DeltaRole,
): DeltaLinearState | null {
  if (st.usable === 0) {
    const plan = sparsePlanOf(ctx.plans, m);
    let ok = plan.finite && cscPlanOf(ctx.plans, m, plan.csr, wasmHeapOf(ctx)) !== null;
    if (ok && plan.denseNegZeroRow) for (let r = 0; r < m.rows; r++) if (plan.denseNegZeroRow[r]) { ok = false; break; }
    st.usable = ok ? 1 : 2;
  }
  if (st.usable !== 1) return null;
  // the matrix's plans, kept on the state while m's storage is the one they were made from
  if (st.plan === null || st.planCsr !== m.csr || st.planDense !== m.dense) {
    const plan = sparsePlanOf(ctx.plans, m);
    const csc = cscPlanOf(ctx.plans, m, plan.csr);
    if (csc === null) return null;
    st.plan = plan;
    st.csc = csc;
    st.lows = lowbitsOf(ctx.plans, plan.csr.values, csc.values);
    st.planCsr = m.csr;
    st.planDense = m.dense;
    st.kernel = kernelOf(ctx, st, csc, m.cols);
    st.valid = false; // y and the column records describe the old storage
  }
  const plan = st.plan;
  const csc = st.csc!;
  const cols = m.cols;
  // x's bits (a view kept while the caller passes the same vector: decode steps reuse their buffers)
  if (st.inSrc !== x || st.inOff !== xOff) {
    const at = addressIn(ctx.memos.wasmHeap ?? null, x);
    st.inView = new Uint32Array(x.buffer, x.byteOffset + 4 * xOff, cols); st.inSrc = x; st.inOff = xOff; st.inAt = at < 0 ? -1 : at + 4 * xOff;
  }
  const xb = st.inView!;
  const { rowPtr, colIdx, values } = plan.csr;
  const bf16 = ctx.profile !== 'f32';
  const lows = st.lows!;
  const wLow = lows.csc;
  const wLowCsr = lows.csr;
  if (!st.valid) return foldFresh(ctx, m, st, plan, csc, x, xOff, xb, wLowCsr, wLow, bf16, stats);
  // One pass over the candidates: each changed column's record is updated as it is found (so a
  // repeated candidate counts once), its bounds widened if its new value falls outside them, and
  // its stored entries walked at once. A bounded row's update needs only the bounds of the column
  // it takes (module comment), so columns may come in any order; a row that a widening leaves
  // unbounded is marked for refolding (and later columns pass over it), which recomputes it from
  // scratch whatever earlier columns added. The precondition's count of sign-bit-set inputs is
  // complete only after the pass: when it fails, the state is dropped (the next call folds afresh)
  // and the caller computes the product itself.
  const { colBits, colVals, colInts, rowBound, rowLowGap } = st;
  const changed = st.changed;
  let nc = 0;
  let negTotal = st.negTotal;
  const rowIdx = csc.rowIdx;
  const cv = csc.values;
  const mark = st.mark;
  if (++st.epoch > MAX_EPOCH) { for (let r = 0; r < m.rows; r++) mark[r] &= 1; st.epoch = 1; }
  const cur = st.epoch << 2; // a row reached in this call: (mark & ~3) === cur
  const rows = st.rows;
  const e = st.rowExact;
  const slot = st.rowSlot;
  const yv = st.acc;
  let nr = 0;
  let nf = 0;
  let walked = 0;
  const refold = st.refold;
  const n = cand === null ? cols : nCand;
  // The wasm kernels (wasm-kernels.ts; over the uncast sums, st.acc, in either profile) do what the loop
  // below does, in its order, the tracked rows' exact updates included (the rows to refold they
  // list, with the count in kern.track), so marks, lists, records and sums are the loop's.
  //  - fused: the whole pass in wasm when the input and the candidates are in its memory too (the
  //    executor's norm outputs and SwiGLU's h are); it stops before a column that widens its
  //    bounds or is not finite, which the loop takes, and goes on after it;
  //  - listed: the loop lists each changed column's walk, and the kernel walks them in one call at
  //    the end and before any widening (which reads and writes the rows' marks as the walks before
  //    it left them).
  const kern = st.kernel;
  // (the candidates' address from the kernel's memo: −1 for no list, every column a candidate)
  const candAt = kern === null || cand === null ? -1 : kern.candAt.of(kern.heap, cand);
  const fused = kern !== null && st.inAt >= 0 && (cand === null || candAt >= 0);
  const listed = kern !== null && !fused && kern.listed;
  let nw = 0;
  for (let t = 0; t < n; t++) {
    if (fused) {
      const io = kern.io;
      io[0] = nr;
      io[1] = nc;
      io[6] = st.nBounded === m.rows ? 1 : 0;
      kern.track[TRACK.nf] = nf;
      const status = kern.heap.delta(n, candAt, st.inAt, kern.at, cur, t);
      nr = io[0];
      nc = io[1];
      negTotal += io[2];
      walked += io[3];
      nf = kern.track[TRACK.nf];
      if (status === 0) break;
      t = io[5];
    }
    const c = cand === null ? t : cand[t];
    const b = xb[c];
    const c4 = 4 * c;
    const ob = colBits[c4];
    if (b === ob) continue;
    const xn = x[xOff + c];
    if (xn - xn !== 0) { st.valid = false; return null; }
    negTotal += signSet(b) - signSet(ob);
    const xo = colVals[c4];
    colBits[c4] = b;
    changed[nc++] = c;
    const k0 = colInts[c4 + 3];
    const k1 = colInts[c4 + 7];
    // (an integer's lowest set bit is ≥ 0: no lowbit needed while the column's bound is ≤ 0)
    if (xn !== 0 && (Math.abs(xn) > colVals[c4 + 1] || ((colInts[c4 + 2] > 0 || (xn | 0) !== xn) && lowbit32(b) < colInts[c4 + 2]))) {
      if (nw > 0) {
        nf = walkListed(kern!, nw, cur, nr, nf);
        nr = kern!.io[0];
        nw = 0;
      }
      // widened: the rows the column reaches get their bounds grown; a bounded row that loses its
      // bound becomes tracked for good and is refolded (marked reached and refolding)
      const mOld = colVals[c4 + 1];
      const mNew = Math.max(mOld, Math.abs(xn));
      const lNew = Math.min(colInts[c4 + 2], lowbit32(b));
      colVals[c4 + 1] = mNew;
      colInts[c4 + 2] = lNew;
      let lost = 0;
      for (let k = k0; k < k1; k++) {
        const r = rowIdx[k];
        if ((mark[r] & 1) !== 0) continue; // tracked for good, or already lost this call
        const aw = Math.abs(cv[k]);
        if (aw === 0) continue;
        const grow = aw * mNew - aw * mOld;
        if (grow > 0) rowBound[r] = (rowBound[r] + grow) * BOUND_INFLATE;
        const gap = NO_LOW - (wLow[k] + lNew);
        if (gap > rowLowGap[r]) rowLowGap[r] = gap;
        if (!boundedRow(rowBound[r], NO_LOW - rowLowGap[r])) {
          if ((mark[r] & ~3) !== cur) rows[nr++] = r;
          mark[r] = cur | 3;
          refold[nf++] = r;
          lost++;
        }
      }
      st.nBounded -= lost;
    }
    // ±0 → ±0 (a sign flip of an off FFN unit, say): every product is ±0 before and after, which
    // neither the fold (it skips zero inputs) nor the update (it adds ±0) sees; only negTotal,
    // updated above, reads the sign
    if ((xn === 0 && xo === 0) || k1 <= k0) continue; // (k1 < k0: past the last used column, foldFresh)
    walked += k1 - k0;
    const lx = xn === 0 || st.nBounded === m.rows ? 0 : lowbit32(b); // (only tracked rows read it)
    // Exact whenever a bounded row reads c (only those use it): its bound gives |x| ≤ M_c <
    // 2^(24+L_c) for x_old and x_new, both multiples of 2^L_c, so Δ is a multiple of 2^L_c below
    // 2^(25+L_c); and w·Δ (24 × 25 bits) is the exact w·x_new − w·x_old (module comment)
    const dx = xn - xo;
    if (listed) {
      const wl = kern.walkList;
      wl[4 * nw] = k0;
      wl[4 * nw + 1] = k1;
      kern.walkDx[2 * nw + 1] = dx;
      if (st.nBounded !== m.rows) {
        // (read only by the tracked rows' updates: none while every row is bounded)
        kern.walkX[2 * nw] = xn;
        kern.walkX[2 * nw + 1] = xo;
        kern.walkLow[nw] = lx;
      }
      nw++;
      continue;
    }
    for (let k = k0; k < k1; k++) {
      const r = rowIdx[k];
      const f = mark[r];
      if ((f & 1) === 0) {
        // a bounded row: the exact update, unchecked (module comment)
        if (f !== cur) { mark[r] = cur; rows[nr++] = r; }
        yv[r] += cv[k] * dx;
        continue;
      }
      if ((f & ~3) !== cur) { mark[r] = cur | 1; rows[nr++] = r; } // a tracked row's first touch
      else if ((f & 2) !== 0) continue; // to be refolded
      if (trackedUpdate(e, 4 * slot[r], yv, r, cv[k], xn, xo, wLow[k], lx)) {
        mark[r] = cur | 3;
        refold[nf++] = r;
      }
    }
  }
  if (nw > 0) {
    nf = walkListed(kern!, nw, cur, nr, nf);
    nr = kern!.io[0];
  }
  st.negTotal = negTotal;
  if (csc.maxRowNnz >= cols - negTotal) { st.valid = false; return null; }
  // rows left exact hold their exact sum in acc already; the others are refolded from scratch
  let refoldEntries = 0;
  for (let t = 0; t < nf; t++) {
    const r = refold[t];
    refoldEntries += rowPtr[r + 1] - rowPtr[r];
    refoldRow(st, r, rowPtr, colIdx, values, x, xOff, xb, wLowCsr);
  }
  // bf16: the output of every row reached is its cast sum (castRowsBf16 in the kernels' memory)
  if (bf16) {
    if (kern !== null && kern.yAt >= 0) kern.heap.castRowsBf16At(nr, kern.at.rows, kern.at.y, kern.yAt);
    else { const y = st.y; for (let t = 0; t < nr; t++) { const r = rows[t]; y[r] = ctx.act(yv[r]); } }
  }
  const nUpdated = nr - nf;
  st.full = false;
  st.nRows = nr;
  st.nChanged = nc;
  st.nUpdated = nUpdated;
  st.version++;
  if (stats) {
    stats.sparse++;
    stats.delta++;
    stats.deltaEntries += walked;
    stats.deltaRows += nr;
    stats.deltaRefolds += nr - nUpdated;
    stats.deltaRefoldEntries += refoldEntries;
    if (stats.onDelta !== undefined) stats.onDelta(m, rows, nr, changed, nc);
    if (role !== undefined) {
      const w = stats.deltaByRole[role];
      w.calls++;
      w.changedColumns += nc;
      w.entries += walked;
      w.rows += nr;
      w.refolds += nr - nUpdated;
      w.refoldEntries += refoldEntries;
      if (fused || listed) w.kernelCalls++;
    }
  }
  return st;
}
