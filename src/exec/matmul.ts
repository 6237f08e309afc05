/**
 * Linear layers y = x·Wᵀ (no bias) over a Matrix held dense, CSR, or both, with two paths:
 *
 *  - dense: y[r] = ctx.dot(W[r, :], x) over every column in index order (the active order mode).
 *  - sparse (sequential order only): walks the CSR non-zeros of row r, skips zero activations,
 *    and sums the remaining products in ascending column order from −0. The result is bit-identical
 *    to the dense sequential row, including the sign of zero, by this argument:
 *
 *    Dense: acc₀ = −0, acc_{i+1} = fl(acc_i + t_i), t_i = fl(w_i·x_i). Let acc' be the same recursion
 *    over only the terms the sparse path visits. A skipped term is a zero (±0); adding ±0 to a
 *    non-zero value leaves it unchanged, and adding a non-zero t to ±0 gives t. So by induction the
 *    two accumulators are equal whenever either is non-zero, and can differ only in the sign of a
 *    zero. Hence a non-zero sparse result is the dense result. A zero result needs the sign:
 *      • if some term is non-zero, the dense sum reached zero by exact cancellation x + (−x) = +0
 *        (float addition that rounds to zero is exact, thanks to subnormals), and later ±0 terms
 *        keep +0: the result is +0;
 *      • otherwise every term is ±0 and the result is −0 iff every term is −0 (one +0 term makes
 *        the accumulator +0 for good). A zero term's sign is sign(w) ⊕ sign(x). For columns absent
 *        from the CSR the weight is +0 (CSR-only matrices; see weights.ts), so those terms are −0
 *        iff x has its sign bit set; a per-call count of sign-bit-set activations decides it in
 *        O(row nnz). When the matrix also has a dense form (whose zeros may be −0) the row is
 *        recomputed densely instead.
 *    Any non-finite activation or weight (0·inf = NaN) sends the call to the dense path.
 *    A per-matrix plan (SparsePlan, cached) lists the non-empty rows, so rows without entries are
 *    filled with the one all-±0 value of the call, and marks the dense rows holding a −0: only
 *    those need the dense row (a dense row without −0 is +0 wherever the CSR has no entry).
 *
 *  In shuffled / fma modes the sparse path is not used: the call runs the dense math (expanding CSR
 *  rows on the fly for CSR-only matrices, which is slow at real widths).
 *
 * In the bf16 profile each output is rounded with ctx.act (the linear's bf16 output tensor).
 */
import { denseToCsr } from '../model/csr.ts';
import { ChipcError } from '../util/errors.ts';
import type { CsrMatrix, Matrix } from '../model/weights.ts';
import type { ExecNumericContext } from './numeric.ts';

const f32 = Math.fround;

export type MatmulPath = 'dense' | 'sparse';

export interface LinearResult {
  out: Float32Array;
  /** True when the sparse path computed this matmul (false: the dense math ran). */
  usedSparse: boolean;
}

/** Counters of how each matmul ran (for tests and benches). */
export interface MatmulStats {
  sparse: number;
  dense: number;
  /** Sparse-path rows that fell back to a dense row to decide the sign of a zero. */
  denseRowFallbacks: number;
  /** Sparse-path matmuls that ran in the column-scatter form (counted in `sparse` too). */
  scatter: number;
  /** Sparse-path matmuls that ran incrementally (delta.ts; counted in `sparse` too). */
  delta: number;
  /** linearArgmax calls answered by its bounded form (small columns only; counted in `sparse` and `scatter` too). */
  argmaxBounded: number;
  /** linearArgmax calls answered by its memo (counted in `sparse` and `scatter` too). */
  argmaxMemoHits: number;
  /**
   * The incremental matmuls' work (delta.ts, calls after the first): stored entries walked over
   * the changed input columns, rows reached, and of those the rows refolded (not updated). A
   * deterministic measure of a decode step's cost, unlike a timing.
   */
  deltaEntries: number;
  deltaRows: number;
  deltaRefolds: number;
  /** Stored entries walked by those refolds (whole rows). */
  deltaRefoldEntries: number;
  /** Conv channels the tracked GDN steps recomputed (gdn.ts; the rest kept their state and output). */
  convChannels: number;
  /** Incremental matmuls that took their producer's changed columns instead of scanning their input (delta.ts DeltaShare `since`). */
  deltaShared: number;
  /**
   * Tracked GDN steps whose out_proj output was kept from the step before: its delta form did not
   * apply and no entry of its input changed (gdn.ts; counted in `sparse` too).
   */
  outProjKept: number;
}

export function newMatmulStats(): MatmulStats {
  return { sparse: 0, dense: 0, denseRowFallbacks: 0, scatter: 0, delta: 0, argmaxMemoHits: 0, argmaxBounded: 0, deltaEntries: 0, deltaRows: 0, deltaRefolds: 0, deltaRefoldEntries: 0, convChannels: 0, deltaShared: 0, outProjKept: 0 };
}

/** Size thresholds of the sparse path: knobs for tests, which lower them to exercise a form on small models. */
export const sparseTuning = {
  /** Stored entries of a matrix below which the row walk is used instead of the scatter form. */
  scatterMinNnz: 65536,
  /**
   * A column with more stored entries than this is "big" for boundedArgmax (folded through the
   * CSR rows instead of a packed copy, and never the last one taken). The chip's emit columns: a
   * payload byte value reaches ≈ 1,000 – 2,300 rows, a token kind 16 k – 65 k.
   */
  bigColumn: 4096,
};

