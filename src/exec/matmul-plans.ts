/**
 * What the sparse path of the linear layers (matmul.ts) precomputes once per matrix, cached per
 * Matrix object (so weights must not be mutated after their first sparse use): its CSR (its own,
 * or one derived once from the dense form), whether the stored values are finite, the non-empty
 * rows and the dense rows that hold a −0 (SparsePlan), the column-major copy used by the scatter
 * forms (CscPlan; for the greedy LM head, ColumnRuns where the columns fall into few runs), and
 * facts read off them (allPlusZero, storedEntries, nonEmptyRowUnion). Every function here is a
 * pure function of the matrix; none computes a product. The caches are the fields of an
 * ExecPlans (plans.ts: ctx.plans), passed first.
 */
import { denseToCsr } from '../model/csr.ts';
import { ChipcError } from '../util/errors.ts';
import type { WasmHeap } from './wasm-heap.ts';
import type { CsrMatrix, Matrix } from '../model/weights.ts';
import type { ColumnExtremes, ColumnRuns, CscPlan, ExecPlans, SparsePlan } from './plans.ts';

export type { ColumnRuns, CscPlan, SparsePlan } from './plans.ts';

function csrAllFinite(plans: ExecPlans, csr: CsrMatrix): boolean {
  const csrFinite = plans.csrFinite;
  let ok = csrFinite.get(csr);
  if (ok === undefined) {
    const v = csr.values;
    ok = allFiniteBits(new Uint32Array(v.buffer, v.byteOffset, v.length));
    csrFinite.set(csr, ok);
  }
  return ok;
}

/**
 * By bits: an exponent of all ones is ±Inf or NaN. (The loop is a function of its own, nothing
 * after it: the map's update after it, first run after the JIT compiled the loop, threw that away.)
 */
function allFiniteBits(bits: Uint32Array): boolean {
  for (let i = 0; i < bits.length; i++) if ((bits[i]! & 0x7f800000) === 0x7f800000) return false;
  return true;
}

/**
 * CSR of a matrix: its own, or one derived from its dense form (once per dense array and `plans`;
 * without plans, derived again on every call).
 */
export function csrOf(m: Matrix, plans?: ExecPlans): CsrMatrix {
  if (m.csr) return m.csr;
  if (!m.dense) throw new ChipcError('exec.bad-matrix', 'matrix has neither dense nor CSR data');
  if (plans === undefined) return denseToCsr(m.dense, m.rows, m.cols);
  let c = plans.derivedCsr.get(m.dense);
  if (!c) {
    c = denseToCsr(m.dense, m.rows, m.cols);
    plans.derivedCsr.set(m.dense, c);
  }
  return c;
}

/** The SparsePlan of m (plans.ts; built once per Matrix and `plans`). */
export function sparsePlanOf(plans: ExecPlans, m: Matrix): SparsePlan {
  const sparsePlans = plans.sparsePlans;
  let p = sparsePlans.get(m);
  if (p && p.csr === (m.csr ?? p.csr) && (m.dense !== undefined) === (p.denseNegZeroRow !== null)) return p;
  const csr = csrOf(m, plans);
  let denseNegZeroRow: Uint8Array | null = null;
  if (m.dense) {
    denseNegZeroRow = new Uint8Array(m.rows);
    const u = new Uint32Array(m.dense.buffer, m.dense.byteOffset, m.dense.length);
    for (let i = 0; i < u.length; i++) if (u[i] === 0x80000000) denseNegZeroRow[Math.floor(i / m.cols)] = 1;
  }
  // (the non-empty rows are listed on first request, nonEmptyRowsOf: the greedy LM head, 248,320
  // rows at qwen3.5-4b, never asks, and listing them was two passes and a fresh 1 MB in a fresh
  // process's first step)
  p = { csr, finite: csrAllFinite(plans, csr), nonEmptyRows: null, denseNegZeroRow };
  sparsePlans.set(m, p);
  return p;
}

/** The rows of m with at least one stored entry, ascending (listed once per SparsePlan). */
export function nonEmptyRowsOf(plans: ExecPlans, m: Matrix): Uint32Array {
  const p = sparsePlanOf(plans, m);
  if (p.nonEmptyRows === null) p.nonEmptyRows = listNonEmptyRows(p.csr.rowPtr, m.rows);
  return p.nonEmptyRows;
}

