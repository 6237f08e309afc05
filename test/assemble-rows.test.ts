/**
 * csrFromRows (src/passes/assemble/rows.ts), the builder of the embedding, the LM head and other
 * row-wise matrices: for rows emitted in any order, with repeated columns and ±0 weights, it must
 * give ascending columns, each weight the sum of that column's entries in emission order, and no
 * zero — whether a row comes sorted (its fast path) or not. Bits compared, against a plain
 * reference written here.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { csrFromRows } from '../src/passes/assemble/rows.ts';

type Entry = [number, number];

/** The reference: per row, sum each column's weights in the order given, drop zeros, sort by column. */
function reference(rows: Entry[][]): { rowPtr: number[]; colIdx: number[]; values: number[] } {
  const rowPtr = [0];
  const colIdx: number[] = [];
  const values: number[] = [];
  for (const row of rows) {
    const sums = new Map<number, number>();
    for (const [c, w] of row) sums.set(c, (sums.get(c) ?? 0) + w);
    for (const c of [...sums.keys()].sort((a, b) => a - b)) {
      const w = sums.get(c)!;
      if (w === 0) continue;
      colIdx.push(c);
      values.push(w);
    }
    rowPtr.push(colIdx.length);
  }
  return { rowPtr, colIdx, values };
}

const bits = (a: ArrayLike<number>) => [...new Uint32Array(Float32Array.from(a).buffer)];

describe('csrFromRows', () => {
  it('equals the reference on random rows, sorted or not, with repeats and ±0', () => {
    // weights whose sums stay bf16-exact (below 64 in steps of 1/4), ±0, and pairs that cancel
    const weight = fc.constantFrom(0, -0, 1, -1, 2, 0.5, -3, 4, 0.25);
    const entry = fc.tuple(fc.nat({ max: 40 }), weight);
    const row = fc.oneof(
      fc.array(entry, { maxLength: 12 }),
      // strictly increasing columns (the sorted path)
      fc.uniqueArray(fc.nat({ max: 40 }), { maxLength: 12 }).chain((cs) =>
        fc.tuple(...[...cs].sort((a, b) => a - b).map((c) => fc.tuple(fc.constant(c), weight)))).map((es) => es as Entry[]),
    );
    fc.assert(fc.property(fc.array(row, { maxLength: 20 }), (rows) => {
      const m = csrFromRows(rows.length, 41, 'test', (r, emit) => {
        for (const [c, w] of rows[r]!) emit(c, w);
      });
      const want = reference(rows);
      expect([...m.csr.rowPtr]).toEqual(want.rowPtr);
      expect([...m.csr.colIdx]).toEqual(want.colIdx);
      expect(bits(m.csr.values)).toEqual(bits(want.values));
    }), { numRuns: 300 });
  });

  it('refuses a column outside the matrix and a weight bf16 cannot hold', () => {
    expect(() => csrFromRows(1, 4, 'm', (_, emit) => emit(4, 1))).toThrow(/column 4 outside \[0, 4\) in m/);
    expect(() => csrFromRows(1, 4, 'm', (_, emit) => { emit(2, 1); emit(1, 1); emit(3, 7); emit(9, 1); })).toThrow(/column 9 outside/);
    expect(() => csrFromRows(1, 4, 'm', (_, emit) => emit(1, 1 + 2 ** -10))).toThrow(/not exactly representable in bf16/);
  });
});
