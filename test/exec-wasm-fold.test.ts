/**
 * The first fold's wasm kernel (src/exec/wasm-fold-kernel.ts foldColumns) against a plain
 * re-statement of what an incremental matmul's first fold must give, written row by row as the
 * CSR walk states it (delta.ts module comment): per row, the fold from +0 over its stored entries in
 * ascending column of fl32(w·x) ≠ ±0, the bound B = (B + |w|·|x|)·(1 + 2^−50) and the lowest bit
 * G = min(lowbit(w) + lowbit(x)) over its entries with w, x ≠ ±0, bounded when G is unset or
 * G ≥ −149 and B < min(2^(24+G), 2^126). The kernel walks columns instead; every row's y, B (as
 * float64 bits), G (kept as 32767 − G) and mark, the rows to refold and the columns' M_c and L_c
 * must be the re-statement's, and a row that no product reaches untouched (+0), over random
 * matrices whose weights and inputs round, cancel, overflow the bound, fall below 2^−149 and are ±0.
 * And the pass before it (foldInputs): the sign count of the input, −1 at a value that is not
 * finite, the records' bits and walk starts written where the first fold's JavaScript writes them
 * and nowhere else.
 */
import { describe, expect, it } from 'vitest';
import { WasmHeap } from '../src/exec/wasm-heap.ts';
import { siluFormula } from '../src/exec/numeric.ts';

const NO_LOW = 32767;

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 4294967296; };
}

/** The exponent of a non-zero float32's lowest set bit (x = odd · 2^e), by halving: no bit tricks. */
function lowOf(x: number): number {
  let e = 0;
  while (Number.isInteger(x * 2 ** -(e + 1))) e++;
  while (!Number.isInteger(x * 2 ** -e)) e--;
  return e;
}

const WEIGHTS = [1, -1, 3, 0.1, -2.5, 1e-20, 7.25, 2 ** 100, -0.3333, 1e30, 0, -0, 2 ** -149, 2 ** -140, 12345.678, -65536];
const INPUTS = [0, -0, 1, -1, 0.5, 2, 0.1, -7, 2 ** 20, 2 ** 26, 1e-30, 2 ** -149, 3e8, -0.25, 1 / 3];

interface Case { rows: number; cols: number; colEnd: number; x: Float32Array; rowsOf: number[][]; weightsOf: number[][] }

function randomCase(rand: () => number): Case {
  const rows = 1 + Math.floor(rand() * 120);
  const cols = 1 + Math.floor(rand() * 40);
  const density = rand();
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;
  const rowsOf: number[][] = Array.from({ length: cols }, () => []);
  const weightsOf: number[][] = Array.from({ length: cols }, () => []);
  for (let c = 0; c < cols; c++) {
    for (let r = 0; r < rows; r++) {
      if (rand() >= density) continue;
      rowsOf[c]!.push(r);
      weightsOf[c]!.push(rand() < 0.7 ? pick(WEIGHTS) : Math.fround((rand() - 0.5) * 2 ** Math.floor(rand() * 40 - 20)));
    }
  }
  let used = 0;
  for (let c = 0; c < cols; c++) if (rowsOf[c]!.length > 0) used = c + 1;
  const x = Float32Array.from({ length: cols }, () => (rand() < 0.4 ? 0 : rand() < 0.8 ? pick(INPUTS) : (rand() - 0.5) * 2 ** Math.floor(rand() * 30 - 15)));
  // colEnd: the columns past the last one with entries may or may not be passed
  return { rows, cols, colEnd: rand() < 0.5 ? used : cols, x, rowsOf, weightsOf };
}

/** The re-statement, row by row (module comment). */
function reference(t: Case): { y: Float32Array; B: Float64Array; G: Int16Array; mark: Uint16Array; refold: number[] } {
  const y = new Float32Array(t.rows);
  const B = new Float64Array(t.rows);
  const G = new Int16Array(t.rows).fill(NO_LOW);
  const mark = new Uint16Array(t.rows);
  const refold: number[] = [];
  for (let r = 0; r < t.rows; r++) {
    let acc = 0;
    let b = 0;
    let g = NO_LOW;
    for (let c = 0; c < t.cols; c++) {
      const i = t.rowsOf[c]!.indexOf(r);
      if (i < 0) continue;
      const w = Math.fround(t.weightsOf[c]![i]!);
      const xv = t.x[c]!;
      if (w === 0 || xv === 0) continue;
      const p = Math.fround(w * xv);
      if (p !== 0) acc = Math.fround(acc + p);
      b = (b + Math.abs(w) * Math.abs(xv)) * (1 + 2 ** -50);
      g = Math.min(g, lowOf(w) + lowOf(xv));
    }
    y[r] = acc;
    B[r] = b;
    G[r] = g;
    const bounded = g === NO_LOW || (g >= -149 && b < Math.min(2 ** (24 + g), 2 ** 126));
    mark[r] = bounded ? 0 : 1;
    if (!bounded) refold.push(r);
  }
  return { y, B, G, mark, refold };
}

const u32 = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
const u64 = (a: Float64Array): bigint[] => Array.from(new BigUint64Array(a.buffer, a.byteOffset, a.length));