/** The rows r < rows with rowPtr[r + 1] > rowPtr[r]: counted first, then filled (a growing array cost more). */
function listNonEmptyRows(rowPtr: Uint32Array | Int32Array, rows: number): Uint32Array {
  const out = new Uint32Array(countNonEmptyRows(rowPtr, rows));
  fillNonEmptyRows(rowPtr, rows, out);
  return out;
}

function countNonEmptyRows(rowPtr: Uint32Array | Int32Array, rows: number): number {
  let count = 0;
  for (let r = 0; r < rows; r++) if (rowPtr[r + 1] > rowPtr[r]) count++;
  return count;
}

function fillNonEmptyRows(rowPtr: Uint32Array | Int32Array, rows: number, out: Uint32Array): void {
  for (let r = 0, i = 0; r < rows; r++) if (rowPtr[r + 1] > rowPtr[r]) out[i++] = r;
}

/**
 * The CscPlan of m's CSR `csr` (plans.ts; built once per CSR and `plans`, so a matrix given new
 * storage gets a new one), null for unsorted CSR rows.
 */
export function cscPlanOf(plans: ExecPlans, m: Matrix, csr: CsrMatrix, heap?: WasmHeap | null): CscPlan | null {
  const cscPlans = plans.cscPlans;
  let p = cscPlans.get(csr);
  if (p !== undefined) return p;
  const { rowPtr, colIdx, values } = csr;
  const nnz = rowPtr[m.rows];
  // The plan's arrays in `heap`, a context's wasm memory, when given and there is room: that
  // context's kernels read them where they are (delta.ts kernelOf and foldFresh); the plan then
  // keeps that memory alive. One more place than the starts: column c is counted at c + 2 (below).
  const inHeap = heap != null && m.rows <= 0x10000 ? heap : null;
  const counts = inHeap?.take(Uint32Array, m.cols + 2) ?? new Uint32Array(m.cols + 2);
  // Each loop is a function of its own with nothing after it: a fresh process transposes every
  // matrix in its first steps, the JIT compiles a loop while the first call runs it, and an
  // operation after the loop, never run before, threw that code away at every matrix.
  const maxRowNnz = countColumns(rowPtr, colIdx, m.rows, counts);
  if (maxRowNnz < 0) {
    cscPlans.set(csr, null);
    return null;
  }
  // Column c counted at c + 2: the running sums from place 1 leave column c's start at c + 1, the
  // scatter advances that to c's end, which is column c + 1's start, and place 0 holds column 0's
  // start (0). So the scatter needs no copy of the starts to advance (a fresh 4 bytes a column,
  // 811 KB over the chip's matrices).
  prefixSumsFrom(counts, 1, m.cols);
  const h = inHeap?.carve({ rowIdx: [Uint16Array, nnz], cv: [Float32Array, nnz] }) ?? null;
  const rowIdx = h !== null ? h.rowIdx : m.rows <= 0x10000 ? new Uint16Array(nnz) : new Uint32Array(nnz);
  const cv = h !== null ? h.cv : new Float32Array(nnz);
  scatterColumns(rowPtr, colIdx, values, m.rows, counts, rowIdx, cv);
  const colPtr = counts.subarray(0, m.cols + 1);
  p = { colPtr, rowIdx, values: cv, maxRowNnz, usedCols: usedColumns(colPtr, m.cols), extremes: null };
  cscPlans.set(csr, p);
  return p;
}

/**
 * cscPlanOf's first pass: the rows' order check, the longest row and the column counts (column c
 * at counts[c + 2]) in one pass; returns the longest row's length, or −1 when a row does not list
 * its columns in ascending order.
 */
function countColumns(rowPtr: Uint32Array | Int32Array, colIdx: Uint32Array | Int32Array, rows: number, counts: Uint32Array): number {
  let maxRowNnz = 0;
  for (let r = 0; r < rows; r++) {
    const k0 = rowPtr[r];
    const k1 = rowPtr[r + 1];
    const len = k1 - k0; // (made for every row: only the test's outcome may change late)
    if (len > maxRowNnz) maxRowNnz = len;
    let last = -1;
    for (let k = k0; k < k1; k++) {
      const c = colIdx[k];
      if (c <= last) return -1;
      last = c;
      counts[c + 2]++;
    }
  }
  return maxRowNnz;
}

