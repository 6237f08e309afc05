/**
 * Incremental decode (src/exec/delta.ts and the tracked GDN step of gdn-tracked.ts) against the plain
 * computation, bit for bit:
 *  - row stacks (stack-rows.ts) through deltaLinear against their parts' dense linears;
 *  - deltaLinear over sequences of inputs that change a few columns at a time (with ±0, negatives,
 *    tiny and huge values, and inputs that break the precondition or are not finite), with and
 *    without candidate lists, against the dense linear; f32 and bf16;
 *  - linearArgmax's memo against argmax of the dense logits over repeated inputs;
 *  - whole executors on compiled circuits with GDN RAM (regfile) and on the RV32 chip: the sparse
 *    path (tracked GDN steps, incremental FFN and LM head) against the dense path, every residual
 *    and GDN state at every layer and position, including a live-state write and setGdnState;
 *  - the tracked step's lazy single-tap conv channels: the conv state they stand for (and the one
 *    left when the track is dropped) equals the dense path's at every step;
 *  - the wasm kernels (wasm-kernels.ts) against the JavaScript loop: the same state after every
 *    call (y, marks, lists, records, counts), and on the chip the same tokens with the kernels,
 *    without them and with a wasm memory too small for every state.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { deltaLinear, newDeltaSite, wasmHeapOf } from '../src/exec/delta.ts';
import { lowbit32, weightLows } from '../src/exec/delta-bounds.ts';
import { newStackSite, rowStackAt, rowStackOf } from '../src/exec/stack-rows.ts';
import { dropGdnTrack, gdnConvedSnapshot, gdnConvSnapshot } from '../src/exec/gdn-tracked.ts';
import { Executor, argmax } from '../src/exec/executor.ts';
import { DELTA_ROLES, linearEx, newMatmulStats } from '../src/exec/matmul.ts';
import { linearArgmax } from '../src/exec/matmul-argmax.ts';
import { makeNumericContext } from '../src/exec/numeric.ts';
import { ExecPlans } from '../src/exec/plans.ts';
import { WasmHeap } from '../src/exec/wasm-heap.ts';
import type { PhaseTimes } from '../src/exec/profile.ts';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { sparsifyMatrix } from '../src/model/random-weights.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { GdnWeights, Matrix } from '../src/model/weights.ts';
import type { ExecTuning } from '../src/exec/types.ts';
import { chipExecutor, programOf, type ChipProgram } from '../src/chip/run.ts';
import type { ChipModel } from '../src/chip/chip-model.ts';
import { BOS_ID, CODE_BASE, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { sharedChip } from './helpers/shared-chips.ts';

const bits = (a: Float32Array): number[] =>
  Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 4294967296; };
}

const WEIGHTS = [1, -1, 0.5, -2.5, 3, 1e-20, -1e-20, 2 ** 100, 0.1, 7];
const ACTS = [0, -0, 1, 2, 0.25, -1, 1e-30, -1e-30, 3e38, 2 ** -140, 5];

/** A rows × cols matrix with ≤ perRow entries per row (some rows empty): dense and CSR-only forms. */
function sparseMatrix(rnd: () => number, rows: number, cols: number, perRow: number): { dense: Matrix; csr: Matrix } {
  const d = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    if (rnd() < 0.25) continue;
    const k = 1 + Math.floor(rnd() * perRow);
    for (let t = 0; t < k; t++) d[r * cols + Math.floor(rnd() * cols)] = WEIGHTS[Math.floor(rnd() * WEIGHTS.length)];
  }
  return { dense: { rows, cols, dense: d }, csr: { rows, cols, csr: sparsifyMatrix({ rows, cols, dense: d }).csr } };
}

/** A rows × cols matrix, 1 … maxPerRow entries per row drawn from W: its array and its dense and CSR-only forms. */
function weightedMatrix(rnd: () => number, rows: number, cols: number, W: number[], maxPerRow: number): { d: Float32Array; dense: Matrix; csr: Matrix } {
  const d = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let t = 0; t < 1 + Math.floor(rnd() * maxPerRow); t++) d[r * cols + Math.floor(rnd() * cols)] = W[Math.floor(rnd() * W.length)]!;
  const dense: Matrix = { rows, cols, dense: d };
  return { d, dense, csr: { rows, cols, csr: sparsifyMatrix(dense).csr } };
}

/** The row stacks' plans of the tests that call rowStackOf directly (an executor uses ctx.plans). */
const testPlans = new ExecPlans();

