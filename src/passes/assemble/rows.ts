/**
 * Forms → weight rows over the real residual. Content coefficients are scaled by 2^(m−e) (the
 * inverse of the frame's norm scale: exact, a power of two); a constant c is drawn from the
 * frame's constant dims: split into at most three bf16-exact parts with disjoint bit ranges
 * (top 8 significant bits, next 8, next 8), placed on the unit anchor and the two constant-one
 * dims, so the row's constant is exact in any summation order. Every emitted weight must be
 * exactly representable in bf16 (8 significant bits) — an internal error otherwise.
 */
import { bf16Exact } from '../../safetensors/dtype.ts';
import { ChipcError } from '../../util/errors.ts';
import { splitBf16, type ResidualFrame } from '../../lower/frame.ts';
import type { Form, VDim } from '../../lower/forms.ts';

/** A sparse row: parallel arrays of column indices (ascending) and values. */
export interface SparseRow {
  cols: number[];
  vals: number[];
}

export type SlotMap = (v: VDim) => number;

function checkWeight(w: number, what: string): number {
  if (!Number.isFinite(w) || Math.fround(w) !== w || !bf16Exact(w)) {
    throw new ChipcError('assemble.weight', `internal: ${what} weight ${w} is not exactly representable in bf16`);
  }
  return w;
}

/** The sparse weight row computing `f` from the normalised residual. */
export function formRow(f: Form, frame: ResidualFrame, slotOf: SlotMap, what = 'a'): SparseRow {
  const acc = new Map<number, number>();
  const add = (col: number, w: number) => acc.set(col, (acc.get(col) ?? 0) + w);
  const inv = 1 / frame.normScale;
  for (const t of f.terms) if (t.coef !== 0) add(slotOf(t.dim), t.coef * inv);
  const parts = splitBf16(f.constant);
  const constDims = [frame.unitAnchor.dim, ...frame.constOnes];
  const constNorm = [frame.unitAnchor.n * 2 ** frame.e, ...frame.constOnes.map(() => frame.normScale)];
  parts.forEach((p, i) => add(constDims[i]!, p / constNorm[i]!));
  const cols = [...acc.keys()].filter((c) => acc.get(c) !== 0).sort((a, b) => a - b);
  return { cols, vals: cols.map((c) => checkWeight(acc.get(c)!, what)) };
}

/** Accumulates sparse rows into a CSR matrix of a fixed shape. */
export class CsrBuilder {
  private readonly rowsData: (SparseRow | null)[];
  constructor(
    readonly rows: number,
    readonly cols: number,
  ) {
    this.rowsData = new Array(rows).fill(null);
  }
  setRow(r: number, row: SparseRow): void {
    if (r < 0 || r >= this.rows) throw new Error(`internal: row ${r} outside [0, ${this.rows})`);
    this.rowsData[r] = row;
  }
  /**
   * Add a single entry (column-wise writes such as down/out projections); repeated entries sum,
   * in the order they were added. Appended as given: `build` sorts a row and sums its repeats (a
   * search per entry made rows written by many heads quadratic).
   */
  add(r: number, c: number, w: number): void {
    let row = this.rowsData[r];
    if (!row) {
      row = { cols: [], vals: [] };
      this.rowsData[r] = row;
    }
    row.cols.push(c);
    row.vals.push(w);
  }
  build(what: string): { rows: number; cols: number; csr: { rowPtr: Uint32Array; colIdx: Uint32Array; values: Float32Array } } {
    let nnz = 0;
    for (const r of this.rowsData) if (r) nnz += r.cols.length;
    const rowPtr = new Uint32Array(this.rows + 1);
    const colIdx = new Uint32Array(nnz);
    const values = new Float32Array(nnz);
    let k = 0;
    for (let r = 0; r < this.rows; r++) {
      rowPtr[r] = k;
      const row = this.rowsData[r];
      if (row) {
        let increasing = true;
        for (let i = 1; i < row.cols.length && increasing; i++) increasing = row.cols[i - 1]! < row.cols[i]!;
        // (a stable sort: the repeats of a column keep the order they were added in, and sum so)
        const order = increasing ? row.cols.map((_, i) => i) : row.cols.map((_, i) => i).sort((a, b) => row.cols[a]! - row.cols[b]!);
        let i = 0;
        while (i < order.length) {
          const c = row.cols[order[i]!]!;
          let w = row.vals[order[i++]!]!;
          while (i < order.length && row.cols[order[i]!] === c) w += row.vals[order[i++]!]!;
          if (w === 0) continue;
          if (c < 0 || c >= this.cols) throw new Error(`internal: column ${c} outside [0, ${this.cols}) in ${what}`);
          colIdx[k] = c;
          values[k] = checkWeight(w, what);
          k++;
        }
      }
    }
    rowPtr[this.rows] = k;
    return { rows: this.rows, cols: this.cols, csr: { rowPtr, colIdx: colIdx.subarray(0, k), values: values.subarray(0, k) } };
  }
}