const csrFinite = new WeakMap<CsrMatrix, boolean>();
const derivedCsr = new WeakMap<Float32Array, CsrMatrix>();

function csrAllFinite(csr: CsrMatrix): boolean {
  let ok = csrFinite.get(csr);
  if (ok === undefined) {
    ok = true;
    const v = csr.values;
    for (let i = 0; i < v.length; i++) if (!Number.isFinite(v[i])) { ok = false; break; }
    csrFinite.set(csr, ok);
  }
  return ok;
}

/** CSR of a matrix: its own, or one derived once from its dense form (cached per dense array). */
export function csrOf(m: Matrix): CsrMatrix {
  if (m.csr) return m.csr;
  if (!m.dense) throw new ChipcError('exec.bad-matrix', 'matrix has neither dense nor CSR data');
  let c = derivedCsr.get(m.dense);
  if (!c) {
    c = denseToCsr(m.dense, m.rows, m.cols);
    derivedCsr.set(m.dense, c);
  }
  return c;
}

function checkShapes(m: Matrix, x: Float32Array, xOff: number): void {
  if (xOff < 0 || xOff + m.cols > x.length) {
    throw new ChipcError('exec.shape', `linear: input has ${x.length - xOff} values from offset ${xOff}, matrix needs ${m.cols}`);
  }
  if (m.dense && m.dense.length !== m.rows * m.cols) {
    throw new ChipcError('exec.bad-matrix', `linear: dense data has ${m.dense.length} entries, expected ${m.rows}×${m.cols}`);
  }
  if (!m.dense && !m.csr) throw new ChipcError('exec.bad-matrix', 'linear: matrix has neither dense nor CSR data');
  if (m.csr && m.csr.rowPtr.length !== m.rows + 1) {
    throw new ChipcError('exec.bad-matrix', `linear: CSR rowPtr has ${m.csr.rowPtr.length} entries, expected ${m.rows + 1}`);
  }
}

/** One dense row of a CSR-only matrix: absent entries +0. */
function expandRow(csr: CsrMatrix, r: number, scratch: Float32Array): void {
  scratch.fill(0);
  for (let k = csr.rowPtr[r]; k < csr.rowPtr[r + 1]; k++) scratch[csr.colIdx[k]] = csr.values[k];
}

function denseLinear(ctx: ExecNumericContext, m: Matrix, x: Float32Array, xOff: number, out: Float32Array): void {
  const { rows, cols } = m;
  if (m.dense) {
    const W = m.dense;
    for (let r = 0; r < rows; r++) out[r] = ctx.act(ctx.dot(W, r * cols, 1, x, xOff, 1, cols));
    return;
  }
  const csr = m.csr as CsrMatrix;
  const scratch = new Float32Array(cols);
  for (let r = 0; r < rows; r++) {
    expandRow(csr, r, scratch);
    out[r] = ctx.act(ctx.dot(scratch, 0, 1, x, xOff, 1, cols));
  }
}

/**
 * What the sparse path precomputes once per Matrix: its CSR (own or derived), whether every stored
 * value is finite, the rows with at least one stored entry, and, for a matrix that also has a dense
 * form, which rows hold a −0 there (only those need the dense row to decide the sign of a zero
 * result; a dense row without −0 has +0 wherever the CSR has no entry, like a CSR-only row).
 */
export interface SparsePlan {
  csr: CsrMatrix;
  finite: boolean;
  nonEmptyRows: Uint32Array;
  /** 1 where the dense form's row has a −0 entry; null when there is no dense form. */
  denseNegZeroRow: Uint8Array | null;
}

const sparsePlans = new WeakMap<Matrix, SparsePlan>();

export function sparsePlanOf(m: Matrix): SparsePlan {
  let p = sparsePlans.get(m);
  if (p && p.csr === (m.csr ?? p.csr) && (m.dense !== undefined) === (p.denseNegZeroRow !== null)) return p;
  const csr = csrOf(m);
  const rows: number[] = [];
  for (let r = 0; r < m.rows; r++) if (csr.rowPtr[r + 1] > csr.rowPtr[r]) rows.push(r);
  let denseNegZeroRow: Uint8Array | null = null;
  if (m.dense) {
    denseNegZeroRow = new Uint8Array(m.rows);
    const u = new Uint32Array(m.dense.buffer, m.dense.byteOffset, m.dense.length);
    for (let i = 0; i < u.length; i++) if (u[i] === 0x80000000) denseNegZeroRow[Math.floor(i / m.cols)] = 1;
  }
  p = { csr, finite: csrAllFinite(csr), nonEmptyRows: Uint32Array.from(rows), denseNegZeroRow };
  sparsePlans.set(m, p);
  return p;
}

/**
 * Column-major copy of a CSR matrix for the scatter form of the sparse path (built once per
 * matrix, cached): colPtr[c]..colPtr[c+1] index rowIdx/values, rows ascending within a column.
 * Null when some CSR row does not list its columns in strictly ascending order (the scatter form
 * sums each row in ascending column order, which is the CSR walk's order only for sorted rows).
 */
export interface CscPlan {
  colPtr: Uint32Array;
  rowIdx: Uint32Array;
  values: Float32Array;
  /** The largest number of stored entries in one row. */
  maxRowNnz: number;
}

const cscPlans = new WeakMap<Matrix, CscPlan | null>();

