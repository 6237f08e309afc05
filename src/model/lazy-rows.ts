/**
 * A matrix whose rows are decoded on demand instead of loaded whole: a chip's token embedding
 * holds ≈ 4.7 M entries in ≈ 1 M blocks, and decoding it into a CSR was most of loading a chip,
 * while a run feeds a few thousand distinct tokens (load-weights.ts heldRows decodes them from a
 * `.chip` tensor held in memory). `readRow` decodes a row on its first lookup and keeps it; `csr`
 * is a getter that builds the whole CSR on first access, so every other reader of a Matrix still
 * sees a plain CSR matrix.
 */
import type { CsrMatrix, Matrix } from './weights.ts';

/** Decoded rows kept (then the cache starts again): an embedding row is ≈ 20 entries. */
const MAX_CACHED_ROWS = 1 << 16;

/**
 * The [rows, cols] matrix whose row r is `decodeRow(r)` (a CSR of that one row: the entries the
 * whole CSR's row r holds) and whose whole CSR is `buildCsr()`, made when `csr` is first read.
 * readRow then expands either into `out`, +0 where the row stores nothing: the same bits.
 */
export function lazyRowMatrix(rows: number, cols: number, decodeRow: (r: number) => CsrMatrix, buildCsr: () => CsrMatrix): Matrix {
  const cache = new Map<number, CsrMatrix>();
  let csr: CsrMatrix | undefined;
  const m: Matrix = {
    rows,
    cols,
    readRow: (r, out) => {
      let src: CsrMatrix;
      let at = r;
      if (csr !== undefined) src = csr;
      else {
        let row = cache.get(r);
        if (row === undefined) {
          row = decodeRow(r);
          if (cache.size >= MAX_CACHED_ROWS) cache.clear();
          cache.set(r, row);
        }
        src = row;
        at = 0;
      }
      out.fill(0);
      for (let k = src.rowPtr[at]!; k < src.rowPtr[at + 1]!; k++) out[src.colIdx[k]!] = src.values[k]!;
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