describe('deltaLinear', () => {
  it('property: a row stack [A; B; …] through deltaLinear equals the parts\' dense linears laid end to end', () => {
    let incremental = 0;
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => {
      const rnd = lcg(seed);
      const cols = 4 + Math.floor(rnd() * 12);
      const parts = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => sparseMatrix(rnd, 1 + Math.floor(rnd() * 20), cols, Math.max(1, cols >> 2)));
      // CSR-only parts, or now and then a part in its dense form (no −0 entries: it stacks too)
      const given = parts.map((p) => (rnd() < 0.2 ? p.dense : p.csr));
      const stack = rowStackOf(testPlans, given);
      expect(stack).not.toBeNull();
      expect(stack!.offsets).toEqual(given.reduce((o, m) => [...o, o[o.length - 1] + m.rows], [0]));
      expect(rowStackOf(testPlans, given)).toBe(stack); // kept while the parts keep their storage
      const ctx = makeNumericContext({ profile: 'f32' });
      const plain = makeNumericContext({ profile: 'f32' });
      let x = new Float32Array(cols);
      for (let step = 0; step < 16; step++) {
        x = x.slice();
        for (let c = 0; c < cols; c++) {
          if (rnd() < 0.25) {
            const r = rnd();
            x[c] = r < 0.03 ? Infinity : r < 0.2 ? -ACTS[Math.floor(rnd() * ACTS.length)] : ACTS[Math.floor(rnd() * ACTS.length)];
          }
        }
        const st = deltaLinear(ctx, stack!.m, x, 0, null, 0);
        if (st === null) continue;
        if (!st.full) incremental++;
        const want = parts.flatMap((p) => bits(linearEx(plain, p.dense, x, 'dense').out));
        expect(bits(st.y)).toEqual(want);
      }
    }), { numRuns: 300 });
    expect(incremental).toBeGreaterThan(1000); // the stacks ran incrementally, not only in full
  });

  it('rowStackOf refuses parts of different widths and dense parts with a −0 entry, and rebuilds for new storage', () => {
    const rnd = lcg(7);
    const a = sparseMatrix(rnd, 6, 8, 3);
    const b = sparseMatrix(rnd, 5, 8, 3);
    expect(rowStackOf(testPlans, [])).toBeNull();
    expect(rowStackOf(testPlans, [a.csr, sparseMatrix(rnd, 5, 9, 3).csr])).toBeNull();
    const negZero = new Float32Array(5 * 8);
    negZero[3] = -0;
    negZero[9] = 2;
    expect(rowStackOf(testPlans, [a.csr, { rows: 5, cols: 8, dense: negZero }])).toBeNull();
    const s1 = rowStackOf(testPlans, [a.csr, b.csr])!;
    expect(Array.from(s1.m.csr!.rowPtr)).toEqual([...Array.from(a.csr.csr!.rowPtr), ...Array.from(b.csr.csr!.rowPtr.subarray(1), (k) => k + a.csr.csr!.rowPtr[6])]);
    // a part given new storage: a new stack holding the new weights
    const b2 = sparseMatrix(rnd, 5, 8, 3);
    b.csr.csr = b2.csr.csr;
    const s2 = rowStackOf(testPlans, [a.csr, b.csr])!;
    expect(s2).not.toBe(s1);
    expect(Array.from(s2.m.csr!.values.subarray(a.csr.csr!.rowPtr[6]))).toEqual(Array.from(b2.csr.csr!.values));
  });

  it('rowStackAt: the site\'s stack while its parts keep their storage; another part or new storage, the lookup again', () => {
    const rnd = lcg(8);
    const a = sparseMatrix(rnd, 6, 8, 3).csr;
    const b = sparseMatrix(rnd, 5, 8, 3).csr;
    const c = sparseMatrix(rnd, 4, 8, 3).csr;
    const site = newStackSite();
    let lookups = 0;
    const partsOf = (_p: ExecPlans, key: { a: Matrix; b: Matrix }): Matrix[] => { lookups++; return [key.a, key.b]; };
    const key = { a, b };
    const s1 = rowStackAt(site, testPlans, key, partsOf, key.a, key.b);
    expect(s1).toBe(rowStackOf(testPlans, [a, b]));
    expect(rowStackAt(site, testPlans, key, partsOf, key.a, key.b)).toBe(s1);
    expect(lookups).toBe(1); // the second call: from the site
    // another part named: that stack
    key.b = c;
    expect(rowStackAt(site, testPlans, key, partsOf, key.a, key.b)).toBe(rowStackOf(testPlans, [a, c]));
    // a part given new storage: a new stack holding the new weights
    const a2 = sparseMatrix(rnd, 6, 8, 3).csr;
    a.csr = a2.csr;
    const s3 = rowStackAt(site, testPlans, key, partsOf, key.a, key.b)!;
    expect(Array.from(s3.m.csr!.values.subarray(0, a2.csr!.rowPtr[6]))).toEqual(Array.from(a2.csr!.values));
    // four parts against a site of two: the lookup
    expect(rowStackAt(site, testPlans, key, () => [a, c, b, c], a, c, b, c)!.m.rows).toBe(6 + 4 + 5 + 4);
    expect(lookups).toBe(3);
  });

  it('deltaLinear through a DeltaSite: the state of the matrix it is given, whichever the site held', () => {
    const rnd = lcg(9);
    const ms = [sparseMatrix(rnd, 7, 6, 3), sparseMatrix(rnd, 9, 6, 3)];
    const ctx = makeNumericContext({ profile: 'f32' });
    const plain = makeNumericContext({ profile: 'f32' });
    const site = newDeltaSite();
    const x = new Float32Array(6);
    let ran = 0;
    for (let step = 0; step < 60; step++) {
      x[Math.floor(rnd() * 6)] = [0, -0, 1, 2, 0.25, -1, 5][Math.floor(rnd() * 7)]!;
      const m = ms[Math.floor(rnd() * 2)]!;
      const st = deltaLinear(ctx, m.csr, x, 0, null, 0, undefined, undefined, undefined, site);
      expect(site.m).toBe(m.csr);
      if (st === null) continue; // (the form refused: nothing to compare)
      ran++;
      expect(bits(st.y.subarray(0, m.csr.rows))).toEqual(bits(linearEx(plain, m.dense, x, 'dense').out));
    }
    expect(ran).toBeGreaterThan(40);
  });

  it('property: equals the dense linear over changing inputs (f32, bf16), with and without candidates', () => {
    let deltaCalls = 0;
    let partialCalls = 0;
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.boolean(), fc.boolean(), (seed, bf16, useCand) => {
      const rnd = lcg(seed);
      const rows = 1 + Math.floor(rnd() * 30);
      const cols = 4 + Math.floor(rnd() * 12);
      const m = sparseMatrix(rnd, rows, cols, Math.max(1, cols >> 2));
      const ctx = makeNumericContext({ profile: bf16 ? 'bf16' : 'f32' });
      const plain = makeNumericContext({ profile: bf16 ? 'bf16' : 'f32' });
      let x = new Float32Array(cols);
      for (let step = 0; step < 12; step++) {
        const prev = x;
        x = x.slice();
        const changedCols: number[] = [];
        for (let c = 0; c < cols; c++) {
          if (rnd() < 0.2) {
            const r = rnd();
            // mostly non-negative (the precondition), sometimes many negatives or a non-finite value
            x[c] = r < 0.03 ? NaN : r < 0.05 ? Infinity : r < 0.3 ? -ACTS[Math.floor(rnd() * ACTS.length)] : ACTS[Math.floor(rnd() * ACTS.length)];
            changedCols.push(c);
          }
        }
        // candidates: every changed column plus some unchanged ones and a repeat
        const cand = Int32Array.from([...changedCols, ...changedCols.slice(0, 1), Math.floor(rnd() * cols)]);
        const stats = newMatmulStats();
        const st = deltaLinear(ctx, m.csr, x, 0, useCand ? cand : null, cand.length, stats);
        const want = linearEx(plain, m.dense, x, 'dense').out;
        if (st !== null) {
          deltaCalls++;
          expect(bits(st.y)).toEqual(bits(want));
          expect(stats.delta).toBe(1);
          if (!st.full) {
            partialCalls++;
            // the recomputed rows cover every row whose value changed
            const before = linearEx(plain, m.dense, prev, 'dense').out;
            const rowsSet = new Set(Array.from(st.rows.subarray(0, st.nRows)));
            expect(rowsSet.size).toBe(st.nRows); // each row listed once
            for (let r = 0; r < rows; r++) if (bits(before.subarray(r, r + 1))[0] !== bits(want.subarray(r, r + 1))[0]) expect(rowsSet.has(r)).toBe(true);
          }
          // now and then the epoch jumps ahead (epochs only grow): the next call takes the last
          // one, or wraps around (every mark reset)
          if (rnd() < 0.3 && st.epoch < (1 << 14) - 2) st.epoch = (1 << 14) - 2 + Math.floor(rnd() * 2);
        } else {
          // not applicable: some activation is not finite, or too many have the sign bit set
          let neg = 0;
          let finite = true;
          for (const v of x) { if (!Number.isFinite(v)) finite = false; if (v < 0 || Object.is(v, -0)) neg++; }
          let maxRow = 0;
          const csr = m.csr.csr!;
          for (let r = 0; r < rows; r++) maxRow = Math.max(maxRow, csr.rowPtr[r + 1] - csr.rowPtr[r]);
          expect(!finite || maxRow >= cols - neg).toBe(true);
        }
      }
    }), { numRuns: 300 });
    expect(deltaCalls).toBeGreaterThan(1000);
    expect(partialCalls).toBeGreaterThan(500);
  });

  it('columns past the last one with an entry: a fresh state leaves their records unwritten, their sign bits still count', () => {
    const ctx = makeNumericContext({});
    const plain = makeNumericContext({});
    // 3 × 8, entries in columns 0 … 2 only; the longest row has 3
    const d = Float32Array.from([1, 2, 0.5, 0, 0, 0, 0, 0, /* row 1 */ 0, -1, 0, 0, 0, 0, 0, 0, /* row 2 */ 3, 0, 0, 0, 0, 0, 0, 0]);
    const dense: Matrix = { rows: 3, cols: 8, dense: d };
    const m: Matrix = { rows: 3, cols: 8, csr: sparsifyMatrix(dense).csr };
    const x = Float32Array.from([1, 2, 3, 0, 0, 4, -0, 0]);
    const first = deltaLinear(ctx, m, x, 0, null, 0)!;
    expect(bits(first.y)).toEqual(bits(linearEx(plain, dense, x, 'dense').out));
    // records of columns 4 … 7 as allocated, but for the input bits of column 5 (4) and 6 (−0)
    for (let c = 4; c < 8; c++) {
      expect([first.colVals[4 * c + 1], first.colInts[4 * c + 2], first.colInts[4 * c + 3]]).toEqual([0, 0, 0]);
      expect(first.colBits[4 * c]).toBe(new Uint32Array(x.buffer)[c]);
    }
    expect(first.colInts[4 * 3 + 3]).toBe(5); // column 2's end: every entry
    // steps that change used and unused columns (column 6 from −0: its recorded bits take the sign
    // bit off the count); the inputs with the sign bit set reach 5 at step 4 (the precondition
    // needs the longest row, 3, below 8 − 5) and the call declines; then 4 again: the state
    // refolds, every record written, and updates from there
    const steps: [number, number][][] = [[[3, 7], [0, 5]], [[4, -1], [7, -2], [6, 1]], [[5, -3], [1, 0.25]], [[3, -0]], [[2, -4]], [[4, 6]], [[6, 2], [0, 1]], [[7, 0]]];
    const declined: number[] = [];
    for (const [i, changes] of steps.entries()) {
      for (const [c, v] of changes) x[c] = v;
      const stats = newMatmulStats();
      const st = deltaLinear(ctx, m, x, 0, null, 0, stats);
      const neg = Array.from(x).filter((v) => v < 0 || Object.is(v, -0)).length;
      if (neg >= 5) { expect(st, `step ${i}`).toBeNull(); declined.push(i); continue; }
      expect(st, `step ${i}`).not.toBeNull();
      expect(bits(st!.y)).toEqual(bits(linearEx(plain, dense, x, 'dense').out));
      // the walk covers the changed used columns' entries only
      const colEntries = [2, 2, 1, 0, 0, 0, 0, 0];
      if (!st!.full) expect(stats.deltaEntries, `step ${i}`).toBe(changes.filter(([c]) => c < 3).reduce((a, [c]) => a + colEntries[c]!, 0));
    }
    expect(declined).toEqual([4]);
  });

  it('new storage with rows emptied: the rebuild leaves them +0 (only non-empty rows are folded)', () => {
    const ctx = makeNumericContext({});
    const plain = makeNumericContext({});
    const d = Float32Array.from([2, 0, 1, 0, /* row 1 */ 0, 3, -1, 0, /* row 2 */ 0, 0, 0, 0, /* row 3 */ 1, 1, 0, 1]);
    const m: Matrix = { rows: 4, cols: 4, csr: sparsifyMatrix({ rows: 4, cols: 4, dense: d }).csr };
    const x = Float32Array.from([1, 2, 3, 4]);
    expect(bits(deltaLinear(ctx, m, x, 0, null, 0)!.y)).toEqual(bits(linearEx(plain, { rows: 4, cols: 4, dense: d }, x, 'dense').out));
    // rows 0 and 3 lose every entry, row 2 gains one
    const d2 = Float32Array.from([0, 0, 0, 0, 0, 3, -1, 0, 0, 4, 0, 0, 0, 0, 0, 0]);
    m.csr = sparsifyMatrix({ rows: 4, cols: 4, dense: d2 }).csr;
    const y = deltaLinear(ctx, m, x, 0, null, 0)!.y;
    expect(bits(y)).toEqual(bits(linearEx(plain, { rows: 4, cols: 4, dense: d2 }, x, 'dense').out));
    expect(bits(y.subarray(0, 1))).toEqual([0]); // +0, not the old row's 5
    // the next steps are incremental, over the new storage's columns (a transpose or weight
    // lowbits kept from the old storage would walk its entries)
    for (const [c, v] of [[1, 5], [2, 0.5], [0, 7], [1, -3]] as const) {
      x[c] = v;
      const st = deltaLinear(ctx, m, x, 0, null, 0)!;
      expect(st.full).toBe(false);
      expect(bits(st.y)).toEqual(bits(linearEx(plain, { rows: 4, cols: 4, dense: d2 }, x, 'dense').out));
    }
  });

  it('exact rows are updated, not refolded, on circuit-like values — and refolded where a fold would round', () => {
    // Weights and activations as compiled circuits have them (small integers, powers of two, big
    // biases on tiny activations), plus rows that cross 2^24 (where float32 sums start to round),
    // products whose lowest set bit falls below the row's (a new, finer value) and tiny values.
    const W = [1, -1, 2, -3, 0.5, 2 ** 31, -(2 ** 33), 2 ** 22, 3 * 2 ** 21, -2432, 2 ** -10];
    const X = [0, 1, 2, 3, 2 ** -24, 3 * 2 ** -24, 2 ** -26, 0.75, 2 ** 23, 1 + 2 ** -20, 2 ** -149];
    let updated = 0;
    let refolded = 0;
    let compared = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const rnd = lcg(seed * 104729);
      const rows = 40, cols = 24;
      const { dense, csr } = weightedMatrix(rnd, rows, cols, W, 6);
      for (const profile of ['f32', 'bf16'] as const) {
        const ctx = makeNumericContext({ profile });
        let x = new Float32Array(cols);
        for (let c = 0; c < cols; c++) x[c] = X[Math.floor(rnd() * 4)]!; // start with plain integers
        for (let step = 0; step < 40; step++) {
          x = x.slice();
          for (let k = 0; k < 3; k++) x[Math.floor(rnd() * cols)] = X[Math.floor(rnd() * X.length)]!;
          const st = deltaLinear(ctx, csr, x, 0, null, 0);
          expect(st).not.toBeNull();
          const want = linearEx(makeNumericContext({ profile }), dense, x, 'dense').out;
          expect(bits(st!.y)).toEqual(bits(want));
          compared++;
          if (!st!.full) { updated += st!.nUpdated; refolded += st!.nRows - st!.nUpdated; }
        }
      }
    }
    expect(compared).toBe(60 * 2 * 40);
    // both paths are taken many times
    expect(updated).toBeGreaterThan(2000);
    expect(refolded).toBeGreaterThan(200);
  });

  it('a row whose sum grows past 2^(24+g) is refolded: float32 rounds twice where the exact sum would not', () => {
    // columns in fold order: 1, 3·2^21 ×3, 1. Turned on one at a time, the fold reaches
    // 18,874,369 → 18,874,368 and then 18,874,369 → 18,874,368 again; the exact sum is 18,874,370.
    // (three more columns without weights: the scatter form needs a +0 term in every row)
    const w = Float32Array.from([1, 3 * 2 ** 21, 3 * 2 ** 21, 3 * 2 ** 21, 1, 0, 0, 0]);
    const dense: Matrix = { rows: 1, cols: 8, dense: w };
    const csr: Matrix = { rows: 1, cols: 8, csr: sparsifyMatrix(dense).csr };
    for (const order of [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [1, 2, 0, 3, 4]]) {
      const ctx = makeNumericContext({});
      const x = new Float32Array(8);
      expect(deltaLinear(ctx, csr, x, 0, null, 0)).not.toBeNull();
      for (const c of order) {
        x[c] = 1;
        const st = deltaLinear(ctx, csr, x, 0, null, 0)!;
        expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
      }
      expect(deltaLinear(ctx, csr, x, 0, null, 0)!.y[0]).toBe(18874368);
    }
  });

  it('an exact tracked row is refolded when a new product has a lower set bit than its sum: the fold would round', () => {
    // One row, weights 1 on columns 0…3 (four more columns without weights: the scatter form's
    // +0 term). x1 = 2^24 makes a bounded row (G = 24); x2 = 2^-30 widens column 2 past that
    // bound, so the row is tracked for good (refolded, inexact: T = 0); x2 back to 0 refolds it
    // exact with g = 24. Then x0 = x3 = 1: products of lowest set bit 0 < g. The fold in column
    // order rounds twice, 1 + 2^24 → 2^24 and 2^24 + 1 → 2^24, while the exact sum 2^24 + 2 is a
    // float32: only a refold gives the fold's 2^24.
    const w = Float32Array.from([1, 1, 1, 1, 0, 0, 0, 0]);
    const dense: Matrix = { rows: 1, cols: 8, dense: w };
    const csr: Matrix = { rows: 1, cols: 8, csr: sparsifyMatrix(dense).csr };
    const ctx = makeNumericContext({ profile: 'f32' });
    const x = new Float32Array(8);
    x[1] = 2 ** 24;
    const steps: [number, number][][] = [[], [[2, 2 ** -30]], [[2, 0]], [[0, 1], [3, 1]]];
    const seen: number[] = [];
    for (const changes of steps) {
      for (const [c, v] of changes) x[c] = v;
      const st = deltaLinear(ctx, csr, x, 0, null, 0)!;
      expect(st).not.toBeNull();
      expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
      seen.push(st.full ? -1 : st.nRows - st.nUpdated);
    }
    expect(x[0] + x[1] + x[3]).toBe(2 ** 24 + 2); // (the exact sum, in double)
    expect(deltaLinear(ctx, csr, x, 0, null, 0)!.y[0]).toBe(2 ** 24);
    // the first call folds everything; each later one refolds the row
    expect(seen).toEqual([-1, 1, 1, 1]);
  });

  it.each(['f32', 'bf16'] as const)('bounded rows: their bounds hold for the current input, they update without a record, and a widening that breaks one makes it tracked (%s)', (profile) => {
    // Circuit-like weights and activations; after each call every row still bounded must satisfy
    // what the unchecked update relies on: Σ|w·x| ≤ B_r < 2^(24+G_r) and every product a multiple
    // of 2^G_r (recomputed here from the input). Outputs equal the dense linear's bits; in bf16 the
    // uncast sums (acc) equal the f32 linear's, and the outputs their casts.
    const W = [1, -1, 2, -3, 0.5, 2 ** 20, -(2 ** 21), 3 * 2 ** 10];
    const X = [0, 1, 2, 3, 0.25, 2 ** 12, 5, 2 ** -3, 2 ** 22];
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    const lb = (v: number): number => { f[0] = v; return lowbit32(u[0]!); };
    let boundedSeen = 0;
    let lost = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const rnd = lcg(seed * 7919);
      const rows = 30, cols = 20;
      const { d, dense, csr } = weightedMatrix(rnd, rows, cols, W, 5);
      const ctx = makeNumericContext({ profile });
      let x = new Float32Array(cols);
      for (let c = 0; c < cols; c++) x[c] = X[Math.floor(rnd() * 3)]!; // small integers first
      let prevBounded = -1;
      for (let step = 0; step < 40; step++) {
        x = x.slice();
        // early steps stay small; later ones widen the columns (bigger and finer values)
        for (let k = 0; k < 3; k++) x[Math.floor(rnd() * cols)] = X[Math.floor(rnd() * (step < 20 ? 4 : X.length))]!;
        const st = deltaLinear(ctx, csr, x, 0, null, 0)!;
        expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({ profile }), dense, x, 'dense').out));
        expect(bits(st.acc)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
        let nb = 0;
        for (let r = 0; r < rows; r++) {
          if ((st.mark[r]! & 1) !== 0) continue;
          nb++;
          let sum = 0;
          let g = 32767;
          for (let c = 0; c < cols; c++) {
            const p = d[r * cols + c]! * x[c]!;
            if (p === 0) continue;
            sum += Math.abs(p);
            g = Math.min(g, lb(d[r * cols + c]!) + lb(x[c]!));
          }
          expect(sum).toBeLessThanOrEqual(st.rowBound[r]!);
          if (g !== 32767) {
            const G = 32767 - st.rowLowGap[r]!; // (kept as NO_LOW − G_r)
            expect(g).toBeGreaterThanOrEqual(G);
            expect(st.rowBound[r]!).toBeLessThan(2 ** (24 + G));
          }
        }
        expect(nb).toBe(st.nBounded);
        if (prevBounded >= 0 && nb < prevBounded) lost += prevBounded - nb;
        // rows never come back: bounded rows only go
        if (prevBounded >= 0) expect(nb).toBeLessThanOrEqual(prevBounded);
        prevBounded = nb;
        boundedSeen += nb;
      }
    }
    expect(boundedSeen).toBeGreaterThan(10000);
    expect(lost).toBeGreaterThan(20); // widenings did break bounds
  });

  it('sums up to 2^(24+g) are exact: a row whose |terms| add up to just under 2^24 (g = 0) stays bounded and updates exactly', () => {
    // row 0 = x0 + x1 + x2, row 1 = x0 + 0.5·x2 (g = −1 once x2 is odd), over unweighted columns
    // (the scatter form's +0 term). Every partial sum is an integer below 2^24 (a float32), so the
    // fold is the exact sum in any order. x1 moves within [2^23, 2^24 − 2] while x0 steps through
    // small values: each call must update, not refold, and give the dense path's bits.
    const dense: Matrix = { rows: 2, cols: 5, dense: Float32Array.from([1, 1, 1, 0, 0, 1, 0, 0.5, 0, 0]) };
    const csr: Matrix = { rows: 2, cols: 5, csr: sparsifyMatrix(dense).csr };
    const ctx = makeNumericContext({ profile: 'f32' });
    const x = Float32Array.from([1, 2 ** 24 - 2, 0, 0, 0]);
    let st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nBounded).toBe(2); // B_0 = 2^24 − 1 < 2^24
    expect(st.y[0]).toBe(2 ** 24 - 1);
    for (const [x0, x1] of [[0, 2 ** 23], [1, 2 ** 23 + 1], [0, 2 ** 24 - 2], [1, 2 ** 24 - 3], [0, 12_345_678]]) {
      x[0] = x0!;
      x[1] = x1!;
      st = deltaLinear(ctx, csr, x, 0, null, 0)!;
      expect(st.nBounded).toBe(2);
      expect(st.nRows - st.nUpdated).toBe(0); // updated, none refolded
      expect(st.y[0]).toBe(x0! + x1!);
      expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
    }
    // a tracked row's record: x2 = 3 raises row 0's bound to 1 + (2^24 − 2) + 3 = 2^24 + 2 (the
    // columns' bounds keep the largest value seen), so it is tracked for good and refolded; its
    // record at x1 = 2^22 is exact (g = 0, S = 2^22 + 3 < T = 2^24), and the moves of x1 below
    // keep S < 2^24: checked updates, not refolds (with T = 2^23 each would refold)
    x[1] = 2 ** 22;
    x[2] = 3;
    st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
    let updates = 0;
    for (const x1 of [2 ** 23, 2 ** 23 + 7, 2 ** 24 - 4, 2 ** 23]) {
      x[1] = x1;
      st = deltaLinear(ctx, csr, x, 0, null, 0)!;
      updates += st.nUpdated;
      expect(st.y[0]).toBe(x[0]! + x1 + 3);
      expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
    }
    expect(updates).toBeGreaterThan(0);
  });

  it('a tracked row is exact while its positive and its negative products each add up below 2^(24+g), whatever their sum of magnitudes', () => {
    // row 0 = x0 + x1 − x2 (+ unweighted columns: the scatter form needs a +0 term in every row),
    // integers (g = 0, T = 2^24). Widened past its bound, the row is tracked and gets a record.
    const dense: Matrix = { rows: 1, cols: 5, dense: Float32Array.from([1, 1, -1, 0, 0]) };
    const csr: Matrix = { rows: 1, cols: 5, csr: sparsifyMatrix(dense).csr };
    const ctx = makeNumericContext({ profile: 'f32' });
    const full = (x: Float32Array) => bits(linearEx(makeNumericContext({}), dense, x, 'dense').out);
    const x = Float32Array.from([1, 1, 1, 0, 0]);
    let st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nBounded).toBe(1);
    // P = 2^24 − 1, N = 2^24 − 4: each below T, their sum 2^25 − 5 is not
    x.set([2 ** 24 - 2, 1, 2 ** 24 - 4]);
    st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nBounded).toBe(0);
    expect(st.y[0]).toBe(3);
    // moves that keep P and N below 2^24 after each column's update (columns are taken in
    // ascending order): checked updates, none refolded (under S = P + N < T each would refold),
    // and the dense path's bits
    let updates = 0;
    for (const [x0, x1, x2] of [
      [2 ** 24 - 3, 1, 2 ** 24 - 4], [2 ** 24 - 3, 2, 2 ** 24 - 7], [2 ** 23, 2, 2 ** 24 - 1], [2 ** 23, 2 ** 23 - 1, 2 ** 24 - 1],
      [2 ** 23, 1, 2 ** 24 - 3], [2 ** 24 - 3, 1, 2 ** 24 - 3],
    ]) {
      x.set([x0!, x1!, x2!]);
      st = deltaLinear(ctx, csr, x, 0, null, 0)!;
      expect(st.nRows).toBe(1);
      expect(st.nUpdated).toBe(1);
      updates += st.nUpdated;
      expect(st.y[0]).toBe(x0! + x1! - x2!);
      expect(bits(st.y)).toEqual(full(x));
    }
    expect(updates).toBe(6);
    // x1 alone to 4: P = 2^24 + 1 reaches T (each product stays below it), and the fold rounds
    // fl(2^24 − 3 + 4) to 2^24 and gives 3, not the exact sum 4; the row is refolded (S = 2^25 − 2
    // is below 2T and |Σ| = 4 below T: neither alone tells)
    x[1] = 4;
    st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nRows - st.nUpdated).toBe(1);
    expect(st.y[0]).toBe(3);
    expect(bits(st.y)).toEqual(full(x));
    // and again below: the refold's record is not exact (P ≥ T), so the next move refolds too
    x.set([2 ** 24 - 8, 4, 2 ** 24 - 3]);
    st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nRows - st.nUpdated).toBe(1);
    expect(bits(st.y)).toEqual(full(x));
  });

  it('property: tracked rows of mixed signs near 2^(24+g) give the dense path\'s bits at every step, updated or refolded', () => {
    let updated = 0;
    let refolded = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const rnd = lcg(seed * 48271);
      const rows = 1 + Math.floor(rnd() * 4);
      const cols = 8;
      // weights ±1, ±2, ±0.5 over columns 0..5 (6 and 7 unweighted: the scatter form's +0 term)
      const w = new Float32Array(rows * cols);
      for (let r = 0; r < rows; r++) for (let c = 0; c < 6; c++) if (rnd() < 0.7) w[r * cols + c] = [1, -1, 2, -2, 0.5, -0.5][Math.floor(rnd() * 6)]!;
      const dense: Matrix = { rows, cols, dense: w };
      const csr: Matrix = { rows, cols, csr: sparsifyMatrix(dense).csr };
      const ctx = makeNumericContext({ profile: 'f32' });
      // inputs: even integers up to 2^23 (products up to 2^24, multiples of 2^0 or finer),
      // now and then an odd one or a half (g moves), so sums hover about T
      const draw = () => { const v = 2 * Math.floor(rnd() * 2 ** 22); const k = rnd(); return k < 0.1 ? v + 1 : k < 0.15 ? v + 0.5 : k < 0.2 ? 0 : v; };
      const x = new Float32Array(cols);
      for (let c = 0; c < 6; c++) x[c] = draw();
      let st = deltaLinear(ctx, csr, x, 0, null, 0)!;
      expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
      for (let step = 0; step < 40; step++) {
        const moves = 1 + Math.floor(rnd() * 3);
        for (let i = 0; i < moves; i++) x[Math.floor(rnd() * 6)] = draw();
        st = deltaLinear(ctx, csr, x, 0, null, 0)!;
        expect(st).not.toBeNull();
        updated += st.nUpdated;
        refolded += st.nRows - st.nUpdated;
        expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
      }
    }
    expect(updated).toBeGreaterThan(300);
    expect(refolded).toBeGreaterThan(300);
  });

  it('a bounded row whose column widens past its bound is refolded: 1 + 2^24 rounds to 2^24', () => {
    // row 0 = x0 + x1 (+ unweighted columns: the scatter form needs a +0 term in every row)
    const dense: Matrix = { rows: 1, cols: 4, dense: Float32Array.from([1, 1, 0, 0]) };
    const csr: Matrix = { rows: 1, cols: 4, csr: sparsifyMatrix(dense).csr };
    const ctx = makeNumericContext({});
    const x = Float32Array.from([1, 3, 0, 0]);
    let st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nBounded).toBe(1); // B = 4 < 2^23
    x[1] = 2 ** 22;
    st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nBounded).toBe(1); // B = 2^22 + 1 < 2^23: still exact
    expect(st.y[0]).toBe(2 ** 22 + 1);
    x[1] = 2 ** 24;
    st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nBounded).toBe(0); // the widening broke the bound: tracked and refolded
    expect(st.y[0]).toBe(2 ** 24); // fl(1 + 2^24), not the exact 2^24 + 1
    expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
  });

  it('one call: a row updated by an earlier column and then unbounded by a later column\'s widening is refolded once', () => {
    // row 0 = x0 + x1, row 1 = x0 (+ unweighted columns: the scatter form needs a +0 term in every row)
    const dense: Matrix = { rows: 2, cols: 4, dense: Float32Array.from([1, 1, 0, 0, 1, 0, 0, 0]) };
    const csr: Matrix = { rows: 2, cols: 4, csr: sparsifyMatrix(dense).csr };
    const ctx = makeNumericContext({});
    const x = Float32Array.from([1, 3, 0, 0]);
    let st = deltaLinear(ctx, csr, x, 0, null, 0)!;
    expect(st.nBounded).toBe(2);
    // column 0 moves within its bound (rows 0 and 1 updated), then column 1 widens past row 0's:
    // candidates in that order, so row 0 is reached before it loses its bound
    x[0] = 2;
    x[1] = 2 ** 24;
    st = deltaLinear(ctx, csr, x, 0, Int32Array.from([0, 1]), 2)!;
    expect(st.nBounded).toBe(1); // row 1 stays bounded, row 0 is tracked
    expect(st.nRows).toBe(2); // each row listed once (the list holds one entry per row of the matrix)
    expect(Array.from(st.rows.subarray(0, st.nRows)).sort()).toEqual([0, 1]);
    expect(st.nUpdated).toBe(1); // row 0 refolded, row 1 updated
    expect(st.y[0]).toBe(2 ** 24 + 2); // fl(2 + 2^24): exact here, from the refold
    expect(bits(st.y)).toEqual(bits(linearEx(makeNumericContext({}), dense, x, 'dense').out));
    // the same change with the widening column first: the same state
    const ctx2 = makeNumericContext({});
    const x2 = Float32Array.from([1, 3, 0, 0]);
    deltaLinear(ctx2, csr, x2, 0, null, 0);
    x2[0] = 2;
    x2[1] = 2 ** 24;
    const st2 = deltaLinear(ctx2, csr, x2, 0, Int32Array.from([1, 0]), 2)!;
    expect(st2.nBounded).toBe(1);
    expect(st2.nRows).toBe(2);
    expect(Array.from(st2.rows.subarray(0, st2.nRows)).sort()).toEqual([0, 1]);
    expect(bits(st2.y)).toEqual(bits(st.y));
  });

  it('property: the wasm kernels (wasm-kernels.ts: the listed walk, the whole pass) and the JavaScript loop leave the same state, call by call', () => {
    // Four contexts in step over the same inputs: the walk listed for the wasm kernel
    // (wasmMinEntriesPerColumn 0, the input in a JavaScript array), the whole pass in wasm (the
    // input and the candidates copied into the context's wasm memory), the JavaScript loop
    // (wasmHeapMiB 0), and the dense linear. Circuit-like inputs that widen their columns (bounded
    // rows lost, refolded), fractions and large values (tracked rows: the kernels defer their
    // entries), negatives and non-finite values (the form refused); candidates in any order with
    // repeats.
    const W = [1, -1, 2, -3, 0.5, 2 ** 20, -(2 ** 21), 3 * 2 ** 10, 0.1, 7];
    const X = [0, 1, 2, 3, 0.25, 2 ** 12, 5, 2 ** -3, 2 ** 22, 1.5, 2 ** 23 + 2, -1, 1e-30, -0];
    let kernelCalls = 0;
    let trackedUpdates = 0;
    let refolds = 0;
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.boolean(), (seed, useCand) => {
      const rnd = lcg(seed);
      const rows = 1 + Math.floor(rnd() * 40);
      const cols = 4 + Math.floor(rnd() * 16);
      const { dense, csr } = weightedMatrix(rnd, rows, cols, W, 1 + Math.floor(rnd() * 6));
      // (1 MiB of wasm memory each: a tiny matrix needs a few KiB, and 900 memories of 256 MiB cost seconds to map)
      const listed = makeNumericContext({ profile: 'f32', tuning: { wasmMinEntriesPerColumn: 0, wasmHeapMiB: 1 } });
      const fused = makeNumericContext({ profile: 'f32', tuning: { wasmHeapMiB: 1 } });
      const js = makeNumericContext({ profile: 'f32', tuning: { wasmHeapMiB: 0 } });
      const heap = wasmHeapOf(fused)!;
      const xIn = heap.take(Float32Array, cols + 3)!; // (the input at offset 3)
      const candIn = heap.take(Int32Array, 64)!;
      const x = new Float32Array(cols);
      for (let c = 0; c < cols; c++) x[c] = X[Math.floor(rnd() * 4)]!;
      for (let step = 0; step < 25; step++) {
        const changedCols: number[] = [];
        for (let k = 0; k < 1 + Math.floor(rnd() * 4); k++) {
          const c = Math.floor(rnd() * cols);
          const u = rnd();
          x[c] = u < 0.01 ? NaN : X[Math.floor(rnd() * (step < 8 ? 4 : X.length))]!;
          changedCols.push(c);
        }
        const cand = Int32Array.from([...changedCols.reverse(), ...changedCols.slice(0, 1), Math.floor(rnd() * cols)]);
        xIn.set(x, 3);
        candIn.set(cand);
        const sl = newMatmulStats();
        const sf = newMatmulStats();
        const sj = newMatmulStats();
        const a = deltaLinear(listed, csr, x, 0, useCand ? cand : null, cand.length, sl, undefined, 'ffn.down');
        const f = deltaLinear(fused, csr, xIn, 3, useCand ? candIn : null, cand.length, sf, undefined, 'ffn.down');
        const b = deltaLinear(js, csr, x, 0, useCand ? cand : null, cand.length, sj, undefined, 'ffn.down');
        expect(a === null).toBe(b === null);
        expect(f === null).toBe(b === null);
        if (a === null || b === null || f === null) continue;
        expect([a.kernel === null, f.kernel === null, b.kernel === null]).toEqual([false, false, true]);
        const want = bits(linearEx(makeNumericContext({}), dense, x, 'dense').out);
        for (const s of [a, f]) {
          expect(bits(s.y)).toEqual(bits(b.y));
          expect([s.full, s.nRows, s.nUpdated, s.nBounded, s.nChanged, s.negTotal]).toEqual([b.full, b.nRows, b.nUpdated, b.nBounded, b.nChanged, b.negTotal]);
          expect(Array.from(s.rows.subarray(0, s.nRows))).toEqual(Array.from(b.rows.subarray(0, b.nRows)));
          expect(Array.from(s.changed.subarray(0, s.nChanged))).toEqual(Array.from(b.changed.subarray(0, b.nChanged)));
          expect(Array.from(s.mark)).toEqual(Array.from(b.mark));
          expect(Array.from(s.colBits)).toEqual(Array.from(b.colBits));
        }
        expect(bits(b.y)).toEqual(want);
        for (const s of [sl, sf]) expect([s.deltaEntries, s.deltaRows, s.deltaRefolds, s.deltaRefoldEntries]).toEqual([sj.deltaEntries, sj.deltaRows, sj.deltaRefolds, sj.deltaRefoldEntries]);
        if (!a.full) {
          kernelCalls++;
          expect(sf.deltaByRole['ffn.down'].kernelCalls).toBe(1);
          expect(sl.deltaByRole['ffn.down'].kernelCalls).toBe(1);
          refolds += a.nRows - a.nUpdated;
          // tracked rows this call reached and kept exact: their updates were the kernels' deferred entries
          for (let t = 0; t < a.nRows; t++) if ((a.mark[a.rows[t]!]! & 3) === 1) trackedUpdates++;
        }
      }
    }), { numRuns: 300 });
    expect(kernelCalls).toBeGreaterThan(3000);
    expect(trackedUpdates).toBeGreaterThan(300);
    expect(refolds).toBeGreaterThan(300);
  });

  it('a matrix\'s walks are listed for the wasm walk when it holds at least wasmMinEntriesPerColumn stored entries per used column (4 by default), in either profile; no kernels with no wasm memory', () => {
    // 8 rows × 5 columns: column c < 4 holds 2c + 1 entries (16 in all, 4 a used column), column 4
    // none (the form needs a row shorter than the columns)
    const d = new Float32Array(40);
    for (let c = 0; c < 4; c++) for (let r = 0; r <= 2 * c; r++) d[r * 5 + c] = 1 + r;
    const csr: Matrix = { rows: 8, cols: 5, csr: sparsifyMatrix({ rows: 8, cols: 5, dense: d }).csr };
    const x = Float32Array.from([1, 2, 3, 4, 0]);
    // (booleans compared, not the kernels: a failure would print their 256 MiB memory)
    const kernelOf = (tuning: ExecTuning, profile: 'f32' | 'bf16' = 'f32') => {
      const k = deltaLinear(makeNumericContext({ profile, tuning }), csr, x, 0, null, 0)!.kernel;
      return k === null ? 'none' : k.listed ? 'listed' : 'not listed';
    };
    expect(kernelOf({})).toBe('listed'); // 16 ≥ 4 · 4
    expect(kernelOf({ wasmMinEntriesPerColumn: 4.5 })).toBe('not listed');
    expect(kernelOf({ wasmHeapMiB: 0 })).toBe('none');
    expect(kernelOf({}, 'bf16')).toBe('listed'); // (over the uncast sums, DeltaLinearState.acc)
  });

  /** hello's first 300 tokens on a chip, from its prompt, with the run's token ids, matmul work by role and conv channels. */
  const helloOnChip = (model: ChipModel, prog: ChipProgram, tuning: ExecTuning, profile: 'f32' | 'bf16') => {
    const ex = chipExecutor(model, prog, { path: 'sparse', profile, order: { kind: 'sequential' }, tuning });
    ex.prime([BOS_ID]);
    const ids = [ex.decodeArgmax(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }))];
    for (let i = 0; i < 300 && decodeToken(ids[ids.length - 1]!).kind !== 'HALT'; i++) ids.push(ex.decodeArgmax(ids[ids.length - 1]!));
    return { ids, byRole: ex.stats.deltaByRole, conv: ex.stats.convChannels };
  };
  /** Every incremental matmul of `run` ran in the wasm kernels (at least 500 calls each), none of `off`'s. */
  const expectEveryMatmulInWasm = (run: ReturnType<typeof helloOnChip>, off: ReturnType<typeof helloOnChip>): void => {
    expect(run.ids.length).toBeGreaterThan(100);
    for (const role of ['ffn.gateUp', 'gdn.inProj', 'ffn.down', 'gdn.outProj'] as const) {
      const w = run.byRole[role]!;
      expect(w.calls).toBeGreaterThan(500);
      expect(w.kernelCalls).toBe(w.calls);
      expect(off.byRole[role]!.kernelCalls).toBe(0);
    }
  };

  it('the chip (chip-test) in bf16: every incremental matmul runs in wasm too (over the uncast sums), with the tokens of the f32 run and of a run with no wasm memory', async () => {
    const SHAPE = { codeBytes: 4096, memBytes: 32 * 1024 };
    const model = await sharedChip({ target: 'chip-test', ...SHAPE });
    const prog = programOf(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'firmware', 'hello.elf')), SHAPE);
    const bf = helloOnChip(model, prog, {}, 'bf16');
    const off = helloOnChip(model, prog, { wasmHeapMiB: 0 }, 'bf16');
    expect(bf.ids).toEqual(off.ids);
    expect(bf.ids).toEqual(helloOnChip(model, prog, {}, 'f32').ids);
    expectEveryMatmulInWasm(bf, off);
  }, 120_000);

  it('the chip (chip-test): at the default tuning every incremental matmul runs in wasm (the out projections\' input, the gated norm\'s output, lives in the wasm memory); the same tokens as with no wasm memory and with one too small for every state', async () => {
    const SHAPE = { codeBytes: 4096, memBytes: 32 * 1024 };
    const model = await sharedChip({ target: 'chip-test', ...SHAPE });
    const prog = programOf(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'firmware', 'hello.elf')), SHAPE);
    const run = (tuning: ExecTuning) => helloOnChip(model, prog, tuning, 'f32');
    // the q / k norms and the key rows' updates in wasm too (wasm-gdn-kernels.ts l2norm, keyRows)
    const l2norm = vi.spyOn(WasmHeap.prototype, 'gdnL2normAt');
    const keyRows = vi.spyOn(WasmHeap.prototype, 'gdnKeyRowsAt');
    const dflt = run({});
    expect(l2norm.mock.results.filter((r) => r.value === 0).length).toBeGreaterThan(500);
    expect(keyRows.mock.results.filter((r) => r.value !== 0).length).toBeGreaterThan(100);
    l2norm.mockRestore();
    keyRows.mockRestore();
    const off = run({ wasmHeapMiB: 0 });
    // a memory too small for them all: the GDN states take most of 32 MiB, then the first delta
    // states and their kernels are carved in wasm, the rest in JavaScript
    const small = run({ wasmHeapMiB: 32 });
    // repeated conv blocks through their representatives from the first step (conv-alias.ts) and
    // never: the same tokens, the first from fewer conv channels and in_proj entries (the chip's
    // RAM value heads all carry the stored word)
    const aliased = run({ aliasConvBlocks: 1 });
    const unaliased = run({ aliasConvBlocks: 0 });
    expect(dflt.ids).toEqual(off.ids);
    expect(small.ids).toEqual(off.ids);
    expect(aliased.ids).toEqual(off.ids);
    expect(unaliased.ids).toEqual(off.ids);
    expect(aliased.conv).toBeLessThan(0.9 * unaliased.conv);
    expect(aliased.byRole['gdn.inProj']!.entries).toBeLessThan(0.9 * unaliased.byRole['gdn.inProj']!.entries);
    const some = (r: typeof small) => Object.values(r.byRole).reduce((a, w) => a + w.kernelCalls, 0);
    expect(some(small)).toBeGreaterThan(0);
    expect(some(small)).toBeLessThan(some(dflt));
    expectEveryMatmulInWasm(dflt, off);
  }, 120_000);

  it('weightLows: each weight\'s lowbit32 (0 for ±0), in 8 bits when every one fits, in 16 when one is below 2^−128', () => {
    const rnd = lcg(28);
    for (let trial = 0; trial < 40; trial++) {
      const tiny = trial % 2 === 1;
      const v = Float32Array.from({ length: 1 + Math.floor(rnd() * 60) }, () => {
        const r = rnd();
        return r < 0.1 ? 0 : r < 0.15 ? -0 : Math.fround((rnd() < 0.5 ? -1 : 1) * (1 + Math.floor(rnd() * 1000)) * 2 ** (Math.floor(rnd() * 200) - 100));
      });
      // a subnormal or a tiny normal weight: lowest bit below −128
      if (tiny) v[Math.floor(rnd() * v.length)] = rnd() < 0.5 ? 2 ** -149 : -3 * 2 ** -131;
      const lows = weightLows(v);
      const want = Array.from(new Uint32Array(v.buffer), (b) => ((b & 0x7fffffff) === 0 ? 0 : lowbit32(b)));
      expect(lows.BYTES_PER_ELEMENT, `trial ${trial}`).toBe(want.some((l) => l < -128) ? 2 : 1);
      expect(want.some((l) => l < -128)).toBe(tiny);
      expect(Array.from(lows)).toEqual(want);
    }
    expect(lowbit32(new Uint32Array(Float32Array.of(2 ** 127).buffer)[0]!)).toBe(127); // the largest fits 8 bits
  });

  it('weights below 2^−128 (16-bit lowest bits): deltaLinear equals the dense linear over changing inputs', () => {
    const d = Float32Array.from([2 ** -149, 1, 0, 3 * 2 ** -140, /* row 1 */ 0, -(2 ** -130), 2, 0, /* row 2 */ 1, 0, 0, 2 ** -149]);
    const dense: Matrix = { rows: 3, cols: 4, dense: d };
    const m: Matrix = { rows: 3, cols: 4, csr: sparsifyMatrix(dense).csr };
    const ctx = makeNumericContext({});
    const plain = makeNumericContext({});
    const x = Float32Array.from([1, 2, 0, 3]);
    const rnd = lcg(7);
    let partial = 0;
    for (let step = 0; step < 30; step++) {
      if (step > 0) x[Math.floor(rnd() * 4)] = [0, 1, 2 ** 20, 2 ** 100, 0.5, 3, 2 ** 40 + 1][Math.floor(rnd() * 7)]!;
      const st = deltaLinear(ctx, m, x, 0, null, 0)!;
      if (!st.full) partial++;
      expect(bits(st.y), `step ${step}`).toEqual(bits(linearEx(plain, dense, x, 'dense').out));
    }
    expect(partial).toBeGreaterThan(20);
  });

  it('lowbit32: the exponent of the lowest set bit of a float32', () => {
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    const lb = (v: number) => { f[0] = v; return lowbit32(u[0]!); };
    expect([lb(1), lb(2), lb(3), lb(6), lb(0.75), lb(-2432), lb(2 ** -149), lb(3 * 2 ** -149), lb(2 ** -126), lb(2 ** 127), lb(1 + 2 ** -23)])
      .toEqual([0, 1, 0, 1, -2, 7, -149, -149, -126, 127, -23]);
  });
});