export function cscPlanOf(m: Matrix, csr: CsrMatrix): CscPlan | null {
  let p = cscPlans.get(m);
  if (p !== undefined) return p;
  const { rowPtr, colIdx, values } = csr;
  const nnz = rowPtr[m.rows];
  const colPtr = new Uint32Array(m.cols + 1);
  let sorted = true;
  let maxRowNnz = 0;
  for (let r = 0; r < m.rows && sorted; r++) {
    const k0 = rowPtr[r];
    const k1 = rowPtr[r + 1];
    if (k1 - k0 > maxRowNnz) maxRowNnz = k1 - k0;
    for (let k = k0; k < k1; k++) {
      if (k > k0 && colIdx[k] <= colIdx[k - 1]) { sorted = false; break; }
      colPtr[colIdx[k] + 1]++;
    }
  }
  if (!sorted) {
    cscPlans.set(m, null);
    return null;
  }
  for (let c = 0; c < m.cols; c++) colPtr[c + 1] += colPtr[c];
  const next = colPtr.slice(0, m.cols);
  const rowIdx = new Uint32Array(nnz);
  const cv = new Float32Array(nnz);
  for (let r = 0; r < m.rows; r++) {
    for (let k = rowPtr[r]; k < rowPtr[r + 1]; k++) {
      const at = next[colIdx[k]]++;
      rowIdx[at] = r;
      cv[at] = values[k];
    }
  }
  p = { colPtr, rowIdx, values: cv, maxRowNnz };
  cscPlans.set(m, p);
  return p;
}

/**
 * The scatter form of the sparse path, for a CSR-only matrix (or one whose dense form has no −0)
 * with sorted rows, finite weights and a finite input x with few non-zeros. Preconditions
 * (checked by the caller): every row has fewer stored entries than the input has activations with
 * a clear sign bit (maxRowNnz < cols − negTotal), so a row whose terms are all ±0 has at least one
 * +0 term (an absent weight times such an activation) and its sum is +0.
 *
 * For each column c in ascending order with x_c ≠ 0, every stored w_rc adds t = fl(w_rc·x_c) to
 * out[r] when t ≠ 0: acc_r = fl(acc_r + t), from +0. Per row this is the CSR walk's recursion over
 * its non-zero terms in ascending column order; it starts from +0 instead of −0, which changes
 * nothing once the first non-zero term is added (±0 + t = t) and, for a row without non-zero
 * terms, gives the +0 the precondition makes the right value. Rows reached by no column keep +0.
 * In the bf16 profile each reached row is then rounded once with ctx.act (act is idempotent, so
 * rounding a row reached from several columns more than once is harmless), and act(+0) = +0.
 * `outIsZero`: out[0..rows) is already all +0 (a fresh array), so the fill is skipped.
 */
function scatterLinear(
  ctx: ExecNumericContext, m: Matrix, csc: CscPlan, x: Float32Array, xOff: number, out: Float32Array, outIsZero: boolean,
): void {
  if (!outIsZero) out.fill(0, 0, m.rows);
  const { colPtr, rowIdx, values } = csc;
  const cols = m.cols;
  for (let c = 0; c < cols; c++) {
    const xc = x[xOff + c];
    if (xc === 0) continue;
    const k1 = colPtr[c + 1];
    for (let k = colPtr[c]; k < k1; k++) {
      const t = f32(values[k] * xc);
      if (t !== 0) {
        const r = rowIdx[k];
        out[r] = f32(out[r] + t);
      }
    }
  }
  if (ctx.profile !== 'f32') {
    for (let c = 0; c < cols; c++) {
      if (x[xOff + c] === 0) continue;
      const k1 = colPtr[c + 1];
      for (let k = colPtr[c]; k < k1; k++) out[rowIdx[k]] = ctx.act(out[rowIdx[k]]);
    }
  }
}

/**
 * True when every weight of the matrix is +0 (bit pattern 0): no CSR entry and, if there is a
 * dense form, no −0 in it. On the sparse path such a matrix maps any finite input that has at
 * least one activation with a clear sign bit to act(+0) = +0 in every row (rule 2 of the module
 * comment). Cached with the matrix's sparse plan.
 */
export function allPlusZero(m: Matrix): boolean {
  const p = sparsePlanOf(m);
  if (p.nonEmptyRows.length > 0) return false;
  if (p.denseNegZeroRow) for (let r = 0; r < m.rows; r++) if (p.denseNegZeroRow[r]) return false;
  return true;
}

/**
 * The sparse path over a plan (see the module comment); `negTotal` = number of sign-bit-set
 * activations. Rows without stored entries are all-±0-term rows: −0 iff every activation has its
 * sign bit set (absent weights are +0), unless the dense form has a −0 in that row (dense row).
 */
