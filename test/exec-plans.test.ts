/**
 * Who owns the executor's caches (src/exec/plans.ts, docs/executor.md "Who owns the caches"):
 * every executor on one ModelWeights object shares its ExecPlans (plansOf) — what the first one
 * derived, the next one finds — and a second load of the same checkpoint gets its own; the
 * sparse-path thresholds are per executor (ExecOptions.tuning), change no bit of the logits
 * (test/exec-fastpath.test.ts shows them moving matmuls to the scatter form), and are refused
 * when they are not numbers ≥ 0.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Executor } from '../src/exec/executor.ts';
import { ExecPlans, plansOf } from '../src/exec/plans.ts';
import { columnExtremesOf, cscPlanOf, nonEmptyRowsOf, sparsePlanOf } from '../src/exec/matmul-plans.ts';
import { loadModel } from '../src/model/load-weights.ts';
import { expectChipcError } from './helpers/assert.ts';

const TINY = path.join(fileURLToPath(new URL('..', import.meta.url)), 'fixtures', 'tiny');
const PROMPT = [1, 2, 3, 300, 17];
const bitsOf = (x: number): number => new Uint32Array(Float32Array.of(x).buffer)[0]!;
const bits = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe('ExecPlans: one per weights object', () => {
  it('a second executor on the same weights finds the plans the first derived; another load has its own', () => {
    const w = loadModel(TINY, { mode: 'sparse' });
    const lm = w.lmHead;
    expect(plansOf(w).sparsePlans.has(lm)).toBe(false);
    const a = new Executor(w, { path: 'sparse' });
    const la = a.prefill(PROMPT)[0]!;
    const plans = plansOf(w);
    expect(plans.sparsePlans.has(lm)).toBe(true);
    const b = new Executor(w, { path: 'sparse' });
    expect(bits(b.prefill(PROMPT)[0]!)).toEqual(bits(la));
    expect(plansOf(w)).toBe(plans);
    const again = loadModel(TINY, { mode: 'sparse' });
    expect(plansOf(again)).not.toBe(plans);
    expect(plansOf(again).sparsePlans.has(again.lmHead)).toBe(false);
  });
});

describe('ExecOptions.tuning', () => {
  it('is per executor and leaves every logit bit as it was (the fast-path tests lower it to reach the scatter form)', () => {
    const w = loadModel(TINY, { mode: 'sparse' });
    const plain = new Executor(w, { path: 'sparse' });
    const scatter = new Executor(w, { path: 'sparse', tuning: { scatterMinNnz: 0 } });
    const lp = plain.prefill(PROMPT);
    const ls = scatter.prefill(PROMPT);
    expect(ls.map(bits)).toEqual(lp.map(bits));
    expect(bits(scatter.decode(9))).toEqual(bits(plain.decode(9)));
  });

  it('refuses thresholds that are not numbers ≥ 0, and names it does not know', () => {
    const w = loadModel(TINY, { mode: 'sparse' });
    for (const tuning of [{ scatterMinNnz: -1 }, { bigColumn: Number.NaN }, { bigColumn: '5' as unknown as number }, { bigColumns: 5 } as unknown as { bigColumn: number }]) {
      expectChipcError(() => new Executor(w, { tuning }), 'exec.bad-option');
    }
  });
});

describe('sparsePlanOf', () => {
  const csrMatrix = (rows: number[][], cols: number, values: number[]) => {
    const rowPtr = new Uint32Array(rows.length + 1);
    rows.forEach((r, i) => { rowPtr[i + 1] = rowPtr[i]! + r.length; });
    return { rows: rows.length, cols, csr: { rowPtr, colIdx: Uint32Array.from(rows.flat()), values: Float32Array.from(values) } };
  };

  it('lists the rows with stored entries and tells finite weights (±0, subnormals, ±max) from ±Inf and NaN', () => {
    const finite = [0, -0, 1.5, 2 ** -149, -(2 ** -149), 3.4028234663852886e38, -3.4028234663852886e38];
    const m = csrMatrix([[0], [], [1, 2], [], [], [0, 1, 2, 3]], 4, finite);
    const plans = new ExecPlans();
    const p = sparsePlanOf(plans, m);
    expect(p.nonEmptyRows).toBeNull(); // listed on first request only
    expect([...nonEmptyRowsOf(plans, m)]).toEqual([0, 2, 5]);
    expect(sparsePlanOf(plans, m).nonEmptyRows).toBe(nonEmptyRowsOf(plans, m)); // and kept with the plan
    expect(p.finite).toBe(true);
    for (const bad of [Infinity, -Infinity, NaN]) {
      const values = [...finite];
      values[4] = bad;
      expect(sparsePlanOf(new ExecPlans(), csrMatrix([[0], [], [1, 2], [], [], [0, 1, 2, 3]], 4, values)).finite, String(bad)).toBe(false);
    }
    expect([...nonEmptyRowsOf(new ExecPlans(), csrMatrix([[], []], 3, []))]).toEqual([]);
  });
});

describe('cscPlanOf', () => {
  it('row indices in 16 bits up to 65,536 rows, in 32 above, the same rows either way', () => {
    for (const rows of [65_536, 65_537, 70_000]) {
      // entries at the first and last rows and a few between, columns 0 … 2
      const at = [0, 1, 4_095, 65_534, 65_535, rows - 1].filter((r, i, a) => r < rows && a.indexOf(r) === i);
      const rowPtr = new Uint32Array(rows + 1);
      const colIdx: number[] = [];
      const values: number[] = [];
      for (let r = 0, k = 0; r < rows; r++) {
        if (at.includes(r)) { colIdx.push(r % 3); values.push(r + 1); k++; }
        rowPtr[r + 1] = k;
      }
      const csr = { rowPtr, colIdx: Uint32Array.from(colIdx), values: Float32Array.from(values) };
      const p = cscPlanOf(new ExecPlans(), { rows, cols: 3, csr }, csr)!;
      expect(p.rowIdx.BYTES_PER_ELEMENT, String(rows)).toBe(rows <= 65_536 ? 2 : 4);
      const got: [number, number][] = [];
      for (let c = 0; c < 3; c++) for (let k = p.colPtr[c]!; k < p.colPtr[c + 1]!; k++) got.push([c, p.rowIdx[k]!]);
      expect(got).toEqual(at.map((r) => [r % 3, r] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]));
    }
  });

  it('is the transpose of sorted CSR rows (column order, rows ascending within a column, the longest row), and null when a row is not strictly ascending', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 12 }), fc.integer(), fc.boolean(), (cols, rows, seed, spoil) => {
      let s = seed >>> 0;
      const rnd = (): number => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 2 ** 32; };
      const rowCols: number[][] = [];
      for (let r = 0; r < rows; r++) rowCols.push(Array.from({ length: cols }, (_, c) => c).filter(() => rnd() < 0.4));
      // spoil one row with two entries: swap them (descending) or repeat one (equal)
      const spoilable = rowCols.filter((r) => r.length >= 2);
      const spoilt = spoil && spoilable.length > 0;
      if (spoilt) {
        const r = spoilable[Math.floor(rnd() * spoilable.length)]!;
        const i = Math.floor(rnd() * (r.length - 1));
        if (rnd() < 0.5) [r[i], r[i + 1]] = [r[i + 1]!, r[i]!]; else r[i + 1] = r[i]!;
      }
      const rowPtr = new Uint32Array(rows + 1);
      rowCols.forEach((r, i) => { rowPtr[i + 1] = rowPtr[i]! + r.length; });
      const colIdx = Uint32Array.from(rowCols.flat());
      const special = [0, -0, NaN, 3.4e38, -3.4e38];
      const values = Float32Array.from(colIdx, () => (rnd() < 0.3 ? special[Math.floor(rnd() * special.length)]! : Math.fround(rnd() * 8 - 4)));
      const m = { rows, cols, csr: { rowPtr, colIdx, values } };
      const p = cscPlanOf(new ExecPlans(), m, m.csr);
      if (spoilt) { expect(p).toBeNull(); return; }
      expect(p).not.toBeNull();
      const want: [number, number, number][] = []; // (column, row, value) in column then row order
      for (let r = 0; r < rows; r++) for (let k = rowPtr[r]!; k < rowPtr[r + 1]!; k++) want.push([colIdx[k]!, r, values[k]!]);
      want.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      const got: [number, number, number][] = [];
      for (let c = 0; c < cols; c++) for (let k = p!.colPtr[c]!; k < p!.colPtr[c + 1]!; k++) got.push([c, p!.rowIdx[k]!, p!.values[k]!]);
      expect(got.map(([c, r, v]) => [c, r, bitsOf(v)])).toEqual(want.map(([c, r, v]) => [c, r, bitsOf(v)]));
      // each column's largest and smallest weight, the first of equal ones (+0 and −0 tie) taken,
      // NaN passed over, +0 for a column with no entry or only NaN
      expect(p!.extremes).toBeNull(); // found on first request
      const ext = columnExtremesOf(p!);
      expect(columnExtremesOf(p!)).toBe(ext);
      let used = 0;
      for (let c = 0; c < cols; c++) {
        let hi = -Infinity, lo = Infinity;
        for (const [wc, , v] of want) if (wc === c) { if (v > hi) hi = v; if (v < lo) lo = v; used = c + 1; }
        expect(bitsOf(ext.colMax[c]!)).toBe(bitsOf(hi === -Infinity ? 0 : hi));
        expect(bitsOf(ext.colMin[c]!)).toBe(bitsOf(lo === Infinity ? 0 : lo));
      }
      expect(p!.usedCols).toBe(used);
      expect(p!.colPtr.length).toBe(cols + 1);
      expect(p!.colPtr[cols]).toBe(colIdx.length);
      expect(p!.maxRowNnz).toBe(Math.max(0, ...rowCols.map((r) => r.length)));
    }), { numRuns: 400 });
  });
});