describe('linearArgmax memo', () => {
  it('repeated and near-repeated inputs give argmax of the dense logits (ties, negative maxima, ±0, unused columns)', () => {
    let hits = 0;
    let checked = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const rnd = lcg(seed * 7919);
      const rows = 5 + Math.floor(rnd() * 60);
      const cols = 8;
      const d = new Float32Array(rows * cols);
      // column 7 holds no weight: its activation must not matter
      for (let r = 0; r < rows; r++) {
        if (rnd() < 0.4) continue;
        d[r * cols + Math.floor(rnd() * 7)] = [1, -1, 2, -0.5, 1][Math.floor(rnd() * 5)];
      }
      const dense: Matrix = { rows, cols, dense: d };
      const csr: Matrix = { rows, cols, csr: sparsifyMatrix(dense).csr };
      const ctx = makeNumericContext({});
      const pool = [Float32Array.from([1, 0, 0, 2, 0, 1, 0, 0]), Float32Array.from([0, 0, 3, 0, 0, 0, 0, 1]), Float32Array.from([1, -0, 0, 2, 0, 1, 0, 7])];
      for (let step = 0; step < 30; step++) {
        const x = pool[Math.floor(rnd() * pool.length)].slice();
        if (rnd() < 0.3) x[Math.floor(rnd() * cols)] = [0, -0, 1, 2, 0.5, 3][Math.floor(rnd() * 6)];
        const want = argmax(linearEx(makeNumericContext({}), dense, x, 'dense').out);
        const stats = newMatmulStats();
        const before = stats.sparse;
        const got = linearArgmax(ctx, csr, x, 'sparse', new Float32Array(rows), stats);
        expect(got).toBe(want);
        if (stats.sparse > before) checked++;
        hits += stats.argmaxMemoHits;
      }
    }
    expect(checked).toBeGreaterThan(1000);
    expect(hits).toBeGreaterThan(500); // most inputs repeat a key: answered by the memo
  });

  /**
   * linearArgmax on an LM head shaped like an emit against the argmax of the dense logits in
   * `profile` (bf16: every logit rounded; 1 + 2^−23 then ties 1, so a row's rounded logit can tie
   * the best and the lower row wins); returns the steps decided bounded and those that fell back.
   */
  const bigColumnCase = (profile: 'f32' | 'bf16'): { bounded: number; fellBack: number } => {
    // An LM head shaped like an emit: a few "kind" columns over thousands of rows each, a "j"
    // column over many rows, and payload columns over few rows; weights as the partial-row scheme
    // gives them, plus some noise weights (fractional, tiny, just above 1) so ties and near-ties occur.
    // (the shapes are the emit's at a smaller scale: "big" means over 2,048 entries here)
    const tuning = { bigColumn: 2048 };
    let bounded = 0;
    let fellBack = 0;
    {
      for (let seed = 1; seed <= 12; seed++) {
        const rnd = lcg(seed * 15485863);
        const rows = 9000, cols = 16;
        const d = new Float32Array(rows * cols);
        for (let r = 0; r < rows; r++) {
          const kind = r < 4000 ? 0 : r < 7000 ? 1 : 2; // columns 0-2: 4000 / 3000 / 2000 rows
          d[r * cols + kind] = kind === 0 ? 2 : 3;
          if (kind === 0) d[r * cols + 3 + (r & 3)] = 1; // j columns 3-6: 1000 rows each
          d[r * cols + 7 + (r % 9)] = rnd() < 0.05 ? [0.5, 2 ** -30, 1 + 2 ** -23][Math.floor(rnd() * 3)]! : 1; // payload columns
        }
        const dense: Matrix = { rows, cols, dense: d };
        const csr: Matrix = { rows, cols, csr: sparsifyMatrix(dense).csr };
        const ctx = makeNumericContext({ tuning, profile });
        for (let step = 0; step < 80; step++) {
          const x = new Float32Array(cols);
          x[Math.floor(rnd() * 3)] = [1, 1, 1, 2, -1, 0.5][Math.floor(rnd() * 6)]!;
          if (rnd() < 0.7) x[3 + Math.floor(rnd() * 4)] = [1, 1, -1][Math.floor(rnd() * 3)]!;
          x[7 + Math.floor(rnd() * 9)] = [1, 3, -2, -1][Math.floor(rnd() * 4)]!;
          if (rnd() < 0.3) x[7 + Math.floor(rnd() * 9)] = 1;
          // every fourth input: a big kind column on, every small column negative — a row that only
          // the big column reaches wins, so the bound must send it to the full scatter
          if (step % 4 === 3) { x.fill(0); x[Math.floor(rnd() * 2)] = 1; x[3 + Math.floor(rnd() * 4)] = -1; x[7 + Math.floor(rnd() * 9)] = -2; }
          const want = argmax(linearEx(makeNumericContext({ profile }), dense, x, 'dense').out);
          const stats = newMatmulStats();
          expect(linearArgmax(ctx, csr, x, 'sparse', new Float32Array(rows), stats)).toBe(want);
          bounded += stats.argmaxBounded;
          if (stats.argmaxBounded === 0 && stats.argmaxMemoHits === 0) fellBack++;
        }
      }
    }
    return { bounded, fellBack };
  };

  it('big columns: the bounded form (small columns exactly, a bound for the rest) = argmax of the dense logits', () => {
    const { bounded, fellBack } = bigColumnCase('f32');
    expect(bounded).toBeGreaterThan(50);
    expect(fellBack).toBeGreaterThan(20);
  });

  it('big columns in bf16: the bounded form compares rounded logits, ties included', () => {
    const { bounded, fellBack } = bigColumnCase('bf16');
    expect(bounded).toBeGreaterThan(50);
    expect(fellBack).toBeGreaterThan(20);
  });
});