function sparseLinear(
  ctx: ExecNumericContext, m: Matrix, plan: SparsePlan, x: Float32Array, xOff: number, out: Float32Array,
  negTotal: number, stats?: MatmulStats,
): void {
  const { rows, cols } = m;
  const { rowPtr, colIdx, values } = plan.csr;
  const W = m.dense;
  const negRow = plan.denseNegZeroRow;
  const emptyValue = ctx.act(negTotal === cols ? -0 : 0);
  const nonEmpty = plan.nonEmptyRows;
  if (nonEmpty.length < rows) {
    out.fill(emptyValue, 0, rows);
    if (negRow) {
      for (let r = 0; r < rows; r++) {
        if (negRow[r] && rowPtr[r + 1] === rowPtr[r]) {
          if (stats) stats.denseRowFallbacks++;
          out[r] = ctx.act(ctx.dot(W as Float32Array, r * cols, 1, x, xOff, 1, cols));
        }
      }
    }
  }
  for (let ri = 0; ri < nonEmpty.length; ri++) {
    const r = nonEmpty[ri];
    const k0 = rowPtr[r];
    const k1 = rowPtr[r + 1];
    let acc = -0;
    let anyNonZeroTerm = false;
    let allVisitedNegZero = true;
    let negVisited = 0;
    for (let k = k0; k < k1; k++) {
      const xv = x[xOff + colIdx[k]];
      const w = values[k];
      if (xv !== 0) {
        if (xv < 0) negVisited++;
        const t = f32(w * xv);
        if (t !== 0) {
          anyNonZeroTerm = true;
          acc = f32(acc + t);
        } else if (1 / t > 0) {
          allVisitedNegZero = false;
        }
      } else {
        // term ±0 with sign(w) ⊕ sign(x)
        const xNeg = 1 / xv < 0;
        if (xNeg) negVisited++;
        const wNeg = w < 0 || (w === 0 && 1 / w < 0);
        if (wNeg === xNeg) allVisitedNegZero = false;
      }
    }
    let y: number;
    if (acc !== 0 || Number.isNaN(acc)) y = acc;
    else if (anyNonZeroTerm) y = 0;
    else if (negRow && negRow[r]) {
      if (stats) stats.denseRowFallbacks++;
      y = ctx.dot(W as Float32Array, r * cols, 1, x, xOff, 1, cols);
    } else {
      const absent = cols - (k1 - k0);
      y = allVisitedNegZero && negTotal - negVisited === absent ? -0 : 0;
    }
    out[r] = ctx.act(y);
  }
}

/**
 * Whether the scatter form applies (see scatterLinear) and walks fewer entries than the row walk:
 * only matrices with many stored entries are considered (the LM head), and only
 * when the stored entries in the columns of the non-zero activations, plus a share for the fill
 * of the output, are well under the row walk's count.
 */
function useScatter(m: Matrix, plan: SparsePlan, x: Float32Array, xOff: number, negTotal: number): boolean {
  const nnz = plan.csr.rowPtr[m.rows];
  if (nnz < sparseTuning.scatterMinNnz) return false;
  if (plan.denseNegZeroRow) {
    for (let r = 0; r < m.rows; r++) if (plan.denseNegZeroRow[r]) return false;
  }
  const csc = cscPlanOf(m, plan.csr);
  if (!csc || csc.maxRowNnz >= m.cols - negTotal) return false;
  let work = m.rows >> 3;
  for (let c = 0; c < m.cols; c++) if (x[xOff + c] !== 0) work += csc.colPtr[c + 1] - csc.colPtr[c];
  return 2 * work < nnz;
}

/**
 * y = x[xOff .. xOff+cols)·Wᵀ (see the module comment for the two paths). `path` 'sparse' is
 * honoured only in sequential order with finite weights and activations; otherwise the dense math
 * runs. A dense-only matrix asked for the sparse path gets a CSR derived once from its dense form.
 */
export function linearEx(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, path: MatmulPath,
  opts: { xOff?: number; out?: Float32Array; stats?: MatmulStats } = {},
): LinearResult {
  const xOff = opts.xOff ?? 0;
  checkShapes(m, x, xOff);
  const outIsZero = opts.out === undefined;
  const out = opts.out ?? new Float32Array(m.rows);
  if (out.length < m.rows) throw new ChipcError('exec.shape', `linear: output buffer has ${out.length} slots, need ${m.rows}`);
  if (path === 'sparse' && ctx.order.kind === 'sequential') {
    // One scan: finiteness of the activations and the count of sign-bit-set ones (x < 0 or −0).
    let negTotal = 0;
    let finite = true;
    const end = xOff + m.cols;
    for (let i = xOff; i < end; i++) {
      const v = x[i];
      if (v - v !== 0) { finite = false; break; }
      if (v < 0 || (v === 0 && 1 / v < 0)) negTotal++;
    }
    if (finite) {
      const plan = sparsePlanOf(m);
      if (plan.finite) {
        if (useScatter(m, plan, x, xOff, negTotal)) {
          scatterLinear(ctx, m, cscPlanOf(m, plan.csr) as CscPlan, x, xOff, out, outIsZero);
          if (opts.stats) { opts.stats.sparse++; opts.stats.scatter++; }
          return { out, usedSparse: true };
        }
        sparseLinear(ctx, m, plan, x, xOff, out, negTotal, opts.stats);
        if (opts.stats) opts.stats.sparse++;
        return { out, usedSparse: true };
      }
    }
  }
  denseLinear(ctx, m, x, xOff, out);
  if (opts.stats) opts.stats.dense++;
  return { out, usedSparse: false };
}

/**
 * A linear's output kept sparse across calls (scatterInto): `out` is +0 (bit pattern 0) outside
 * the rows touched[0..n), which are distinct; `mark[r]` = 1 exactly for those rows.
 */
export interface SparseOut {
  out: Float32Array;
  mark: Uint8Array;
  touched: Int32Array;
  n: number;
}

export function newSparseOut(rows: number): SparseOut {
  return { out: new Float32Array(rows), mark: new Uint8Array(rows), touched: new Int32Array(rows), n: 0 };
}

