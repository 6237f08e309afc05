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
 *    The scatter form (scatterLinear) sums the same terms column by column for a large matrix and
 *    an input with few non-zeros, where its precondition makes every row it does not reach +0.
 *
 *  In shuffled / fma modes the sparse path is not used: the call runs the dense math (expanding CSR
 *  rows on the fly for CSR-only matrices, which is slow at real widths).
 *
 * In the bf16 profile each output is rounded with ctx.act (the linear's bf16 output tensor).
 *
 * The per-matrix plans (SparsePlan, CscPlan) are matmul-plans.ts, cached in ctx.plans (plans.ts);
 * the size thresholds that choose between equal-valued forms are ctx.tuning; the greedy LM head
 * (linearArgmax, the scatter form into a sparse output) is matmul-argmax.ts.
 */
import { ChipcError } from '../util/errors.ts';
import type { CsrMatrix, Matrix } from '../model/weights.ts';
import type { ExecNumericContext } from './numeric.ts';
import { cscPlanOf, nonEmptyRowsOf, sparsePlanOf, type CscPlan, type SparsePlan } from './matmul-plans.ts';

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
  /** Rows whose logit the bounded form folded, over its calls (those that fell back to the scatter included). */
  argmaxBoundedRows: number;
  /** Decode steps of an idle GDN layer passed over with its input norm (gdn-idle.ts idleSkipHolds). */
  gdnIdlePassedOver: number;
  /** Tracked GDN steps that ended after their input projections, nothing else to change (gdn-tracked.ts quietStep). */
  gdnQuietSteps: number;
  /** Decode steps of a layer's FFN answered by its memo (ffn-memo.ts; nothing of the SwiGLU computed). */
  ffnMemoHits: number;
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
  /** Conv channels the tracked GDN steps recomputed (gdn-tracked.ts; the rest kept their state and output). */
  convChannels: number;
  /** Value heads whose recurrent step the tracked GDN steps after the first ran (the others had no changed input or were passed over: gdnHeadsBetaZero). */
  gdnHeadSteps: number;
  /** Value heads with a changed input that those steps passed over: β = ±0 and the step provably left S and the output as they were (gdn-tracked.ts). */
  gdnHeadsBetaZero: number;
  /** Incremental matmuls that took their producer's changed columns instead of scanning their input (delta.ts DeltaShare `since`). */
  deltaShared: number;
  /**
   * Tracked GDN steps whose out_proj output was kept from the step before: its delta form did not
   * apply and no entry of its input changed (gdn-tracked.ts; counted in `sparse` too).
   */
  outProjKept: number;
  /**
   * The incremental matmuls' work (the delta* fields above) split by the matrix a decode step
   * computed: a GDN layer's stacked input projections and its out_proj, an FFN's stacked
   * gate/up and its down_proj. Its parts sum to the totals (a call made without a role counts
   * in the totals only).
   */
  deltaByRole: Record<DeltaRole, DeltaWork>;
  /**
   * Called after each incremental call but a matrix's first, when set (a work probe such as
   * bench/chip-op-work.ts): the matrix, the rows it reached (rows[0..nRows)) and its input columns
   * whose bits changed (changed[0..nChanged)); the arrays are the call's scratch, valid only
   * during the call.
   */
  onDelta?: (m: Matrix, rows: Int32Array, nRows: number, changed: Int32Array, nChanged: number) => void;
}

/** The matrices a decode step computes incrementally (MatmulStats.deltaByRole). */
export const DELTA_ROLES = ['gdn.inProj', 'gdn.outProj', 'ffn.gateUp', 'ffn.down'] as const;
export type DeltaRole = (typeof DELTA_ROLES)[number];

/** One matrix role's incremental work over the calls after each matrix's first (MatmulStats). */
export interface DeltaWork {
  calls: number;
  /** Input columns whose bits changed since the matrix's previous call. */
  changedColumns: number;
  entries: number;
  rows: number;
  refolds: number;
  refoldEntries: number;
  /** Calls whose pass, or whose walks, ran in wasm (wasm-kernels.ts). */
  kernelCalls: number;
}

export function newMatmulStats(): MatmulStats {
  const deltaByRole = Object.fromEntries(DELTA_ROLES.map((r) => [r, { calls: 0, changedColumns: 0, entries: 0, rows: 0, refolds: 0, refoldEntries: 0, kernelCalls: 0 }])) as Record<DeltaRole, DeltaWork>;
  return { sparse: 0, dense: 0, denseRowFallbacks: 0, scatter: 0, delta: 0, argmaxMemoHits: 0, argmaxBounded: 0, argmaxBoundedRows: 0, gdnIdlePassedOver: 0, gdnQuietSteps: 0, ffnMemoHits: 0, deltaEntries: 0, deltaRows: 0, deltaRefolds: 0, deltaRefoldEntries: 0, convChannels: 0, gdnHeadSteps: 0, gdnHeadsBetaZero: 0, deltaShared: 0, outProjKept: 0, deltaByRole };
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
  const nonEmpty = nonEmptyRowsOf(ctx.plans, m);
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
 * only matrices with many stored entries are considered (ctx.tuning.scatterMinNnz: the LM head), and only
 * when the stored entries in the columns of the non-zero activations, plus a share for the fill
 * of the output, are well under the row walk's count.
 */
function useScatter(ctx: ExecNumericContext, m: Matrix, plan: SparsePlan, x: Float32Array, xOff: number, negTotal: number): boolean {
  const nnz = plan.csr.rowPtr[m.rows];
  if (nnz < ctx.tuning.scatterMinNnz) return false;
  if (plan.denseNegZeroRow) {
    for (let r = 0; r < m.rows; r++) if (plan.denseNegZeroRow[r]) return false;
  }
  const csc = cscPlanOf(ctx.plans, m, plan.csr);
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
      const plan = sparsePlanOf(ctx.plans, m);
      if (plan.finite) {
        if (useScatter(ctx, m, plan, x, xOff, negTotal)) {
          scatterLinear(ctx, m, cscPlanOf(ctx.plans, m, plan.csr) as CscPlan, x, xOff, out, outIsZero);
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
      const plan = sparsePlanOf(ctx.plans, m);
      if (plan.finite) {
        sparseLinear(ctx, m, plan, x, 0, out, negTotal, stats);
        if (stats) stats.sparse++;
        return out;
      }
    }
  }
  return linear(ctx, m, x, path, { out, stats });
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
  else if (m.readRow) m.readRow(r, out);
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
  if (m.readRow) m.readRow(r, row);
  else expandRow(m.csr as CsrMatrix, r, row);
  return row;
}