/** Residuals and GDN states of every layer and position, as bit patterns, in event order. */
function recorder(ex: Executor): number[][] {
  const rec: number[][] = [];
  ex.addHook((ev) => {
    rec.push([ev.layer, ev.position], bits(ev.residualIn), bits(ev.residualMid), bits(ev.residualOut));
    for (const a of ev.gdnState ?? []) rec.push(bits(a));
  });
  return rec;
}

/** The regfile example compiled for tiny (once), and BOS then `n` random tokens from seed. */
let regfile: Promise<CompileResult> | null = null;
async function regfileStream(seed: number, n: number) {
  const tiny = resolveTarget('tiny').config;
  regfile ??= loadCircuitFile('circuits/examples/regfile.ts').then((ir) => compileCircuit(ir, tiny));
  const res = await regfile;
  const bos = res.ir.bos ?? 0;
  const rnd = lcg(seed);
  return { tiny, res, stream: [bos, ...Array.from({ length: n }, () => Math.floor(rnd() * bos))] };
}

describe('incremental decode on whole executors', () => {
  it('regfile (GDN RAM, tiny target): sparse (tracked) = dense, every residual and state, with live-state writes', async () => {
    const { res, stream } = await regfileStream(99, 60);
    const li = res.weights.config.layerTypes.indexOf('linear_attention');
    for (const writeAt of [-1, 20]) {
      const s = new Executor(res.weights, { path: 'sparse', profile: 'f32' });
      const d = new Executor(res.weights, { path: 'dense', profile: 'f32' });
      const times: PhaseTimes = {};
      s.setPhaseTimes(times);
      const recS = recorder(s);
      const recD = recorder(d);
      s.prefill([stream[0]]);
      d.prefill([stream[0]]);
      for (let i = 1; i < stream.length; i++) {
        if (i === writeAt) {
          // setGdnState (the loader's path) and a handed-out live state written afterwards
          const S0 = new Float32Array(s.gdnState(li, 0).length);
          S0[3] = 181.01934814453125;
          for (const ex of [s, d]) ex.setGdnState(li, 0, S0);
          for (const ex of [s, d]) { const S = ex.gdnState(li, 1); S[5] = 0.75; }
        }
        expect(s.decodeArgmax(stream[i])).toBe(argmax(d.decode(stream[i])));
      }
      expect(recS.length).toBeGreaterThan(stream.length);
      expect(recS).toEqual(recD);
      expect(s.stats.delta).toBeGreaterThan(0);
      expect(s.stats.deltaShared).toBeGreaterThan(0);
      expect(times['gdn.tracked']).toBeGreaterThan(0); // the tracked GDN step ran
    }
  });

  it('weights given new storage or new matrices between steps: the step\'s memos of its lookups follow them (sparse = dense)', async () => {
    const tiny = resolveTarget('tiny').config;
    // a compile of its own: the weights are changed below
    const res = await loadCircuitFile('circuits/examples/regfile.ts').then((ir) => compileCircuit(ir, tiny));
    const rnd = lcg(41);
    const bos = res.ir.bos ?? 0;
    const stream = [bos, ...Array.from({ length: 50 }, () => Math.floor(rnd() * bos))];
    const w = res.weights;
    const li = w.config.layerTypes.indexOf('linear_attention');
    const scaledCsr = (m: Matrix, f: number) => {
      const c = m.csr!;
      return { rowPtr: c.rowPtr.slice(), colIdx: c.colIdx.slice(), values: c.values.map((v) => v * f) };
    };
    const s = new Executor(w, { path: 'sparse', profile: 'f32' });
    const d = new Executor(w, { path: 'dense', profile: 'f32' });
    const recS = recorder(s);
    const recD = recorder(d);
    s.prefill([stream[0]!]);
    d.prefill([stream[0]!]);
    const mix = w.layers[li]!.mixer;
    const mlp = w.layers[li]!.mlp;
    if (mix.kind !== 'linear_attention' || !('downProj' in mlp)) throw new Error('regfile: no GDN layer with a dense MLP');
    for (let i = 1; i < stream.length; i++) {
      if (i === 10) mlp.gateProj.csr = scaledCsr(mlp.gateProj, 2); // new storage, the same matrix
      if (i === 20) mlp.downProj = { rows: mlp.downProj.rows, cols: mlp.downProj.cols, csr: scaledCsr(mlp.downProj, 0.5) }; // a new matrix
      if (i === 25) w.layers[li]!.mlp = { ...mlp, upProj: { rows: mlp.upProj.rows, cols: mlp.upProj.cols, csr: scaledCsr(mlp.upProj, 4) } };
      if (i === 30) mix.inProjZ.csr = scaledCsr(mix.inProjZ, -1);
      if (i === 40) mix.outProj = { rows: mix.outProj.rows, cols: mix.outProj.cols, csr: scaledCsr(mix.outProj, 2) };
      expect(s.decodeArgmax(stream[i]!)).toBe(argmax(d.decode(stream[i]!)));
    }
    expect(recS).toEqual(recD);
    expect(s.stats.deltaShared).toBeGreaterThan(0);
  });

  it('the work breakdown by matrix (stats.deltaByRole) sums to the totals, one call per matrix and step', async () => {
    const { res, stream } = await regfileStream(7, 40);
    const types = res.weights.config.layerTypes;
    const gdnLayers = types.filter((t) => t === 'linear_attention').length;
    const s = new Executor(res.weights, { path: 'sparse', profile: 'f32' });
    s.prefill([stream[0]!]);
    for (let i = 1; i < stream.length; i++) s.decodeArgmax(stream[i]!);
    const st = s.stats;
    const by = st.deltaByRole;
    const sum = (k: 'entries' | 'rows' | 'refolds' | 'refoldEntries') => DELTA_ROLES.reduce((a, r) => a + by[r][k], 0);
    expect(sum('entries')).toBe(st.deltaEntries);
    expect(sum('rows')).toBe(st.deltaRows);
    expect(sum('refolds')).toBe(st.deltaRefolds);
    expect(sum('refoldEntries')).toBe(st.deltaRefoldEntries);
    expect(st.deltaEntries).toBeGreaterThan(0);
    // every decode step computes each layer's gate/up and down, and each GDN layer's input
    // projections, incrementally (the prefill's call is each matrix's first: not counted)
    const steps = stream.length - 1;
    expect(by['ffn.gateUp'].calls).toBe(types.length * steps);
    expect(by['ffn.down'].calls).toBe(types.length * steps);
    expect(by['gdn.inProj'].calls).toBe(gdnLayers * steps);
    for (const r of DELTA_ROLES) expect(by[r].changedColumns).toBeGreaterThan(0);
    // the dense path computes nothing incrementally
    const d = new Executor(res.weights, { path: 'dense', profile: 'f32' });
    d.prefill([stream[0]!]);
    for (let i = 1; i < 5; i++) d.decode(stream[i]!);
    for (const r of DELTA_ROLES) expect(d.stats.deltaByRole[r]).toEqual({ calls: 0, changedColumns: 0, entries: 0, rows: 0, refolds: 0, refoldEntries: 0, kernelCalls: 0 });
  });

  it.each(['f32', 'bf16'] as const)('setGdnState between tracked steps whose inputs repeat: the next step reads the new state (%s)', async (profile) => {
    // The same token again and again: every head's q, k, v, β and g repeat, so the tracked step
    // would skip every head, reuse its kv, or (q as before, S left alone by a write-free step) keep
    // its output — unless it is told of the write. Each of the stream's first tokens in turn, so
    // that some repeat a read without a write.
    const { res, stream } = await regfileStream(5, 12);
    const layers = res.weights.config.layerTypes.flatMap((t, i) => (t === 'linear_attention' ? [i] : []));
    for (const tok of [...new Set(stream.slice(1, 12))]) {
      const s = new Executor(res.weights, { path: 'sparse', profile });
      const d = new Executor(res.weights, { path: 'dense', profile });
      const recS = recorder(s);
      const recD = recorder(d);
      s.prefill([stream[0]!]);
      d.prefill([stream[0]!]);
      for (let i = 0; i < 12; i++) {
        if (i === 6) {
          for (const li of layers) {
            const heads = res.weights.config.linearNumValueHeads;
            for (let h = 0; h < heads; h++) {
              const S = new Float32Array(res.weights.config.linearKeyHeadDim * res.weights.config.linearValueHeadDim);
              for (let e = 0; e < S.length; e++) S[e] = (e + h) % 3 === 0 ? 181.01934814453125 : 0;
              for (const ex of [s, d]) ex.setGdnState(li, h, S);
            }
          }
        }
        expect(s.decodeArgmax(tok)).toBe(argmax(d.decode(tok)));
        // gdnStateCopy: the state's bits, a copy (writing it changes nothing), nothing handed out
        for (const li of layers) {
          const copy = s.gdnStateCopy(li, 0);
          expect(bits(copy)).toEqual(bits(d.gdnStateCopy(li, 0)));
          copy.fill(7);
          expect(Array.from(s.gdnCacheOf(li).exposed).every((e) => e === 0)).toBe(true);
        }
      }
      expect(recS).toEqual(recD);
    }
  });

  it.each(['f32', 'bf16'] as const)('lazy conv channels: the state they stand for = the dense path\'s, every step, and after a dropped track (compiled, multi-tap and older-tap weights; %s)', async (profile) => {
    const { tiny, res, stream } = await regfileStream(7, 80);
    const K = tiny.linearConvKernelDim;
    const layers = res.weights.config.layerTypes.flatMap((t, i) => (t === 'linear_attention' ? [i] : []));
    // the compiled weights (single-tap channels) and a copy where every third channel also weighs
    // its older taps, so that a channel's output depends on its past inputs (a lazy channel must
    // then fold ahead: steadyAhead), and every third other one weighs no tap (its output is a zero
    // whose sign comes from its taps: the compiled RAM keys never sit at 0, docs/gadgets-gdn.md)
    const multiTap = {
      ...res.weights,
      layers: res.weights.layers.map((l) => {
        if (l.mixer.kind !== 'linear_attention') return l;
        const cw = l.mixer.conv1d.slice();
        for (let c = 0; c * K < cw.length; c += 3) for (let j = 0; j < K - 1; j++) cw[c * K + j] = [0.5, -0.25, -0, 2][(c + j) % 4]!;
        for (let c = 1; c * K < cw.length; c += 3) cw[c * K + K - 1] = 0;
        return { ...l, mixer: { ...l.mixer, conv1d: cw } };
      }),
    };
    // and a copy where every other channel's one weight sits on an older tap (the channel reads
    // the input of one or two positions back: a lazy one must have its taps from that one on equal)
    const olderTap = {
      ...res.weights,
      layers: res.weights.layers.map((l) => {
        if (l.mixer.kind !== 'linear_attention') return l;
        const cw = l.mixer.conv1d.slice();
        for (let c = 0; c * K < cw.length; c += 2) {
          const at = K - 2 - ((c >> 1) % 2);
          cw[c * K + at] = cw[c * K + K - 1]!;
          cw[c * K + K - 1] = 0;
        }
        return { ...l, mixer: { ...l.mixer, conv1d: cw } };
      }),
    };
    for (const weights of [res.weights, multiTap, olderTap]) {
      // (repeated conv blocks through their representatives: conv-alias.ts, from a mid-track step)
      const s = new Executor(weights, { path: 'sparse', profile, tuning: { aliasConvBlocks: 7 } });
      const d = new Executor(weights, { path: 'dense', profile });
      const recS = recorder(s);
      const recD = recorder(d);
      const cacheOf = (ex: Executor, li: number) => ex.gdnCacheOf(li);
      s.prefill([stream[0]!]);
      d.prefill([stream[0]!]);
      let lazySeen = 0;
      let lazyZeroSeen = 0;
      let lazyOlderSeen = 0;
      let aliasSeen = 0;
      for (let i = 1; i < stream.length; i++) {
        expect(s.decodeArgmax(stream[i]!)).toBe(argmax(d.decode(stream[i]!)));
        for (const li of layers) {
          const cs = cacheOf(s, li);
          const t = cs.track;
          if (t) {
            const cw = (weights.layers[li]!.mixer as GdnWeights).conv1d;
            for (let k = 0; k < t.nLazy; k++) {
              const c = t.lazyList[k]!;
              if (t.chan[4 * c]! < 0) continue; // lazySince
              lazySeen++;
              // a lazy channel whose newest product is ±0 went lazy by folding ahead (steadyAhead)
              if (cw[c * K + K - 1]! * cs.conv[c * K + K - 1]! === 0) lazyZeroSeen++;
              if (t.tapAt[c]! < K - 1) lazyOlderSeen++;
            }
          }
          expect(bits(gdnConvSnapshot(cs, K))).toEqual(bits(cacheOf(d, li).conv));
          // and every channel's conv output (kept by the tracked step — an aliased block's through
          // its representative, conv-alias.ts — rewritten by the dense one)
          const co = gdnConvedSnapshot(cs);
          if (co) expect(bits(co)).toEqual(bits(cacheOf(d, li).buffers!.conved));
          if (cs.track?.alias) aliasSeen++;
        }
        if (i === 50) {
          // drop every track as gdnForward does before an untracked step: the next step starts fresh
          for (const li of layers) {
            const cs = cacheOf(s, li);
            dropGdnTrack(cs, K);
            expect(bits(cs.conv)).toEqual(bits(cacheOf(d, li).conv));
          }
        }
      }
      expect(lazySeen).toBeGreaterThan(0); // channels did go lazy
      // the compiled RAM's value heads share their v: blocks ran through their representatives
      if (weights === res.weights) expect(aliasSeen).toBeGreaterThan(0);
      if (weights === multiTap) expect(lazyZeroSeen).toBeGreaterThan(0); // and some with a zero output
      if (weights === olderTap) expect(lazyOlderSeen).toBeGreaterThan(0); // and some of an older tap
      expect(recS).toEqual(recD);
    }
  });
});