/** Resets a SparseOut to all +0 with no touched rows (O(touched)). */
export function clearSparseOut(so: SparseOut): void {
  const { out, mark, touched } = so;
  for (let t = 0; t < so.n; t++) { const r = touched[t]; out[r] = 0; mark[r] = 0; }
  so.n = 0;
}

/**
 * The finiteness / sign scan of the sparse path plus the non-zero positions: for x[xOff ..
 * xOff+cols), writes the columns with x_c ≠ 0 (ascending) into nz and returns their count, and the
 * count of sign-bit-set activations (x < 0 or −0) in `neg[0]`; returns −1 when some x_c is not finite.
 */
export function scanActivations(x: Float32Array, xOff: number, cols: number, nz: Int32Array, neg: Int32Array): number {
  let n = 0;
  let negTotal = 0;
  for (let c = 0; c < cols; c++) {
    const v = x[xOff + c];
    if (v - v !== 0) return -1;
    if (v !== 0) { nz[n++] = c; if (v < 0) negTotal++; } else if (1 / v < 0) negTotal++;
  }
  neg[0] = negTotal;
  return n;
}

/**
 * The scatter form (scatterLinear's math and argument) into a SparseOut, visiting only the
 * columns nz[0..nzn) (the non-zero activations, ascending; `negTotal` = sign-bit-set activations
 * among all cols): clears the rows touched by the previous call, then for each listed column c
 * and stored w_rc with t = fl(w_rc·x_c) ≠ 0, out[r] = fl(out[r] + t) from +0, recording r as
 * touched; bf16 rounds the touched rows once. Every row not touched is +0, which is its exact
 * value: its terms are all ±0 and one of them is +0 (precondition below). Returns false and does
 * nothing when the form does not apply: sequential order, CSR-only matrix (or one whose dense
 * form has no −0) with finite weights and sorted rows, and maxRowNnz < cols − negTotal are
 * needed; `maxWork` caps the entries walked (checked before any change; −1: no cap).
 */
export function scatterInto(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, xOff: number, nz: Int32Array, nzn: number, negTotal: number,
  so: SparseOut, maxWork: number, stats?: MatmulStats,
): boolean {
  if (ctx.order.kind !== 'sequential' || so.out.length < m.rows || xOff + m.cols > x.length) return false;
  const plan = sparsePlanOf(m);
  if (!plan.finite) return false;
  if (plan.denseNegZeroRow) {
    for (let r = 0; r < m.rows; r++) if (plan.denseNegZeroRow[r]) return false;
  }
  const csc = cscPlanOf(m, plan.csr);
  if (!csc || csc.maxRowNnz >= m.cols - negTotal) return false;
  const { colPtr, rowIdx, values } = csc;
  if (maxWork >= 0) {
    let work = 0;
    for (let t = 0; t < nzn; t++) work += colPtr[nz[t] + 1] - colPtr[nz[t]];
    if (work > maxWork) return false;
  }
  clearSparseOut(so);
  const { out, mark, touched } = so;
  let n = 0;
  for (let t = 0; t < nzn; t++) {
    const c = nz[t];
    const xc = x[xOff + c];
    const k1 = colPtr[c + 1];
    for (let k = colPtr[c]; k < k1; k++) {
      const p = f32(values[k] * xc);
      if (p !== 0) {
        const r = rowIdx[k];
        out[r] = f32(out[r] + p);
        if (mark[r] === 0) { mark[r] = 1; touched[n++] = r; }
      }
    }
  }
  so.n = n;
  if (ctx.profile !== 'f32') for (let t = 0; t < n; t++) out[touched[t]] = ctx.act(out[touched[t]]);
  if (stats) { stats.sparse++; stats.scatter++; }
  return true;
}

/**
 * linearArgmax's memo (per numeric context and matrix): the greedy token for a key = the list of
 * (column, bit pattern) of the non-zero activations in columns that hold weights. Valid only
 * where the scatter precondition holds (the caller checks maxRowNnz < cols − negTotal; the matrix
 * itself must qualify — `cscMaxRowNnz` is +inf otherwise): then every row is a pure function of
 * those activations (scatterInto), so is the argmax. Keys are compared in full (no hash trust).
 */
interface ArgmaxMemo {
  colHasEntries: Uint8Array;
  cscMaxRowNnz: number;
  map: Map<number, { key: Uint32Array; best: number }[]>;
  entries: number;
  scratch: Uint32Array;
  /** boundedArgmax's row scratch (made on first use). */
  rowMark?: Uint8Array;
  rowList?: Int32Array;
}
const ARGMAX_MEMO_MAX = 1 << 16;
const argmaxMemos = new WeakMap<ExecNumericContext, WeakMap<Matrix, ArgmaxMemo>>();

function argmaxMemoOf(ctx: ExecNumericContext, m: Matrix): ArgmaxMemo | null {
  if (ctx.order.kind !== 'sequential') return null;
  let byM = argmaxMemos.get(ctx);
  if (byM === undefined) { byM = new WeakMap(); argmaxMemos.set(ctx, byM); }
  let memo = byM.get(m);
  if (memo === undefined) {
    const plan = sparsePlanOf(m);
    const csc = cscPlanOf(m, plan.csr);
    let ok = plan.finite && csc !== null;
    if (ok && plan.denseNegZeroRow) for (let r = 0; r < m.rows; r++) if (plan.denseNegZeroRow[r]) { ok = false; break; }
    const colHasEntries = new Uint8Array(m.cols);
    if (csc) for (let c = 0; c < m.cols; c++) colHasEntries[c] = csc.colPtr[c + 1] > csc.colPtr[c] ? 1 : 0;
    memo = {
      colHasEntries, cscMaxRowNnz: ok && csc ? csc.maxRowNnz : Infinity, map: new Map(), entries: 0,
      scratch: new Uint32Array(2 * m.cols),
    };
    byM.set(m, memo);
  }
  return memo;
}