/**
 * Build a CSR matrix row by row from a callback that emits (column, weight) entries of row r in
 * any order (duplicates sum). `fill` is called twice per row — once to count the entries, once to
 * place them — so the arrays are allocated once at their size and matrices with many rows
 * (embeddings and LM heads at real vocabulary sizes) cost no per-row objects and no regrowth.
 * `fill` must emit the same entries both times.
 */
export function csrFromRows(
  rows: number, cols: number, what: string,
  fill: (r: number, emit: (c: number, w: number) => void) => void,
): { rows: number; cols: number; csr: { rowPtr: Uint32Array; colIdx: Uint32Array; values: Float32Array } } {
  let total = 0;
  const count = () => { total++; };
  for (let r = 0; r < rows; r++) fill(r, count);
  const rowPtr = new Uint32Array(rows + 1);
  const colIdx = new Uint32Array(total);
  const values = new Float32Array(total);
  let k = 0;
  const rc: number[] = [];
  const rw: number[] = [];
  const emit = (c: number, w: number) => {
    rc.push(c);
    rw.push(w);
  };
  // (most weights repeat — 1, the frame constants — so the last one found exact is not checked again)
  let exact = NaN;
  const place = (c: number, w: number): void => {
    if (c < 0 || c >= cols) throw new Error(`internal: column ${c} outside [0, ${cols}) in ${what}`);
    if (w !== exact) exact = checkWeight(w, what);
    colIdx[k] = c;
    values[k] = w;
    k++;
  };
  for (let r = 0; r < rows; r++) {
    rowPtr[r] = k;
    rc.length = 0;
    rw.length = 0;
    fill(r, emit);
    if (k + rc.length > total) throw new Error(`internal: ${what} row ${r} emitted more entries than when counted`);
    // Columns already strictly increasing (the embedding's rows, most FFN rows): no sort, and each
    // weight is its own sum (0 + w = w, and w = ±0 is dropped either way).
    let increasing = true;
    for (let i = 1; i < rc.length && increasing; i++) increasing = rc[i]! > rc[i - 1]!;
    if (increasing) {
      for (let i = 0; i < rc.length; i++) if (rw[i] !== 0) place(rc[i]!, rw[i]!);
      continue;
    }
    const order = rc.map((_, i) => i);
    order.sort((a, b) => rc[a]! - rc[b]!);
    let i = 0;
    while (i < order.length) {
      const c = rc[order[i]!]!;
      let w = 0;
      while (i < order.length && rc[order[i]!] === c) w += rw[order[i++]!]!;
      if (w !== 0) place(c, w);
    }
  }
  rowPtr[rows] = k;
  return { rows, cols, csr: { rowPtr, colIdx: k === total ? colIdx : colIdx.subarray(0, k), values: k === total ? values : values.subarray(0, k) } };
}