/** counts[from+1 .. n] into running sums from counts[from]. */
function prefixSumsFrom(counts: Uint32Array, from: number, n: number): void {
  for (let c = from; c < n; c++) counts[c + 1] += counts[c];
}

/** cscPlanOf's scatter: every entry to its column's next place (column c's at next[c + 1], advanced). */
function scatterColumns(
  rowPtr: Uint32Array | Int32Array, colIdx: Uint32Array | Int32Array, values: Float32Array, rows: number, next: Uint32Array,
  rowIdx: Uint16Array | Uint32Array, cv: Float32Array,
): void {
  for (let r = 0; r < rows; r++) {
    for (let k = rowPtr[r]; k < rowPtr[r + 1]; k++) {
      const at = next[colIdx[k] + 1]++;
      rowIdx[at] = r;
      cv[at] = values[k];
    }
  }
}

/** One past the last column with an entry (0 when there is none). */
function usedColumns(colPtr: Uint32Array, cols: number): number {
  let c = cols;
  while (c > 0 && colPtr[c] === colPtr[c - 1]) c--;
  return c;
}

/**
 * Per column of a CscPlan, its largest and smallest stored weight (+0 for a column without
 * entries; a NaN weight is passed over): boundedArgmax's bounds, found on its first request (only
 * the argmax asks, and the chip's LM head takes its ColumnRuns, which have their own).
 */
export function columnExtremesOf(p: CscPlan | ColumnRuns): ColumnExtremes {
  if ('runs' in p) return p;
  if (p.extremes === null) {
    const cols = p.colPtr.length - 1;
    const colMax = new Float32Array(cols);
    const colMin = new Float32Array(cols);
    weightExtremes(p.values, 1, 0, p.colPtr, cols, colMax, colMin);
    p.extremes = { colMax, colMin };
  }
  return p.extremes;
}

/**
 * Per column c, the largest and smallest of w[stride·k + at] for k = ptr[c] … ptr[c+1) (a CscPlan's
 * entries: stride 1; ColumnRuns' runs: their weight words), +0 for a column with none (or only
 * NaN, which is passed over).
 */
function weightExtremes(
  w: Float32Array, stride: number, at: number, ptr: Uint32Array, cols: number, colMax: Float32Array, colMin: Float32Array,
): void {
  for (let c = 0; c < cols; c++) {
    let hi = -Infinity;
    let lo = Infinity;
    for (let k = ptr[c]; k < ptr[c + 1]; k++) {
      const v = w[stride * k + at];
      if (v > hi) hi = v;
      if (v < lo) lo = v;
    }
    colMax[c] = hi === -Infinity ? 0 : hi;
    colMin[c] = lo === Infinity ? 0 : lo;
  }
}

/**
 * ColumnRuns are kept only while the runs number at most this share of the stored entries: a run
 * takes 16 bytes and a CscPlan entry 8, and a pass that finds more stops there (then the caller
 * takes the CscPlan).
 */
const RUNS_PER_ENTRY = 1 / 4;

/**
 * The ColumnRuns of m's CSR `csr` (plans.ts; built once per CSR and `plans`, so a matrix given new
 * storage gets new ones), or null: when a CSR row does not list its columns in ascending order
 * (cscPlanOf's null), or when the runs would number more than RUNS_PER_ENTRY of the stored
 * entries (the caller then takes cscPlanOf).
 *
 * One pass over the CSR in row order keeps one open run per column: an entry joins its column's
 * open run when it has the run's weight bits and lies on its progression (the second entry of a
 * run sets the stride), else it closes that run and opens its own. Closed runs are written in
 * closing order, which is each column's row order, then grouped by column. Nothing the size of
 * the entries is written: for the chip's LM head this replaces the transpose's 6.5 MB of rows and
 * weights (and their fresh pages) with about 30 KB.
 */
export function columnRunsOf(plans: ExecPlans, m: Matrix, csr: CsrMatrix): ColumnRuns | null {
  const cache = plans.columnRuns;
  let p = cache.get(csr);
  if (p !== undefined) return p;
  p = buildColumnRuns(m.rows, m.cols, csr);
  cache.set(csr, p);
  return p;
}