/** Per matrix: linearArgmax's sparse output and activation scratch. */
const argmaxStates = new WeakMap<Matrix, { so: SparseOut; nz: Int32Array; neg: Int32Array }>();

/**
 * argmax of y = x·Wᵀ (lowest index among the maximal values; NaN never wins; ChipcError
 * exec.nan-logits when every value is NaN) — exactly executor.ts `argmax(linear(ctx, m, x, path))`.
 * Sparse path, sequential order: when scatterInto applies, only the touched rows and the lowest
 * untouched row (exactly +0, like every untouched row, which all lose ties to it) are compared.
 * Otherwise the product is written into `buf` (length ≥ rows) and scanned.
 */
export function linearArgmax(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, path: MatmulPath, buf: Float32Array, stats?: MatmulStats,
): number {
  if (path === 'sparse' && ctx.order.kind === 'sequential' && x.length >= m.cols) {
    let st = argmaxStates.get(m);
    if (!st || st.so.out.length !== m.rows) {
      st = { so: newSparseOut(m.rows), nz: new Int32Array(m.cols), neg: new Int32Array(1) };
      argmaxStates.set(m, st);
    }
    const nzn = scanActivations(x, 0, m.cols, st.nz, st.neg);
    const memo = nzn >= 0 ? argmaxMemoOf(ctx, m) : null;
    let key: Uint32Array | null = null;
    let hash = 0;
    if (memo !== null && memo.cscMaxRowNnz < m.cols - st.neg[0]) {
      // under the scatter precondition the logits are a pure function of the non-zero activations
      // in columns that hold weights: look that key up
      const xb = new Uint32Array(x.buffer, x.byteOffset, m.cols);
      let kn = 0;
      hash = 0x811c9dc5;
      for (let t = 0; t < nzn; t++) {
        const c = st.nz[t];
        if (memo.colHasEntries[c] === 0) continue;
        memo.scratch[kn++] = c;
        memo.scratch[kn++] = xb[c];
        hash = Math.imul(hash ^ c, 0x01000193);
        hash = Math.imul(hash ^ xb[c], 0x01000193);
      }
      key = memo.scratch.subarray(0, kn);
      const bucket = memo.map.get(hash);
      if (bucket !== undefined) {
        for (let b = 0; b < bucket.length; b++) {
          const e = bucket[b];
          if (e.key.length !== kn) continue;
          let same = true;
          for (let i = 0; i < kn; i++) if (e.key[i] !== key[i]) { same = false; break; }
          if (same) {
            if (stats) { stats.sparse++; stats.scatter++; stats.argmaxMemoHits++; }
            return e.best;
          }
        }
      }
    }
    if (memo !== null && key !== null && ctx.profile === 'f32') {
      const best = boundedArgmax(m, x, st.nz, nzn, memo);
      if (best >= 0) {
        if (stats) { stats.sparse++; stats.scatter++; stats.argmaxBounded++; }
        memoStore(memo, hash, key, best);
        return best;
      }
    }
    if (nzn >= 0 && scatterInto(ctx, m, x, 0, st.nz, nzn, st.neg[0], st.so, storedEntries(m), stats)) {
      const { out, mark, touched } = st.so;
      let best = -1;
      let bv = 0;
      for (let t = 0; t < st.so.n; t++) {
        const r = touched[t];
        const v = out[r];
        if (v !== v) continue;
        if (best < 0 || v > bv || (v === bv && r < best)) { best = r; bv = v; }
      }
      if (st.so.n < m.rows) {
        let r = 0;
        while (mark[r] === 1) r++;
        if (best < 0 || 0 > bv || (0 === bv && r < best)) best = r;
      }
      if (best < 0) throw new ChipcError('exec.nan-logits', 'argmax: every logit is NaN (or there are none)');
      if (memo !== null && key !== null) memoStore(memo, hash, key, best);
      return best;
    }
  }
  if (buf.length < m.rows) throw new ChipcError('exec.shape', `linearArgmax: buffer has ${buf.length} slots, need ${m.rows}`);
  const y = linear(ctx, m, x, path, { stats, out: buf.subarray(0, m.rows) });
  let best = -1;
  let bv = -Infinity;
  for (let i = 0; i < y.length; i++) {
    const v = y[i];
    if (v > bv || (best < 0 && v === -Infinity)) { bv = v; best = i; }
  }
  if (best < 0) throw new ChipcError('exec.nan-logits', 'argmax: every logit is NaN (or there are none)');
  return best;
}

function memoStore(memo: ArgmaxMemo, hash: number, key: Uint32Array, best: number): void {
  if (memo.entries >= ARGMAX_MEMO_MAX) { memo.map.clear(); memo.entries = 0; }
  const bucket = memo.map.get(hash);
  const e = { key: key.slice(), best };
  if (bucket === undefined) memo.map.set(hash, [e]);
  else bucket.push(e);
  memo.entries++;
}

/**
 * What boundedArgmax derives from the weights alone, kept per matrix (per CSC plan) rather than
 * per memo, so every executor of the same weights shares it: the column extremes, and per small
 * column, made on first use, its rows with their whole CSR rows (packedRowsOf).
 */
