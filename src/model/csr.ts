/** Conversions between the dense and CSR forms of a `Matrix` (weights.ts). */
import { ChipcError } from '../util/errors.ts';
import type { CsrMatrix, Matrix } from './weights.ts';

/** CSR of a dense row-major matrix, keeping every entry that is not ±0 (NaN is kept). */
export function denseToCsr(dense: Float32Array, rows: number, cols: number): CsrMatrix {
  if (dense.length !== rows * cols) {
    throw new ChipcError('weights.matrix', `dense data has ${dense.length} entries, expected ${rows}×${cols}`);
  }
  let nnz = 0;
  for (let i = 0; i < dense.length; i++) if (dense[i] !== 0) nnz++;
  const rowPtr = new Uint32Array(rows + 1);
  const colIdx = new Uint32Array(nnz);
  const values = new Float32Array(nnz);
  let k = 0;
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) {
      const v = dense[base + c];
      if (v !== 0) { colIdx[k] = c; values[k] = v; k++; }
    }
    rowPtr[r + 1] = k;
  }
  return { rowPtr, colIdx, values };
}

/** Dense row-major form of a CSR matrix (absent entries are +0). */
export function csrToDense(csr: CsrMatrix, rows: number, cols: number): Float32Array {
  if (csr.rowPtr.length !== rows + 1) {
    throw new ChipcError('weights.matrix', `CSR rowPtr has ${csr.rowPtr.length} entries, expected ${rows + 1}`);
  }
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let k = csr.rowPtr[r]; k < csr.rowPtr[r + 1]; k++) {
      const c = csr.colIdx[k];
      if (c >= cols) throw new ChipcError('weights.matrix', `CSR column ${c} out of range [0, ${cols})`);
      out[r * cols + c] = csr.values[k];
    }
  }
  return out;
}

/** The matrix with a CSR form added (computed from dense, skipping ±0); unchanged if it has one. */
export function sparsifyMatrix(m: Matrix): Matrix {
  if (m.csr) return m;
  if (!m.dense) throw new ChipcError('weights.matrix', 'matrix has neither dense nor CSR data');
  return { ...m, csr: denseToCsr(m.dense, m.rows, m.cols) };
}

/** The matrix with a dense form added (from CSR); unchanged if it has one. */
export function densifyMatrix(m: Matrix): Matrix {
  if (m.dense) return m;
  if (!m.csr) throw new ChipcError('weights.matrix', 'matrix has neither dense nor CSR data');
  return { ...m, dense: csrToDense(m.csr, m.rows, m.cols) };
}
