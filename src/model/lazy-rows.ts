/**
 * A matrix whose rows are decoded on demand from a `.chip` tensor held in memory (HeldTensor,
 * chipfile/read.ts) instead of loaded whole. A chip's token embedding holds ≈ 4.7 M entries in
 * ≈ 1 M blocks, and decoding it into a CSR was most of loading a chip, while a run feeds a few
 * thousand distinct tokens. `readRow` decodes a row from the blocks that meet it (cached per
 * row); `csr` is a getter that builds the whole CSR on first access (the arrays the eager loader
 * builds), so every other reader of a Matrix still sees a plain CSR matrix.
 *
 * A row holds what its CSR row holds: every element whose value is not ±0 (NaN included), in
 * ascending column — so readRow gives, bit for bit, what expanding the CSR row gives.
 */
import { ChipcError } from '../util/errors.ts';
import { f16ToF32 } from '../safetensors/dtype.ts';
import type { HeldTensor } from '../chipfile/read.ts';
import { blocksMeeting } from '../chipfile/format.ts';
import type { CsrMatrix, Matrix } from './weights.ts';

/** Decoded rows kept (then the cache starts again): an embedding row is ≈ 20 entries. */
const MAX_CACHED_ROWS = 1 << 16;

/** Bytes per element of the dtypes a held matrix can have. */
const ELEM_BYTES: Record<string, number> = { F32: 4, BF16: 2, F16: 2 };

interface SparseRow {
  cols: Uint32Array;
  values: Float32Array;
}

const EMPTY_ROW: SparseRow = { cols: new Uint32Array(0), values: new Float32Array(0) };

/**
 * The [rows, cols] matrix of `held` (F32, BF16 or F16, row-major) read row by row; `buildCsr` makes
 * the whole CSR when `csr` is first read (the loader's block decoder over `held`). ChipcError
 * weights.mismatch when the tensor is not rows × cols elements of one of those dtypes.
 */
export function lazyRowMatrix(held: HeldTensor, rows: number, cols: number, buildCsr: () => CsrMatrix): Matrix {
  const dtype = held.info.dtype;
  const elem = ELEM_BYTES[dtype];
  if (elem === undefined || held.info.numel !== rows * cols) {
    throw new ChipcError('weights.mismatch', `tensor ${held.name} (${dtype}, ${held.info.numel} elements) cannot be read as ${rows}×${cols} F32, BF16 or F16 rows`);
  }
  const { starts, lengths, dataPos } = held.table;
  const rowBytes = cols * elem;
  // the row's bytes: the blocks copied in, zero elsewhere (the copied span is zeroed again after)
  const scratch = new Uint8Array(rowBytes);
  const colsOut = new Uint32Array(cols);
  const valuesOut = new Float32Array(cols);
  const f16 = dtype === 'F16';
  const bits = new Uint32Array(1);
  const asF32 = new Float32Array(bits.buffer);

  const decodeRow = (r: number): SparseRow => {
    const s = r * rowBytes;
    const e = s + rowBytes;
    const [lo, last] = blocksMeeting(held.table, s, e);
    if (last === lo) return EMPTY_ROW;
    const from = Math.max(s, starts[lo]!);
    const to = Math.min(e, starts[last - 1]! + lengths[last - 1]!);
    const dataFrom = dataPos[lo]! + (from - starts[lo]!);
    // blocks [lo, last) are contiguous in the block data: one read covers them
    const data = held.readBlockData(held.name, dataFrom, dataPos[last - 1]! + (to - starts[last - 1]!));
    for (let k = lo; k < last; k++) {
      const bs = Math.max(s, starts[k]!);
      const be = Math.min(e, starts[k]! + lengths[k]!);
      const src = dataPos[k]! + (bs - starts[k]!) - dataFrom - (bs - s);
      for (let p = bs - s; p < be - s; p++) scratch[p] = data[src + p]!;
    }
    // the elements the blocks meet (an element split between two blocks once), in ascending column
    let n = 0;
    let next = 0;
    for (let k = lo; k < last; k++) {
      const c1 = Math.ceil((Math.min(e, starts[k]! + lengths[k]!) - s) / elem);
      for (let c = Math.max(next, Math.floor((Math.max(s, starts[k]!) - s) / elem)); c < c1; c++) {
        // each dtype's element as the eager loader converts it (blockCsr), so that even a NaN's bits agree
        const p = c * elem;
        let v: number;
        if (elem === 4) {
          bits[0] = scratch[p]! | (scratch[p + 1]! << 8) | (scratch[p + 2]! << 16) | (scratch[p + 3]! << 24);
          v = asF32[0]!;
        } else if (f16) {
          v = f16ToF32(scratch[p]! | (scratch[p + 1]! << 8));
          if (v !== v) v = Number.NaN; // (blockCsr's float16 NaN carries no payload)
        } else {
          bits[0] = (scratch[p]! | (scratch[p + 1]! << 8)) << 16;
          v = asF32[0]!;
        }
        if (v === 0) continue; // ±0 is not stored (NaN is)
        colsOut[n] = c;
        valuesOut[n++] = v;
      }
      next = Math.max(next, c1);
    }
    const c0 = Math.floor((from - s) / elem);
    scratch.fill(0, c0 * elem, next * elem);
    return { cols: colsOut.slice(0, n), values: valuesOut.slice(0, n) };
  };

  const cache = new Map<number, SparseRow>();
  let csr: CsrMatrix | undefined;
  const m: Matrix = {
    rows,
    cols,
    readRow: (r, out) => {
      out.fill(0);
      if (csr !== undefined) {
        for (let k = csr.rowPtr[r]!; k < csr.rowPtr[r + 1]!; k++) out[csr.colIdx[k]!] = csr.values[k]!;
        return;
      }
      let row = cache.get(r);
      if (row === undefined) {
        row = decodeRow(r);
        if (cache.size >= MAX_CACHED_ROWS) cache.clear();
        cache.set(r, row);
      }
      for (let k = 0; k < row.cols.length; k++) out[row.cols[k]!] = row.values[k]!;
    },
  };
  Object.defineProperty(m, 'csr', {
    get: (): CsrMatrix => {
      if (csr === undefined) {
        csr = buildCsr();
        cache.clear();
      }
      return csr;
    },
    enumerable: true,
    configurable: true,
  });
  return m;
}