interface BoundedPrep {
  extremes: { max: Float32Array; min: Float32Array };
  packed: ({ u: Uint32Array; f: Float32Array } | undefined)[];
}
const boundedPreps = new WeakMap<CscPlan, BoundedPrep>();
function boundedPrepOf(m: Matrix, csc: CscPlan): BoundedPrep {
  let p = boundedPreps.get(csc);
  if (p === undefined) {
    p = { extremes: columnExtremes(m, csc), packed: new Array(m.cols) };
    boundedPreps.set(csc, p);
  }
  return p;
}

/**
 * The argmax without walking big columns (f32 profile, under the scatter precondition, which the
 * caller has checked), or −1 when it cannot be decided that way. The non-zero columns are taken
 * smallest first into A; the rows T they reach get their exact value (the row fold over all their
 * stored entries, as scatterInto computes it). Every other row holds only products of the columns
 * not yet in A (or none: +0), and its fold is at most U = (1 + 2^−23)^B·Σ max(0, max_r fl(w_rc·x_c))
 * over those B columns: fl is monotone, and a fold's partial sums stay below the sum of its
 * positive terms times (1 + 2^−24) per addition (a negative term only lowers them). After each
 * column, if the best row of T is strictly above U it is the argmax (no other row reaches or ties
 * it). A column with more than sparseTuning.bigColumn entries is taken only while another such
 * is left out; when the last one would be needed, −1 (the caller scatters everything). So a step
 * whose emitted token is decided by its rarest field folds only that field's rows.
 */
function boundedArgmax(m: Matrix, x: Float32Array, nz: Int32Array, nzn: number, memo: ArgmaxMemo): number {
  const plan = sparsePlanOf(m);
  const csc = cscPlanOf(m, plan.csr);
  if (csc === null) return -1;
  const { colPtr, rowIdx } = csc;
  const sizeOf = (c: number) => colPtr[c + 1] - colPtr[c];
  const order: number[] = [];
  let nBig = 0;
  for (let t = 0; t < nzn; t++) {
    const c = nz[t];
    const n = sizeOf(c);
    if (n === 0) continue;
    order.push(c);
    if (n > sparseTuning.bigColumn) nBig++;
  }
  if (nBig === 0) return -1; // nothing to save: the scatter is small
  order.sort((a, b) => sizeOf(a) - sizeOf(b) || a - b);
  const pre = boundedPrepOf(m, csc);
  const ext = pre.extremes;
  const mark = memo.rowMark ??= new Uint8Array(m.rows);
  const rows = memo.rowList ??= new Int32Array(m.rows);
  const { rowPtr, colIdx, values } = plan.csr;
  let nr = 0;
  let folded = 0;
  let best = -1;
  let bv = 0;
  /** Marks the rows of column c as in T. */
  const absorb = (c: number) => {
    for (let k = colPtr[c]; k < colPtr[c + 1]; k++) {
      const r = rowIdx[k];
      if (mark[r] === 0) { mark[r] = 1; rows[nr++] = r; }
    }
  };
  /**
   * Column c's rows join T and are folded at once, from the column's packed copy of its rows (a
   * sequential walk instead of a CSR row lookup per row; the same entries in the same order).
   */
  const absorbFolding = (c: number) => {
    const pk = pre.packed[c] ??= packedRowsOf(plan.csr, colPtr, rowIdx, c);
    const { u, f } = pk;
    for (let p = 0; p < u.length;) {
      const r = u[p];
      const n = u[p + 1];
      p += 2;
      if (mark[r] !== 0) { p += 2 * n; continue; }
      mark[r] = 1;
      rows[nr++] = r;
      let acc = 0;
      for (const end = p + 2 * n; p < end; p += 2) {
        const pr = f32(f[p + 1] * x[u[p]]);
        if (pr !== 0) acc = f32(acc + pr);
      }
      if (best < 0 || acc > bv || (acc === bv && r < best)) { best = r; bv = acc; }
    }
    folded = nr;
  };
  /** Folds the rows added to T since the last call; T's best row in (best, bv). */
  const foldNew = () => {
    for (; folded < nr; folded++) {
      const r = rows[folded];
      let acc = 0;
      for (let k = rowPtr[r]; k < rowPtr[r + 1]; k++) {
        const p = f32(values[k] * x[colIdx[k]]);
        if (p !== 0) acc = f32(acc + p);
      }
      if (best < 0 || acc > bv || (acc === bv && r < best)) { best = r; bv = acc; }
    }
  };
  let answer = -1;
  for (let i = 0; i < order.length; i++) {
    const c = order[i];
    if (sizeOf(c) <= sparseTuning.bigColumn) absorbFolding(c);
    else {
      if (nBig <= 1) break; // the last big column: the caller scatters
      nBig--;
      absorb(c);
      foldNew();
    }
    let bound = 0;
    for (let j = i + 1; j < order.length; j++) {
      const cj = order[j];
      const xv = x[cj];
      const top = f32((xv > 0 ? ext.max[cj] : ext.min[cj]) * xv);
      if (top > 0) bound += top;
    }
    bound *= (1 + 2 ** -23) ** (order.length - i - 1);
    if (best >= 0 && bv > bound) { answer = best; break; }
  }
  for (let t = 0; t < nr; t++) mark[rows[t]] = 0;
  return answer;
}