describe('wasm fold kernel (foldColumns)', () => {
  it('gives the row-by-row fold, bounds, lowest bits, marks and refold list bit for bit (300 seeded matrices)', () => {
    const rand = lcg(0x5eed_f01d);
    let unbounded = 0;
    let rounded = 0;
    for (let n = 0; n < 300; n++) {
      const t = randomCase(rand);
      const heap = WasmHeap.create(1, siluFormula)!;
      const nnz = t.rowsOf.reduce((a, l) => a + l.length, 0);
      const a = heap.carve({
        colBits: [Uint32Array, 4 * (t.cols + 1)], rowIdx: [Uint16Array, nnz], values: [Float32Array, nnz], y: [Float32Array, t.rows],
        bound: [Float64Array, t.rows], gap: [Uint16Array, t.rows], mark: [Uint16Array, t.rows], list: [Int32Array, t.rows],
        refold: [Int32Array, t.rows],
      })!;
      const xBits = new Uint32Array(t.x.buffer);
      let k = 0;
      for (let c = 0; c < t.cols; c++) {
        a.colBits[4 * c] = xBits[c]!;
        a.colBits[4 * c + 3] = k;
        for (let i = 0; i < t.rowsOf[c]!.length; i++, k++) { a.rowIdx[k] = t.rowsOf[c]![i]!; a.values[k] = t.weightsOf[c]![i]!; }
      }
      a.colBits[4 * t.cols + 3] = k;
      // (y, the bounds, the gaps and the marks start +0, as the kernel requires)
      const nf = heap.foldColumns(t.colEnd, a.colBits, a.rowIdx, a.values, a.y, a.bound, a.gap, a.mark, a.list, a.refold);
      const want = reference(t);
      expect(Array.from(a.refold.subarray(0, nf)).sort((p, q) => p - q)).toEqual(want.refold);
      expect(u32(a.y)).toEqual(u32(want.y));
      expect(u64(a.bound)).toEqual(u64(want.B));
      expect(Array.from(a.gap, (g) => NO_LOW - g)).toEqual(Array.from(want.G));
      expect(Array.from(a.mark)).toEqual(Array.from(want.mark));
      const colVals = new Float32Array(a.colBits.buffer, a.colBits.byteOffset, a.colBits.length);
      const colInts = new Int32Array(a.colBits.buffer, a.colBits.byteOffset, a.colBits.length);
      for (let c = 0; c < t.colEnd; c++) {
        const xv = t.x[c]!;
        expect(colVals[4 * c + 1]).toBe(Math.abs(xv));
        expect(colInts[4 * c + 2]).toBe(xv === 0 ? NO_LOW : lowOf(xv));
        expect(a.colBits[4 * c]).toBe(xBits[c]); // the bits and entry ranges are the caller's, untouched
      }
      unbounded += nf;
      for (let r = 0; r < t.rows; r++) if (want.y[r] !== 0 && !Number.isInteger(want.y[r]! * 2 ** 20)) rounded++;
    }
    // the cases reach both kinds of row and folds that round
    expect(unbounded).toBeGreaterThan(100);
    expect(rounded).toBeGreaterThan(100);
  });

  it('foldInputs: the sign count or −1, and the records\' bits and starts where the JavaScript writes them (300 seeded inputs)', () => {
    const rand = lcg(0x1f0d_1a75);
    const SPECIAL = [0, -0, 1, -1, 2 ** -149, -(2 ** -149), 3.4e38, -3.4e38, Infinity, -Infinity, NaN, -NaN];
    let refused = 0;
    let counted = 0;
    for (let n = 0; n < 300; n++) {
      const cols = 1 + Math.floor(rand() * 70);
      const colEnd = Math.floor(rand() * (cols + 1));
      const heap = WasmHeap.create(1, siluFormula)!;
      const a = heap.carve({ x: [Float32Array, cols + 3], colBits: [Uint32Array, 4 * (cols + 1)], colPtr: [Uint32Array, cols + 1] })!;
      const xOff = Math.floor(rand() * 3);
      const nonFinite = rand() < 0.3;
      for (let c = 0; c < cols; c++) {
        const v = rand() < 0.4 ? 0 : rand() < 0.5 ? SPECIAL[Math.floor(rand() * 8)]! : (rand() - 0.5) * 2 ** Math.floor(rand() * 60 - 30);
        a.x[xOff + c] = rand() < 0.1 ? -v : v;
      }
      if (nonFinite) a.x[xOff + Math.floor(rand() * cols)] = SPECIAL[8 + Math.floor(rand() * 4)]!;
      if (nonFinite && rand() < 0.5) new Uint32Array(a.x.buffer, a.x.byteOffset, a.x.length)[xOff + Math.floor(rand() * cols)] = 0xffc00001; // (a NaN of another payload)
      for (let c = 0; c <= cols; c++) a.colPtr[c] = 3 * c + (c >> 1);
      a.colBits.fill(0xdeadbeef);
      const got = heap.foldInputs(cols, colEnd, a.x, xOff, a.colBits, a.colPtr);
      const xb = new Uint32Array(a.x.buffer, a.x.byteOffset + 4 * xOff, cols);
      // the JavaScript's pass (delta.ts foldFresh), restated
      let want = 0;
      for (let c = 0; c < cols; c++) {
        const v = a.x[xOff + c]!;
        if (!Number.isFinite(v)) { want = -1; break; }
        want += xb[c]! >>> 31;
      }
      expect(got).toBe(want);
      if (want < 0) {
        refused++;
        expect(a.colBits.every((b) => b === 0xdeadbeef)).toBe(true); // nothing written
        continue;
      }
      counted++;
      for (let c = 0; c < cols; c++) {
        expect(a.colBits[4 * c]).toBe(c < colEnd || xb[c] !== 0 ? xb[c] : 0xdeadbeef);
        expect(a.colBits[4 * c + 1]).toBe(0xdeadbeef);
        expect(a.colBits[4 * c + 2]).toBe(0xdeadbeef);
      }
      for (let c = 0; c <= cols; c++) expect(a.colBits[4 * c + 3]).toBe(c <= colEnd ? a.colPtr[c] : 0xdeadbeef);
    }
    expect(refused).toBeGreaterThan(30);
    expect(counted).toBeGreaterThan(100);
  });
});