function buildColumnRuns(rows: number, cols: number, csr: CsrMatrix): ColumnRuns | null {
  const { rowPtr, colIdx, values } = csr;
  const limit = Math.floor(rowPtr[rows] * RUNS_PER_ENTRY);
  const bits = new Int32Array(values.buffer, values.byteOffset, values.length);
  // each column's open run at 4c: first row (−1: none), stride, count, weight bits
  const open = new Int32Array(4 * cols);
  markNoneOpen(open, cols);
  const colPtr = new Uint32Array(cols + 1);
  const runPtr = new Uint32Array(cols + 1);
  const scan: RunScan = { closed: new Int32Array(4 * CLOSED_ROOM), closedCol: new Int32Array(CLOSED_ROOM), closedCount: new Int32Array(1) };
  const maxRowNnz = scanRuns(rowPtr, colIdx, bits, rows, limit, open, colPtr, runPtr, scan);
  if (maxRowNnz < 0) return null;
  countOpenRuns(open, runPtr, colPtr, cols);
  const runs = new Int32Array(4 * runPtr[cols]);
  const next = runPtr.slice(0, cols);
  placeClosedRuns(scan.closed, scan.closedCol, scan.closedCount[0], runs, next);
  placeOpenRuns(open, cols, runs, next);
  const weights = new Float32Array(runs.buffer);
  // the column extremes as cscPlanOf finds them (a run repeats one weight; NaN is passed over)
  const colMax = new Float32Array(cols);
  const colMin = new Float32Array(cols);
  weightExtremes(weights, 4, 3, runPtr, cols, colMax, colMin);
  return { runPtr, runs, weights, colPtr, maxRowNnz, colMax, colMin };
}

/** The closed-run lists' first room (runs; doubled when full): the chip's LM head closes 1,359. */
const CLOSED_ROOM = 4096;

/**
 * buildColumnRuns' scan state: the closed runs (4 ints each, in closing order), their columns,
 * and how many runs are closed (at closedCount[0], written as it changes: nothing follows the scan's loop).
 */
interface RunScan { closed: Int32Array; closedCol: Int32Array; closedCount: Int32Array }

function markNoneOpen(open: Int32Array, cols: number): void {
  for (let c = 0; c < cols; c++) open[4 * c] = -1;
}

/** The closed-run lists doubled. */
function growClosed(scan: RunScan): void {
  const closed = new Int32Array(2 * scan.closed.length);
  closed.set(scan.closed);
  const closedCol = new Int32Array(2 * scan.closedCol.length);
  closedCol.set(scan.closedCol);
  scan.closed = closed;
  scan.closedCol = closedCol;
}

/**
 * buildColumnRuns' scan of the rows: counts each column's closed runs (at runPtr[c + 1]) and
 * their entries (at colPtr[c + 1]: a run's count is added when it closes, so no entry writes a
 * count of its own); returns the longest row's length, or −1 when a row's columns are not
 * ascending or the runs pass `limit`.
 * Opening a column's first run and closing a run to open the next are one path (the open run's
 * record is written to the closed list either way and counted only when a run was open), and the
 * list's room is tested on that path: the JIT compiles this loop while its first call runs it,
 * from the paths taken so far, and a path first taken later (a close: in the chip's LM head first
 * where the vocabulary's token kinds change, rows into the matrix) threw the compiled code away.
 */
function scanRuns(
  rowPtr: Uint32Array | Int32Array, colIdx: Uint32Array | Int32Array, bits: Int32Array, rows: number, limit: number,
  open: Int32Array, colPtr: Uint32Array, runPtr: Uint32Array, scan: RunScan,
): number {
  let closed = scan.closed;
  let closedCol = scan.closedCol;
  const closedCount = scan.closedCount;
  let nClosed = 0;
  let nOpen = 0;
  let maxRowNnz = 0;
  for (let r = 0; r < rows; r++) {
    const k0 = rowPtr[r];
    const k1 = rowPtr[r + 1];
    const len = k1 - k0; // (made for every row: only the test's outcome may change late)
    if (len > maxRowNnz) maxRowNnz = len;
    let last = -1;
    for (let k = k0; k < k1; k++) {
      const c = colIdx[k];
      if (c <= last) return -1;
      last = c;
      const b = bits[k];
      const o = 4 * c;
      const s = open[o];
      const n = open[o + 2];
      if (s >= 0 && b === open[o + 3]) {
        if (n === 1) { open[o + 1] = r - s; open[o + 2] = 2; continue; }
        if (r === s + n * open[o + 1]) { open[o + 2] = n + 1; continue; }
      }
      if (nClosed === closedCol.length) {
        growClosed(scan);
        closed = scan.closed;
        closedCol = scan.closedCol;
      }
      const q = 4 * nClosed;
      closed[q] = s;
      closed[q + 1] = open[o + 1];
      closed[q + 2] = n;
      closed[q + 3] = open[o + 3];
      closedCol[nClosed] = c;
      const wasOpen = (s >>> 31) ^ 1;
      nClosed += wasOpen;
      nOpen += 1 - wasOpen;
      runPtr[c + 1] += wasOpen;
      colPtr[c + 1] += n; // (0 when no run was open)
      closedCount[0] = nClosed;
      if (nClosed + nOpen > limit) return -1;
      open[o] = r;
      open[o + 1] = 0;
      open[o + 2] = 1;
      open[o + 3] = b;
    }
  }
  return maxRowNnz;
}

