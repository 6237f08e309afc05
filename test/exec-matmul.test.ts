/**
 * exec/matmul.ts: the sparse path is bit-identical to the dense sequential path, sign of zero
 * included, on matrices and activations full of +0, −0, cancelling pairs and underflowing products.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { linearEx, newMatmulStats } from '../src/exec/matmul.ts';
import { makeNumericContext } from '../src/exec/numeric.ts';
import { denseToCsr } from '../src/model/random-weights.ts';
import type { Matrix } from '../src/model/weights.ts';

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

/** Values chosen to stress zero signs: ±0, exact cancellations, products that underflow to ±0. */
const valueArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(0, -0) },
  { weight: 2, arbitrary: fc.constantFrom(1, -1, 0.5, -0.5, 3, -3) },
  { weight: 1, arbitrary: fc.constantFrom(2 ** -100, -(2 ** -100), 2 ** -80, -(2 ** -80)) },
  { weight: 1, arbitrary: fc.integer({ min: -1000, max: 1000 }).map((n) => Math.fround(n / 7)) },
);

const caseArb = fc.record({ rows: fc.integer({ min: 1, max: 6 }), cols: fc.integer({ min: 1, max: 10 }) })
  .chain(({ rows, cols }) => fc.record({
    rows: fc.constant(rows),
    cols: fc.constant(cols),
    w: fc.array(valueArb, { minLength: rows * cols, maxLength: rows * cols }),
    x: fc.array(valueArb, { minLength: cols, maxLength: cols }),
  }));

describe('sparse vs dense linear', () => {
  const ctx = makeNumericContext({});

  it('dense+CSR matrix: sparse path bit-identical to the dense path (fast-check)', () => {
    let zeroResults = 0;
    let negZeroResults = 0;
    fc.assert(fc.property(caseArb, ({ rows, cols, w, x }) => {
      const dense = new Float32Array(w);
      const xs = new Float32Array(x);
      const m: Matrix = { rows, cols, dense, csr: denseToCsr(dense, rows, cols) };
      const d = linearEx(ctx, m, xs, 'dense');
      const s = linearEx(ctx, m, xs, 'sparse');
      expect(d.usedSparse).toBe(false);
      expect(s.usedSparse).toBe(true);
      expect(bits(s.out)).toEqual(bits(d.out));
      for (const v of d.out) if (v === 0) { zeroResults++; if (1 / v < 0) negZeroResults++; }
    }), { numRuns: 1500 });
    // the property exercised both signs of zero
    expect(negZeroResults).toBeGreaterThan(0);
    expect(zeroResults).toBeGreaterThan(negZeroResults);
  });

  it('CSR-only matrix (absent entries are +0): sparse path decides zero signs without a dense form', () => {
    fc.assert(fc.property(caseArb, ({ rows, cols, w, x }) => {
      const dense = new Float32Array(w.map((v) => (v === 0 ? 0 : v))); // CSR cannot hold −0
      const xs = new Float32Array(x);
      const csrOnly: Matrix = { rows, cols, csr: denseToCsr(dense, rows, cols) };
      const stats = newMatmulStats();
      const s = linearEx(ctx, csrOnly, xs, 'sparse', { stats });
      const d = linearEx(ctx, { rows, cols, dense }, xs, 'dense');
      expect(bits(s.out)).toEqual(bits(d.out));
      expect(stats.denseRowFallbacks).toBe(0);
      // the dense math over a CSR-only matrix (expanded rows) agrees too
      expect(bits(linearEx(ctx, csrOnly, xs, 'dense').out)).toEqual(bits(d.out));
    }), { numRuns: 1500 });
  });

  it('hand case: a row whose only non-zero weight meets a zero activation', () => {
    // row 0: w = [2, +0, +0], x = [−0, −0, −0]: terms −0, −0, −0 → −0
    // row 1: w = [2, +0, +0], x = [−0, −0, +0]: last term +0 → +0
    const m: Matrix = { rows: 1, cols: 3, csr: { rowPtr: new Uint32Array([0, 1]), colIdx: new Uint32Array([0]), values: new Float32Array([2]) } };
    const a = linearEx(ctx, m, new Float32Array([-0, -0, -0]), 'sparse').out[0];
    const b = linearEx(ctx, m, new Float32Array([-0, -0, 0]), 'sparse').out[0];
    expect(Object.is(a, -0)).toBe(true);
    expect(Object.is(b, 0)).toBe(true);
    // cancellation: 1·1 + (−1)·1 = +0 even though the rest is all −0 terms
    const m2: Matrix = { rows: 1, cols: 3, dense: new Float32Array([1, -1, -0]) };
    expect(Object.is(linearEx(ctx, m2, new Float32Array([1, 1, 5]), 'sparse').out[0], 0)).toBe(true);
  });

  it('non-finite activations and non-sequential modes run the dense math', () => {
    const m: Matrix = { rows: 1, cols: 2, dense: new Float32Array([0, 1]) };
    const r = linearEx(ctx, m, new Float32Array([Infinity, 1]), 'sparse');
    expect(r.usedSparse).toBe(false);
    expect(Number.isNaN(r.out[0])).toBe(true); // 0·inf = NaN, as the dense product gives
    const sh = makeNumericContext({ order: { kind: 'shuffled', seed: 3 } });
    expect(linearEx(sh, m, new Float32Array([1, 1]), 'sparse').usedSparse).toBe(false);
  });

  it('rejects a mismatched input length', () => {
    const m: Matrix = { rows: 1, cols: 3, dense: new Float32Array(3) };
    expect(() => linearEx(ctx, m, new Float32Array(2), 'dense')).toThrow(/matrix needs 3/);
  });
});