/**
 * The rows of column c (at most sparseTuning.bigColumn) with their whole CSR rows, in column order:
 * per row r, [r, n, c_1, w_1, …, c_n, w_n] with w as float32 bits (`f` is the float view).
 */
function packedRowsOf(csr: CsrMatrix, colPtr: Uint32Array, rowIdx: Uint32Array, c: number): { u: Uint32Array; f: Float32Array } {
  const { rowPtr, colIdx, values } = csr;
  let len = 0;
  for (let k = colPtr[c]; k < colPtr[c + 1]; k++) { const r = rowIdx[k]; len += 2 + 2 * (rowPtr[r + 1] - rowPtr[r]); }
  const u = new Uint32Array(len);
  const f = new Float32Array(u.buffer);
  let p = 0;
  for (let k = colPtr[c]; k < colPtr[c + 1]; k++) {
    const r = rowIdx[k];
    u[p++] = r;
    u[p++] = rowPtr[r + 1] - rowPtr[r];
    for (let j = rowPtr[r]; j < rowPtr[r + 1]; j++) { u[p++] = colIdx[j]; f[p++] = values[j]; }
  }
  return { u, f };
}

/** Per column: the largest and smallest stored weight (+0 for a column without entries). */
function columnExtremes(m: Matrix, csc: CscPlan): { max: Float32Array; min: Float32Array } {
  const max = new Float32Array(m.cols);
  const min = new Float32Array(m.cols);
  for (let c = 0; c < m.cols; c++) {
    let hi = -Infinity, lo = Infinity;
    for (let k = csc.colPtr[c]; k < csc.colPtr[c + 1]; k++) { const w = csc.values[k]; if (w > hi) hi = w; if (w < lo) lo = w; }
    max[c] = hi === -Infinity ? 0 : hi;
    min[c] = lo === Infinity ? 0 : lo;
  }
  return { max, min };
}

/** Stored entries of the matrix (its CSR's, own or derived). */
export function storedEntries(m: Matrix): number {
  const p = sparsePlanOf(m);
  return p.csr.rowPtr[m.rows];
}

/**
 * linear() on the sparse path for an input known to be +0 (bit pattern 0) outside the positions
 * support[0..n): the finiteness and sign-bit scan of the activations visits only those (a +0 is
 * finite and has a clear sign bit), then the same sparse row walk runs. Falls back to linear()
 * outside sequential order or with non-finite weights / activations. Returns out.
 */
export function linearOnSupport(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, support: Int32Array, n: number, path: MatmulPath,
  out: Float32Array, stats?: MatmulStats,
): Float32Array {
  if (path === 'sparse' && ctx.order.kind === 'sequential' && x.length >= m.cols && out.length >= m.rows && !m.dense) {
    let negTotal = 0;
    let finite = true;
    for (let t = 0; t < n; t++) {
      const v = x[support[t]];
      if (v - v !== 0) { finite = false; break; }
      if (v < 0 || (v === 0 && 1 / v < 0)) negTotal++;
    }
    if (finite) {
      const plan = sparsePlanOf(m);
      if (plan.finite) {
        sparseLinear(ctx, m, plan, x, 0, out, negTotal, stats);
        if (stats) stats.sparse++;
        return out;
      }
    }
  }
  return linear(ctx, m, x, path, { out, stats });
}

/** Sorted union of the non-empty rows of two matrices with the same row count (cached per pair's first matrix). */
const rowUnions = new WeakMap<Matrix, { other: Matrix; rows: Int32Array }>();
export function nonEmptyRowUnion(a: Matrix, b: Matrix): Int32Array {
  const c = rowUnions.get(a);
  if (c && c.other === b) return c.rows;
  const pa = sparsePlanOf(a);
  const pb = sparsePlanOf(b);
  const mark = new Uint8Array(a.rows);
  for (const r of pa.nonEmptyRows) mark[r] = 1;
  for (const r of pb.nonEmptyRows) mark[r] = 1;
  const rows: number[] = [];
  for (let r = 0; r < a.rows; r++) if (mark[r]) rows.push(r);
  const out = Int32Array.from(rows);
  rowUnions.set(a, { other: b, rows: out });
  return out;
}

/** linearEx returning only the output. */
export function linear(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, path: MatmulPath,
  opts: { xOff?: number; out?: Float32Array; stats?: MatmulStats } = {},
): Float32Array {
  return linearEx(ctx, m, x, path, opts).out;
}

/** Row `r` of a matrix written into `out` (length ≥ cols; CSR absent entries +0); returns out. */
export function matrixRowInto(m: Matrix, r: number, out: Float32Array): Float32Array {
  if (!Number.isInteger(r) || r < 0 || r >= m.rows) {
    throw new ChipcError('exec.bad-token', `row ${r} out of range [0, ${m.rows})`);
  }
  if (m.dense) out.set(m.dense.subarray(r * m.cols, (r + 1) * m.cols));
  else expandRow(m.csr as CsrMatrix, r, out);
  return out;
}

/** Row `r` of a matrix as a new Float32Array (embedding lookup; CSR absent entries are +0). */
export function matrixRow(m: Matrix, r: number): Float32Array {
  if (!Number.isInteger(r) || r < 0 || r >= m.rows) {
    throw new ChipcError('exec.bad-token', `row ${r} out of range [0, ${m.rows})`);
  }
  if (m.dense) return m.dense.slice(r * m.cols, (r + 1) * m.cols);
  const row = new Float32Array(m.cols);
  expandRow(m.csr as CsrMatrix, r, row);
  return row;
}