/** Each column's open run and its entries counted, then runPtr and colPtr into running sums. */
function countOpenRuns(open: Int32Array, runPtr: Uint32Array, colPtr: Uint32Array, cols: number): void {
  for (let c = 0; c < cols; c++) {
    if (open[4 * c] >= 0) { runPtr[c + 1]++; colPtr[c + 1] += open[4 * c + 2]; }
    runPtr[c + 1] += runPtr[c];
    colPtr[c + 1] += colPtr[c];
  }
}

/** The closed runs to their columns' places (closing order is each column's row order). */
function placeClosedRuns(closed: Int32Array, closedCol: Int32Array, nClosed: number, runs: Int32Array, next: Uint32Array): void {
  for (let i = 0; i < nClosed; i++) {
    const at = 4 * next[closedCol[i]]++;
    runs[at] = closed[4 * i];
    runs[at + 1] = closed[4 * i + 1];
    runs[at + 2] = closed[4 * i + 2];
    runs[at + 3] = closed[4 * i + 3];
  }
}

/** Each column's open run after its closed ones. */
function placeOpenRuns(open: Int32Array, cols: number, runs: Int32Array, next: Uint32Array): void {
  for (let c = 0; c < cols; c++) {
    if (open[4 * c] < 0) continue;
    const at = 4 * next[c]++;
    runs[at] = open[4 * c];
    runs[at + 1] = open[4 * c + 1];
    runs[at + 2] = open[4 * c + 2];
    runs[at + 3] = open[4 * c + 3];
  }
}

/**
 * True when every weight of the matrix is +0 (bit pattern 0): no CSR entry and, if there is a dense
 * form, no −0 in it. On the sparse path such a matrix maps any finite input that has at least one
 * activation with a clear sign bit to act(+0) = +0 in every row (matmul.ts's module comment: a sum
 * of ±0 terms is −0 only when every term is −0). Cached with the matrix's sparse plan.
 */
export function allPlusZero(plans: ExecPlans, m: Matrix): boolean {
  const p = sparsePlanOf(plans, m);
  if (nonEmptyRowsOf(plans, m).length > 0) return false;
  if (p.denseNegZeroRow) for (let r = 0; r < m.rows; r++) if (p.denseNegZeroRow[r]) return false;
  return true;
}

/** Stored entries of the matrix (its CSR's, own or derived). */
export function storedEntries(plans: ExecPlans, m: Matrix): number {
  const p = sparsePlanOf(plans, m);
  return p.csr.rowPtr[m.rows];
}

/**
 * Sorted union of the non-empty rows of two matrices with the same row count (cached per pair's
 * first matrix and both matrices' storage: new storage, a new union).
 */
export function nonEmptyRowUnion(plans: ExecPlans, a: Matrix, b: Matrix): Int32Array {
  const rowUnions = plans.rowUnions;
  const pa = sparsePlanOf(plans, a);
  const pb = sparsePlanOf(plans, b);
  const c = rowUnions.get(a);
  if (c && c.other === b && c.aCsr === pa.csr && c.bCsr === pb.csr) return c.rows;
  const mark = new Uint8Array(a.rows);
  for (const r of nonEmptyRowsOf(plans, a)) mark[r] = 1;
  for (const r of nonEmptyRowsOf(plans, b)) mark[r] = 1;
  const rows: number[] = [];
  for (let r = 0; r < a.rows; r++) if (mark[r]) rows.push(r);
  const out = Int32Array.from(rows);
  rowUnions.set(a, { other: b, aCsr: pa.csr, bCsr: pb.csr, rows: out });
  return out;
}
