/**
 * Incremental decode: a matmul's output kept across single-token steps and recomputed only where
 * its input changed (sparse path, sequential order). Compiled circuits change few residual dims
 * per token (the anchors keep every RMSNorm factor constant, docs/numerics.md), so a decode step
 * mostly repeats the previous one; the rows whose inputs repeat bit for bit keep their values.
 *
 * Exactness. Under the scatter form's precondition (matmul.ts scatterInto: CSR matrix with sorted
 * rows and finite weights, no dense −0 rows, finite input, maxRowNnz < cols − negTotal), row r of
 * y = x·Wᵀ as linear() computes it equals
 *     y_r = act( fold over r's stored entries in ascending column c, from +0, of
 *                acc ← fl(acc + p) for each p = fl(w_rc·x_c) ≠ 0 )
 * (+0 when no product is non-zero): a pure function of the x_c of r's stored columns. So when the
 * precondition holds for the previous input and for the current one, a row none of whose stored
 * columns changed (bit pattern) has the same value, and only the rows of the changed columns are
 * recomputed with the formula above. The state is a memo of y for the input bits it records:
 * correct for any caller using the same numeric context (states are kept per context).
 */
import type { Matrix } from '../model/weights.ts';
import { cscPlanOf, sparsePlanOf, type MatmulStats } from './matmul.ts';
import type { ExecNumericContext } from './numeric.ts';

const f32 = Math.fround;

/** The memo of one matrix's output (per numeric context). */
export interface DeltaLinearState {
  /** The input bit patterns y was computed from. */
  xBits: Uint32Array;
  /** How many of those inputs have their sign bit set (x < 0 or −0). */
  negTotal: number;
  /** The output for xBits (all rows). */
  y: Float32Array;
  valid: boolean;
  /** True when the last call recomputed every row (then `rows` is not filled). */
  full: boolean;
  /** The rows recomputed by the last call (a superset of the rows whose value changed), rows[0..nRows). */
  rows: Int32Array;
  nRows: number;
  mark: Uint8Array;
  /** The input columns whose bit pattern changed in the last call, changed[0..nChanged). */
  changed: Int32Array;
  nChanged: number;
  /** 0 unknown, 1 the matrix meets the static part of the precondition, 2 it does not. */
  usable: number;
  /** Counts the calls that changed y (a consumer's derived data is current iff it saw the last one). */
  version: number;
}

const statesByCtx = new WeakMap<ExecNumericContext, WeakMap<Matrix, DeltaLinearState>>();

function stateOf(ctx: ExecNumericContext, m: Matrix): DeltaLinearState {
  let byM = statesByCtx.get(ctx);
  if (byM === undefined) { byM = new WeakMap(); statesByCtx.set(ctx, byM); }
  let st = byM.get(m);
  if (st === undefined) {
    st = {
      xBits: new Uint32Array(m.cols), negTotal: 0, y: new Float32Array(m.rows), valid: false, full: false,
      rows: new Int32Array(m.rows), nRows: 0, mark: new Uint8Array(m.rows), changed: new Int32Array(m.cols), nChanged: 0, usable: 0,
      version: 0,
    };
    byM.set(m, st);
  }
  return st;
}

/** Drops the memo of m in ctx (the next deltaLinear call recomputes every row). */
export function invalidateDelta(ctx: ExecNumericContext, m: Matrix): void {
  const st = statesByCtx.get(ctx)?.get(m);
  if (st) st.valid = false;
}

function signSet(b: number): number {
  return b >>> 31;
}

/**
 * y = x[xOff .. xOff+cols)·Wᵀ, maintained incrementally (see the module comment); returns the
 * state (y in `state.y`, which stays valid until the next call for this matrix and context) or null
 * when the form does not apply (then nothing is computed and the caller runs linear()).
 * `cand` (with nCand), when given, lists every input column that may differ from the previous
 * call's input (e.g. the rows the producer recomputed); otherwise all columns are compared.
 */
export function deltaLinear(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, xOff: number, cand: Int32Array | null, nCand: number,
  stats?: MatmulStats,
): DeltaLinearState | null {
  if (ctx.order.kind !== 'sequential' || xOff + m.cols > x.length) return null;
  const st = stateOf(ctx, m);
  if (st.usable === 0) {
    const plan = sparsePlanOf(m);
    let ok = plan.finite && cscPlanOf(m, plan.csr) !== null;
    if (ok && plan.denseNegZeroRow) for (let r = 0; r < m.rows; r++) if (plan.denseNegZeroRow[r]) { ok = false; break; }
    st.usable = ok ? 1 : 2;
  }
  if (st.usable !== 1) return null;
  const plan = sparsePlanOf(m);
  const csc = cscPlanOf(m, plan.csr);
  if (csc === null) return null;
  const cols = m.cols;
  const xb = new Uint32Array(x.buffer, x.byteOffset + 4 * xOff, cols);
  const { rowPtr, colIdx, values } = plan.csr;
  const y = st.y;
  const bf16 = ctx.profile !== 'f32';
  if (!st.valid) {
    let negTotal = 0;
    for (let c = 0; c < cols; c++) {
      const v = x[xOff + c];
      if (v - v !== 0) return null;
      negTotal += signSet(xb[c]);
    }
    if (csc.maxRowNnz >= cols - negTotal) return null;
    for (let r = 0; r < m.rows; r++) {
      let acc = 0;
      for (let k = rowPtr[r]; k < rowPtr[r + 1]; k++) {
        const p = f32(values[k] * x[xOff + colIdx[k]]);
        if (p !== 0) acc = f32(acc + p);
      }
      y[r] = bf16 ? ctx.act(acc) : acc;
    }
    st.xBits.set(xb);
    st.negTotal = negTotal;
    st.valid = true;
    st.full = true;
    st.nRows = 0;
    st.nChanged = 0;
    st.version++;
    if (stats) { stats.sparse++; stats.delta++; }
    return st;
  }
  // the changed columns (xBits updated as found, so a repeated candidate counts once)
  const old = st.xBits;
  const changed = st.changed;
  let nc = 0;
  let negTotal = st.negTotal;
  const n = cand === null ? cols : nCand;
  for (let t = 0; t < n; t++) {
    const c = cand === null ? t : cand[t];
    const b = xb[c];
    if (b === old[c]) continue;
    const v = x[xOff + c];
    if (v - v !== 0) { st.valid = false; return null; }
    negTotal += signSet(b) - signSet(old[c]);
    old[c] = b;
    changed[nc++] = c;
  }
  st.negTotal = negTotal;
  if (csc.maxRowNnz >= cols - negTotal) { st.valid = false; return null; }
  const { colPtr, rowIdx } = csc;
  const mark = st.mark;
  const rows = st.rows;
  let nr = 0;
  for (let t = 0; t < nc; t++) {
    const c = changed[t];
    for (let k = colPtr[c]; k < colPtr[c + 1]; k++) {
      const r = rowIdx[k];
      if (mark[r] === 0) { mark[r] = 1; rows[nr++] = r; }
    }
  }
  for (let t = 0; t < nr; t++) {
    const r = rows[t];
    mark[r] = 0;
    let acc = 0;
    for (let k = rowPtr[r]; k < rowPtr[r + 1]; k++) {
      const p = f32(values[k] * x[xOff + colIdx[k]]);
      if (p !== 0) acc = f32(acc + p);
    }
    y[r] = bf16 ? ctx.act(acc) : acc;
  }
  st.full = false;
  st.nRows = nr;
  st.nChanged = nc;
  st.version++;
  if (stats) { stats.sparse++; stats.delta++; }
  return st;
}
