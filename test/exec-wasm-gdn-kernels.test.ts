/**
 * The GDN recurrent step's wasm kernels (src/exec/wasm-gdn-kernels.ts), bit for bit:
 *  - `dots` against a plain re-statement of its contract (the scan's lists and flags, the column
 *    sums, the sign of every zero sum, the status) over states and vectors of ±0, negatives,
 *    subnormal products, overflowing products whose sums are NaN, ±∞ and NaN inputs, with every
 *    kind of row mark;
 *  - `delta` against fl(fl(v − kv)·β) and its two flags;
 *  - recurrentStepSparse with its arrays in a wasm memory (the kernels' path) against
 *    recurrentStep in sequential order, single steps of every state kind and tracked sequences
 *    (memo, qSame, the β = ±0 shortcut), counting that the kernels ran and returned each status;
 *  - the tracked conv step in wasm (convActivate, convChannels) against its JavaScript loop, step by
 *    step on a layer of single-tap, older-tap, multi-tap, tapless and overflowing conv channels:
 *    outputs, conv state, conv outputs, channel records and lists;
 *  - the tracked gated norm in wasm (gatedNorm) against its JavaScript loop, step by step on a
 *    layer whose heads' outputs and gates move together and apart, with gates off silu32's
 *    saturated ends, overflowing heads (NaN outputs, left to JavaScript) and steps whose
 *    projections were recomputed in full under a live track: outputs, normed entries and the
 *    per-head records;
 *  - a cache reset lends the carved states to the next cache, cleared, unless one was handed out.
 */
import { describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { gdnStepCase } from './helpers/gdn-step-cases.ts';
import { WasmHeap } from '../src/exec/wasm-heap.ts';
import { gdnDotsScratchLength } from '../src/exec/wasm-layout.ts';
import { NORM_CTL } from '../src/exec/wasm-layout.ts';
import { gdnKernelModuleBytes } from '../src/exec/wasm-gdn-kernels.ts';
import { makeNumericContext, siluFormula } from '../src/exec/numeric.ts';
import { gdnForward, recurrentStep } from '../src/exec/gdn.ts';
import { gdnDimsOf, newGdnCache, type GdnCache } from '../src/exec/gdn-cache.ts';
import { gdnConvSnapshot } from '../src/exec/gdn-tracked.ts';
import { l2normSeq } from '../src/exec/gdn-token.ts';
import { wasmHeapOf } from '../src/exec/delta.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { sparsifyMatrix } from '../src/model/random-weights.ts';
import type { GdnWeights, Matrix } from '../src/model/weights.ts';
import {
  classifyState, newKvMemo, newSparseStepScratch, recurrentStepSparse, STATE_POS, STATE_ZERO,
} from '../src/exec/gdn-sparse-step.ts';

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
const f32 = Math.fround;
const ctx = makeNumericContext({});

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 4294967296; };
}

interface DotsResult { status: number; idx: number[]; nd: number; finite: boolean; negOff: boolean; every: boolean; out: number[] }

/** The dots contract (wasm-gdn-kernels.ts module comment), on plain arrays. */
function referenceDots(S: Float32Array, x: Float32Array, rnz: Uint8Array, dk: number, dv: number, kindPos: boolean): DotsResult {
  const idx: number[] = [];
  const dot: number[] = [];
  let finite = true, negOff = true, every = true;
  for (let i = 0; i < dk; i++) {
    const v = x[i]!;
    if (v !== 0) {
      idx.push(i);
      const fin = Number.isFinite(v);
      if (!fin) finite = false;
      if (rnz[i] !== 0 || !fin) dot.push(i);
    }
    const signSet = v < 0 || Object.is(v, -0);
    if (!signSet) { every = false; if (rnz[i] === 0) negOff = false; }
  }
  const base = { idx, nd: dot.length, finite, negOff, every };
  if (!finite) return { status: 1, ...base, out: [] };
  const sign = kindPos ? (every ? 1 : 0) : -1;
  const zeroSum = (j: number): number => {
    if (!negOff) return 0;
    if (sign >= 0) return sign === 1 ? -0 : 0;
    for (let i = 0; i < dk; i++) if (rnz[i] !== 0 && 1 / f32(S[i * dv + j]! * x[i]!) > 0) return 0;
    return -0;
  };
  const out: number[] = [];
  for (let j = 0; j < dv; j++) {
    let acc = -0;
    let any = false;
    for (const r of dot) {
      const p = f32(S[r * dv + j]! * x[r]!);
      if (p !== 0) { any = true; acc = f32(acc + p); }
    }
    if (acc === 0) acc = any ? 0 : zeroSum(j);
    out.push(acc);
  }
  return { status: out.some((o) => Number.isNaN(o)) ? 2 : 0, ...base, out };
}

const S_VALUES = [0, 0, 0, -0, 1, -1, 0.5, -3, 2 ** -100, -(2 ** -100), 2 ** -140, 3e38, -3e38, 181];
const X_VALUES = [0, 0, 0, -0, -0, 1, -1, 0.25, -0.5, 2 ** -80, 7, 3e38, -(2 ** -30)];

describe('wasm GDN kernels', () => {
  it('the module compiles where SIMD is there (Node 20), and a heap has the kernels', () => {
    expect(gdnKernelModuleBytes().subarray(0, 4)).toEqual(Uint8Array.from([0, 0x61, 0x73, 0x6d]));
    expect(WasmHeap.create(1, siluFormula)!.hasGdnKernels).toBe(true);
  });

  it('dots: lists, flags, column sums and zero signs equal the contract bit for bit', () => {
    const heap = WasmHeap.create(2, siluFormula)!;
    const maxK = 16, maxV = 16;
    const a = heap.carve({
      S: [Float32Array, maxK * maxV], x: [Float32Array, maxK + 3], rnz: [Uint8Array, maxK], out: [Float32Array, maxV + 4],
      idx: [Int32Array, maxK], scr: [Int32Array, gdnDotsScratchLength(maxK, maxV)],
    })!;
    const statuses = [0, 0, 0];
    const zeroKinds = new Set<string>();
    const rnd = lcg(30);
    const pick = <T,>(v: readonly T[]): T => v[Math.floor(rnd() * v.length)]!;
    for (let run = 0; run < 4000; run++) {
      const dk = 4 * (1 + Math.floor(rnd() * 4)), dv = 4 * (1 + Math.floor(rnd() * 4));
      const xOff = Math.floor(rnd() * 4), outOff = Math.floor(rnd() * 4);
      const S = a.S.subarray(0, dk * dv);
      const x = a.x.subarray(0, dk + xOff);
      const scr = a.scr.subarray(0, gdnDotsScratchLength(dk, dv));
      const kindPos = rnd() < 0.5;
      const posOnly = rnd() < 0.3; // a sign-free state (STATE_POS), as pinned RAM heads hold
      for (let e = 0; e < S.length; e++) S[e] = posOnly ? pick([0, 0, 1, 0.5, 181]) : pick(S_VALUES);
      const shape = rnd();
      for (let i = 0; i < dk; i++) {
        // one-hot (a RAM's key), all ±0 (an unused head), all sign-set, or mixed with non-finite entries now and then
        x[xOff + i] = shape < 0.3 ? (i === 1 ? pick([1, 0.5, -1]) : pick([0, -0]))
          : shape < 0.4 ? pick([0, -0])
            : shape < 0.55 ? pick([-0, -1, -0.25])
              : rnd() < 0.03 ? pick([Infinity, -Infinity, NaN]) : pick(X_VALUES);
      }
      const rnz = a.rnz.subarray(0, dk);
      for (let i = 0; i < dk; i++) rnz[i] = rnd() < 0.5 ? 1 : 0;
      const want = referenceDots(S, x.subarray(xOff), rnz, dk, dv, kindPos);
      a.out.fill(NaN);
      const st = heap.gdnDots(S, x, xOff, rnz, dk, dv, kindPos, a.out, outOff, a.idx, scr);
      statuses[st]!++;
      expect(st).toBe(want.status);
      const io = scr.subarray(2 * dk + dv);
      expect([io[0], io[1], io[2], io[3], io[4]]).toEqual([want.idx.length, want.nd, want.finite ? 1 : 0, want.negOff ? 1 : 0, want.every ? 1 : 0]);
      expect(Array.from(a.idx.subarray(0, want.idx.length))).toEqual(want.idx);
      if (st === 0) {
        const got = a.out.subarray(outOff, outOff + dv);
        expect(bits(got)).toEqual(bits(new Float32Array(want.out)));
        // the words around the output are untouched
        if (outOff > 0) expect(Number.isNaN(a.out[outOff - 1])).toBe(true);
        expect(Number.isNaN(a.out[outOff + dv])).toBe(true);
        for (let j = 0; j < dv; j++) if (want.out[j] === 0) zeroKinds.add(`${Object.is(want.out[j], -0) ? '-' : '+'}${kindPos ? 'pos' : 'any'}${want.nd}`);
      }
    }
    // every status, and zero sums of both signs from both kinds of state
    // (seeded: 3,494, 471 and 35)
    expect(statuses[0]).toBeGreaterThan(1000);
    expect(statuses[1]).toBeGreaterThan(100);
    expect(statuses[2]).toBeGreaterThan(20);
    // (one visited row or none on a non-negative state: the kernel's one-pass form)
    for (const z of ['-pos0', '+pos0', '-pos1', '+pos1', '-any0', '+any0', '-any1', '+any1']) expect(zeroKinds.has(z), `${z} of ${[...zeroKinds]}`).toBe(true);
  });

  it('delta: δ_j = fl(fl(v_j − kv_j)·β) bit for bit; bit 0 every δ finite, bit 1 every δ ±0', () => {
    const heap = WasmHeap.create(1, siluFormula)!;
    const a = heap.carve({ v: [Float32Array, 40], kv: [Float32Array, 40], d: [Float32Array, 36] })!;
    const rnd = lcg(31);
    const pick = <T,>(v: readonly T[]): T => v[Math.floor(rnd() * v.length)]!;
    const flagsSeen = new Set<number>();
    for (let run = 0; run < 3000; run++) {
      const dv = 4 * (1 + Math.floor(rnd() * 8));
      const vOff = Math.floor(rnd() * 4), kvOff = Math.floor(rnd() * 4);
      const kind = rnd();
      for (let j = 0; j < dv; j++) {
        const same = kind < 0.4; // v = kv: δ all ±0 for a finite β
        const kv = pick([0, -0, 1, 181, -3, 0.1, 3e38, 1e-40]);
        a.kv[kvOff + j] = kv;
        a.v[vOff + j] = same ? kv : rnd() < 0.02 ? pick([Infinity, NaN]) : pick([0, -0, 1, 181, 0.3, -3e38, 7]);
      }
      const beta = f32(pick([0, -0, 1, 0.5, 0.1, 3, Infinity]));
      const fl = heap.gdnDelta(a.v, vOff, a.kv, kvOff, beta, a.d, dv);
      const want = Array.from({ length: dv }, (_, j) => f32(f32(a.v[vOff + j]! - a.kv[kvOff + j]!) * beta));
      const finite = want.every((d) => Number.isFinite(d));
      expect(fl).toBe((finite ? 1 : 0) | (want.every((d) => d === 0) ? 2 : 0));
      flagsSeen.add(fl);
      if (finite) expect(bits(a.d.subarray(0, dv))).toEqual(bits(new Float32Array(want)));
    }
    expect([...flagsSeen].sort()).toEqual([0, 1, 3]);
  });

  it('keyRows: S_ij + k_i·δ_j on the listed rows bit for bit, their marks, flags and bound; nothing written at a non-finite or −0 entry', () => {
    const heap = WasmHeap.create(1, siluFormula)!;
    const dk = 8;
    const a = heap.carve({ S: [Float32Array, dk * 16], k: [Float32Array, dk + 3], idx: [Int32Array, dk], d: [Float32Array, 16], rnz: [Uint8Array, dk], io: [Float32Array, 1] })!;
    const rnd = lcg(47);
    const pick = <T,>(v: readonly T[]): T => v[Math.floor(rnd() * v.length)]!;
    const seen = new Set<number>();
    for (let run = 0; run < 3000; run++) {
      const dv = 4 * (1 + Math.floor(rnd() * 4));
      const kOff = Math.floor(rnd() * 4);
      const rare = rnd() < 0.15;
      for (let i = 0; i < dk * dv; i++) a.S[i] = pick([0, 0, 1, -2, 181, 0.5, 3e38, rare ? -0 : 0]);
      for (let i = 0; i < dk; i++) a.k[kOff + i] = pick([1, 0.5, -1, 2, 0, rare ? Infinity : 1]);
      for (let j = 0; j < dv; j++) a.d[j] = pick([0, -0, 1, -1, -181, 0.25, 3e38, rare ? NaN : 7]);
      const rows = [...Array(dk).keys()].filter(() => rnd() < 0.4);
      a.idx.set(rows);
      a.rnz.fill(0);
      const before = new Float32Array(a.S);
      const want = new Float32Array(a.S);
      let dirty = false, nonZero = false, neg = false, max = 0;
      for (const i of rows) {
        for (let j = 0; j < dv; j++) {
          const y = f32(want[i * dv + j]! + f32(a.k[kOff + i]! * a.d[j]!));
          want[i * dv + j] = y;
          if (!Number.isFinite(y) || Object.is(y, -0)) dirty = true;
          if (y !== 0) nonZero = true;
          if (y < 0) neg = true;
          if (Math.abs(y) > max) max = Math.abs(y);
        }
      }
      const fl = heap.gdnKeyRows(a.S.subarray(0, dk * dv), a.k, kOff, a.idx, rows.length, a.d, dv, a.rnz, a.io);
      seen.add(fl);
      if (dirty) {
        expect(fl).toBe(0);
        expect(bits(a.S)).toEqual(bits(before));
        expect(Array.from(a.rnz)).toEqual(Array(dk).fill(0));
      } else {
        expect(fl).toBe(1 | (nonZero ? 2 : 0) | (neg ? 4 : 0));
        expect(bits(a.S)).toEqual(bits(want));
        expect(Array.from(a.rnz)).toEqual([...Array(dk).keys()].map((i) => (rows.includes(i) ? 1 : 0)));
        expect(a.io[0]).toBe(max);
      }
    }
    expect([...seen].sort()).toEqual([0, 1, 3, 7]);
  });

  it('l2norm: l2normSeq\'s bits (the copy, the scaled non-zeros); status 1, out = x, where r is not finite and positive', () => {
    const heap = WasmHeap.create(1, siluFormula)!;
    const a = heap.carve({ x: [Float32Array, 40], out: [Float32Array, 40], nz: [Int32Array, 36] })!;
    const rnd = lcg(53);
    const pick = <T,>(v: readonly T[]): T => v[Math.floor(rnd() * v.length)]!;
    const statuses = [0, 0];
    for (let run = 0; run < 3000; run++) {
      const n = 4 * (1 + Math.floor(rnd() * 8));
      const xOff = Math.floor(rnd() * 4), outOff = Math.floor(rnd() * 4);
      const rare = rnd() < 0.1;
      const dense = rnd();
      for (let i = 0; i < n; i++) {
        a.x[xOff + i] = rnd() < dense ? pick([1, -1, 2, 0.5, 3, -7, 1e-3, 1e-20, rare ? pick([Infinity, NaN, 3e38, -2e19]) : 181]) : pick([0, -0]);
      }
      const s = pick([1, f32(Math.pow(8, -0.5)), f32(Math.pow(128, -0.5)), 3]);
      a.out.fill(12345);
      const want = new Float32Array(a.out);
      l2normSeq(a.x, xOff, n, want, outOff, s);
      const st = heap.gdnL2norm(a.x, xOff, n, a.out, outOff, s, a.nz);
      statuses[st]!++;
      if (st === 0) expect(bits(a.out)).toEqual(bits(want));
      else {
        expect(st).toBe(1);
        const acc = Array.from(a.x.subarray(xOff, xOff + n)).reduce((p, v) => (v === 0 ? p : f32(p + f32(v * v))), -0);
        const r = f32(1 / f32(Math.sqrt(f32(acc + f32(1e-6)))));
        expect(Number.isFinite(r) && r > 0).toBe(false);
        expect(bits(a.out.subarray(outOff, outOff + n))).toEqual(bits(a.x.subarray(xOff, xOff + n)));
      }
    }
    expect(statuses[0]).toBeGreaterThan(2000);
    expect(statuses[1]).toBeGreaterThan(30);
  });
});

/** The arrays recurrentStepSparse reads and writes, as views of a wasm memory (the kernels' path) when `heap` is given. */
function stepArrays(heap: WasmHeap | null, dk: number, dv: number) {
  const mk = (n: number) => (heap === null ? new Float32Array(n) : heap.take(Float32Array, n)!);
  return {
    S: mk(dk * dv), q: mk(dk), k: mk(dk), v: mk(dv), o: mk(dv),
    rows: heap === null ? new Uint8Array(dk) : heap.take(Uint8Array, dk)!,
    memo: newKvMemo(1, dv, mk(dv)), scratch: newSparseStepScratch(dk, dv, heap),
  };
}

describe('recurrentStepSparse on the wasm memory', () => {
  const caseArb = gdnStepCase(fc.record({ dk: fc.constantFrom(4, 8), dv: fc.constantFrom(4, 8) }));

  it('single steps: bit-identical to recurrentStep, and the kernels ran (finished, and refused a non-finite vector)', () => {
    const heap = WasmHeap.create(16, siluFormula)!;
    const dots = vi.spyOn(heap, 'gdnDotsAt');
    const delta = vi.spyOn(heap, 'gdnDeltaAt');
    const keyRows = vi.spyOn(heap, 'gdnKeyRowsAt');
    const byShape = new Map<string, ReturnType<typeof stepArrays>>();
    fc.assert(fc.property(caseArb, fc.boolean(), ({ dk, dv, S, q, k, v, g, beta }, conservativeRows) => {
      const key = `${dk}x${dv}`;
      if (!byShape.has(key)) byShape.set(key, stepArrays(heap, dk, dv));
      const w = byShape.get(key)!;
      const Sa = new Float32Array(S);
      w.S.set(Sa);
      w.q.set(q); w.k.set(k); w.v.set(v);
      const oa = new Float32Array(dv);
      recurrentStep(ctx, dk, dv, Sa, w.q, 0, w.k, 0, w.v, 0, g, beta, oa, 0, false);
      w.rows.fill(0);
      const kindIn = classifyState(w.S, w.rows);
      if (conservativeRows) w.rows.fill(1);
      recurrentStepSparse(dk, dv, w.S, kindIn, w.rows, w.q, 0, w.k, 0, w.v, 0, g, beta, w.o, 0, w.scratch);
      expect(bits(w.S)).toEqual(bits(Sa));
      expect(bits(w.o)).toEqual(bits(oa));
    }), { numRuns: 4000, seed: 30 });
    const st = [0, 1, 2].map((s) => dots.mock.results.filter((r) => r.value === s).length);
    expect(st[0]).toBeGreaterThan(1000);
    expect(st[1]).toBeGreaterThan(50); // a non-finite key or query: JavaScript's dots
    // (a NaN column sum, status 2, needs products overflowing both ways in one column: the dots test above)
    expect(delta.mock.results.filter((r) => (r.value & 1) === 1).length).toBeGreaterThan(500);
    expect(delta.mock.results.filter((r) => (r.value & 1) === 0).length).toBeGreaterThan(50);
    // the key rows written in wasm, and left to JavaScript at a non-finite or −0 entry
    expect(keyRows.mock.results.filter((r) => r.value !== 0).length).toBeGreaterThan(200);
    expect(keyRows.mock.results.filter((r) => r.value === 0).length).toBeGreaterThan(5);
  });

  it('tracked sequences (memo, qSame, the β = ±0 shortcut): bit-identical to recurrentStep with the kernels and without', () => {
    const heap = WasmHeap.create(16, siluFormula)!;
    const dots = vi.spyOn(heap, 'gdnDotsAt');
    const delta = vi.spyOn(heap, 'gdnDeltaAt');
    const keyRows = vi.spyOn(heap, 'gdnKeyRowsAt');
    const dkv = fc.constantFrom(4, 8);
    const byShape = new Map<string, ReturnType<typeof stepArrays>>();
    fc.assert(fc.property(dkv, dkv, fc.integer({ min: 0, max: 2 ** 31 - 1 }), (dk, dv, seed) => {
      const rnd = lcg(seed);
      const pick = <T,>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
      const key = `${dk}x${dv}`;
      if (!byShape.has(key)) byShape.set(key, stepArrays(heap, dk, dv));
      const w = byShape.get(key)!;
      const js = stepArrays(null, dk, dv); // the JavaScript loops, for the same steps
      const Sa = new Float32Array(dk * dv);
      w.S.fill(0); w.rows.fill(0); w.memo.valid.fill(0); w.memo.kFinite.fill(0); w.memo.kZero.fill(0);
      const sMax = new Float64Array(1), sMaxJs = new Float64Array(1);
      let kind = classifyState(w.S, w.rows, sMax, 0);
      let kindJs = classifyState(js.S, js.rows, sMaxJs, 0);
      const oa = new Float32Array(dv);
      let prevModified = true;
      let first = true;
      for (let step = 0; step < 24; step++) {
        const keepQ = !first && rnd() < 0.7;
        const keepK = !first && rnd() < 0.6;
        if (!keepQ) w.q.set(Float32Array.from({ length: dk }, () => pick([0, -0, 0, 4, -0, 1, -2])));
        if (!keepK) {
          const hot = Math.floor(rnd() * (dk + 1)); // dk: no hot row (k all ±0)
          w.k.set(Float32Array.from({ length: dk }, (_, i) => (i === hot ? pick([1, 1, 0.5, Infinity]) : pick([0, -0]))));
        }
        const huge = rnd() < 0.1;
        w.v.set(Float32Array.from({ length: dv }, () => (huge ? pick([3e38, -3e38, 1e38]) : pick([-0, -0, 181, -3, rnd() < 0.05 ? NaN : 181]))));
        js.q.set(w.q); js.k.set(w.k); js.v.set(w.v);
        const beta = pick([0, 0, -0, 1, 0.5]);
        const g = rnd() < 0.1 ? -1 : -0;
        recurrentStep(ctx, dk, dv, Sa, w.q, 0, w.k, 0, w.v, 0, g, beta, oa, 0, false);
        const same = keepQ && keepK && !prevModified;
        const kSame = keepK && !prevModified;
        kind = recurrentStepSparse(dk, dv, w.S, kind, w.rows, w.q, 0, w.k, 0, w.v, 0, g, beta, w.o, 0, w.scratch, w.memo, 0, same, keepQ, sMax, kSame);
        kindJs = recurrentStepSparse(dk, dv, js.S, kindJs, js.rows, js.q, 0, js.k, 0, js.v, 0, g, beta, js.o, 0, js.scratch, js.memo, 0, same, keepQ, sMaxJs, kSame);
        prevModified = w.scratch.modified[0] === 1;
        expect(js.scratch.modified[0]).toBe(w.scratch.modified[0]);
        expect(bits(w.S)).toEqual(bits(Sa));
        expect(bits(w.o)).toEqual(bits(oa));
        // the same bookkeeping as the JavaScript loops: kind, rows, bound, memo
        expect(kind).toBe(kindJs);
        expect(Array.from(w.rows)).toEqual(Array.from(js.rows));
        expect(sMax[0]).toBe(sMaxJs[0]);
        expect(w.memo.valid[0]).toBe(js.memo.valid[0]);
        if (w.memo.valid[0] === 1) {
          expect([w.memo.kFinite[0], w.memo.kZero[0]]).toEqual([js.memo.kFinite[0], js.memo.kZero[0]]);
          expect(bits(w.memo.kv)).toEqual(bits(js.memo.kv));
        }
        first = false;
      }
    }), { numRuns: 400, seed: 30 });
    expect(dots.mock.calls.length).toBeGreaterThan(2000);
    expect(delta.mock.calls.length).toBeGreaterThan(1000);
    expect(keyRows.mock.results.filter((r) => r.value !== 0).length).toBeGreaterThan(500);
  });
});

describe('GDN cache on the wasm memory', () => {
  const d = { K: 4, convDim: 48, hk: 1, hv: 2, dk: 8, dv: 8, r: 2, keyDim: 8, valueDim: 16 } as Parameters<typeof newGdnCache>[0];

  it('states are carved once: a reset clears and reuses them unless one was handed out', () => {
    const heap = WasmHeap.create(1, siluFormula)!;
    const a = newGdnCache(d, heap);
    expect(a.S[0]!.buffer).toBe(heap.buffer);
    const free = heap.free;
    a.S[1]!.fill(3);
    a.rowNonZero[1]!.fill(1);
    a.kind[1] = STATE_POS;
    a.S[0]![5] = 7; // (kind STATE_ZERO says all +0: a reset trusts it and leaves this head's pages alone)
    a.conv.fill(-2);
    const b = newGdnCache(d, heap, a);
    expect(b.conv.byteOffset).toBe(a.conv.byteOffset);
    expect(b.conv.every((x) => Object.is(x, 0))).toBe(true);
    expect(heap.free).toBe(free);
    expect(b.S[1]!.byteOffset).toBe(a.S[1]!.byteOffset);
    expect(b.S[1]!.every((x) => Object.is(x, 0))).toBe(true);
    expect(b.rowNonZero[1]!.every((x) => x === 0)).toBe(true);
    expect(b.S[0]![5]).toBe(7);
    expect([...b.kind]).toEqual([STATE_ZERO, STATE_ZERO]);
    // a handed-out state is the caller's: the next cache gets new arrays
    b.exposed[0] = 1;
    const c = newGdnCache(d, heap, b);
    expect(c.S[0]!.byteOffset).not.toBe(b.S[0]!.byteOffset);
    expect(heap.free).toBeLessThan(free);
    // without room, JavaScript arrays
    const small = WasmHeap.create(1, siluFormula)!;
    small.take(Uint8Array, small.free - 64);
    expect(newGdnCache(d, small).S[0]!.buffer).not.toBe(small.buffer);
    expect(newGdnCache(d, null).S[0]!.buffer).not.toBe(heap.buffer);
  });
});

// tiny's head dimensions (16, powers of two) and others (12 and 20; the kernels divide a channel's
// offset by them to find its head); conv kernels of 4 taps (the hosts': convChannels4, its loops
// unrolled) and of 3 and 5 (convChannels, which reads K from its control block)
for (const [dk, dv, K] of [[16, 16, 4], [12, 20, 4], [16, 16, 3], [12, 20, 5]] as const) describe(`tracked conv step in wasm (head dimensions ${dk} and ${dv}, ${K} taps)`, () => {
  const TINY = { ...resolveTarget('tiny').config, linearKeyHeadDim: dk, linearValueHeadDim: dv, linearConvKernelDim: K };
  const d = gdnDimsOf(TINY);

  /** A tiny GDN layer with seeded sparse in_proj rows and conv channels of every kind (some overflowing). */
  function layer(seed: number): GdnWeights {
    const rnd = lcg(seed);
    const pick = <T,>(v: readonly T[]): T => v[Math.floor(rnd() * v.length)]!;
    const H = TINY.hiddenSize;
    const { keyDim, valueDim, hv, K, convDim } = d;
    const mat = (rows: number, cols: number, fill: (m: Float32Array) => void): Matrix => {
      const dense = new Float32Array(rows * cols);
      fill(dense);
      return { rows, cols, csr: sparsifyMatrix({ rows, cols, dense }).csr };
    };
    const conv1d = new Float32Array(convDim * K);
    for (let c = 0; c < convDim; c++) {
      const kind = rnd();
      if (kind < 0.45) conv1d[c * K + K - 1] = pick([1, 0.5, -2]); // single tap, the newest
      else if (kind < 0.6) conv1d[c * K + K - 2 - Math.floor(rnd() * 2)] = pick([1, -1]); // single, older
      else if (kind < 0.8) for (let j = 0; j < K; j++) conv1d[c * K + j] = pick([0.5, -0.25, -0, 2]); // several taps
      else if (kind < 0.95) { /* no tap weighs: a zero output whose sign the taps give */ } else conv1d[c * K + K - 1] = 3e38; // overflows
    }
    // channels 0 … 10 read input H − 1 alone: folds at silu32's edges (−89, 17) and, for 5 and 6,
    // inputs that overflow to ±∞ in their newest tap while an older tap is the one that weighs; 8
    // and 9 weigh their tap by 1 + 2^−8 and 1 + 3·2^−10, so that their folds are no bf16 values
    // (2 + 2^−7 is a tie that rounds down to 2, −3 − 9·2^−10 rounds to −3 − 2^−6); 10's finite
    // fold, about −3.3997e38, rounds to −∞ in bf16, whose SiLU is NaN
    const edge = [-88.5, -89, -89.5, 16.5, 17, 3e38, -3e38, 1, 2, -3, -3.39e38];
    const tapWeight = [1, 1, 1, 1, 1, 1, 1, 1, 1 + 2 ** -8, 1 + 3 * 2 ** -10, 1.003];
    for (let c = 0; c < edge.length; c++) {
      conv1d.fill(0, c * K, (c + 1) * K);
      conv1d[c * K + (c === 5 || c === 6 ? K - 2 : K - 1)] = tapWeight[c]!;
    }
    return {
      kind: 'linear_attention',
      inProjQkv: mat(2 * keyDim + valueDim, H, (m) => {
        for (let e = 0; e < m.length; e++) if (rnd() < 0.02) m[e] = pick([1, -1, 0.5, 2, 7]);
        for (let c = 0; c < edge.length; c++) { m.fill(0, c * H, (c + 1) * H); m[c * H + H - 1] = edge[c]!; }
      }),
      inProjZ: mat(valueDim, H, (m) => { for (let c = 0; c < valueDim; c++) m[c * H + (c % H)] = 3; }),
      inProjB: mat(hv, H, (m) => { for (let h = 0; h < hv; h++) m[h * H] = 30; }),
      inProjA: mat(hv, H, () => {}),
      conv1d, aLog: new Float32Array(hv).fill(-200), dtBias: new Float32Array(hv).fill(-200),
      norm: new Float32Array(d.dv).fill(1),
      outProj: mat(H, valueDim, (m) => { for (let i = 0; i < H; i++) m[i * valueDim + (i % valueDim)] = 0.5; }),
    };
  }

  for (const profile of ['f32', 'bf16'] as const) it(`the same outputs, conv state, conv outputs, records and lists as the JavaScript loop, every step (${profile})`, () => {
    let bails = 0;
    let kernelCalls = 0;
    let lazySeen = 0;
    for (const seed of [1, 2, 3]) {
      const w = layer(seed);
      const ctxW = makeNumericContext({ profile });
      const ctxJ = makeNumericContext({ profile, tuning: { wasmHeapMiB: 0 } });
      const heap = wasmHeapOf(ctxW)!;
      const spy = vi.spyOn(heap, 'convChannelsAt');
      const cw: GdnCache = newGdnCache(d, heap);
      const cj: GdnCache = newGdnCache(d);
      expect(cw.conv.buffer === heap.buffer, 'the conv state lies in the wasm memory').toBe(true); // (=== : a failing toBe would print the 256 MiB buffer)
      const rnd = lcg(100 + seed);
      const H = TINY.hiddenSize;
      // a few inputs met again and again (channels settle and go lazy), now and then a new one
      const pool = Array.from({ length: 5 }, () => {
        const x = new Float32Array(H);
        for (let n = 0; n < 3; n++) x[Math.floor(rnd() * H)] = [1, 2, -1, 0.5][Math.floor(rnd() * 4)]!;
        x[H - 1] = [0, 1, 1, 7][Math.floor(rnd() * 4)]!;
        return x;
      });
      for (let step = 0; step < 120; step++) {
        const x = rnd() < 0.1 ? Float32Array.from({ length: H }, () => (rnd() < 0.05 ? 1 : 0)) : pool[Math.floor(rnd() * (step < 60 ? 2 : 5))]!;
        const a = gdnForward(ctxW, TINY, w, cw, [x], 'decode', 'sparse', false);
        const b = gdnForward(ctxJ, TINY, w, cj, [x], 'decode', 'sparse', false);
        expect(bits(a.out[0]!)).toEqual(bits(b.out[0]!));
        expect(bits(gdnConvSnapshot(cw, d.K))).toEqual(bits(gdnConvSnapshot(cj, d.K)));
        expect(bits(cw.conv)).toEqual(bits(cj.conv));
        expect(bits(cw.buffers!.conved)).toEqual(bits(cj.buffers!.conved));
        const tw = cw.track, tj = cj.track;
        expect(tw === undefined).toBe(tj === undefined);
        if (tw !== undefined && tj !== undefined) {
          expect([tw.nActive, tw.nLazy, tw.step]).toEqual([tj.nActive, tj.nLazy, tj.step]);
          expect(Array.from(tw.active.subarray(0, tw.nActive))).toEqual(Array.from(tj.active.subarray(0, tj.nActive)));
          expect(Array.from(tw.lazyList.subarray(0, tw.nLazy))).toEqual(Array.from(tj.lazyList.subarray(0, tj.nLazy)));
          expect(Array.from(tw.chan)).toEqual(Array.from(tj.chan));
          expect(Array.from(tw.vBeyond)).toEqual(Array.from(tj.vBeyond));
          expect([...tw.qDirty, ...tw.kDirty, ...tw.vDirty]).toEqual([...tj.qDirty, ...tj.kDirty, ...tj.vDirty]);
          for (let k = 0; k < tw.nLazy; k++) if (tw.chan[4 * tw.lazyList[k]!]! >= 0) lazySeen++;
        }
      }
      for (let h = 0; h < d.hv; h++) expect(bits(cw.S[h]!)).toEqual(bits(cj.S[h]!));
      kernelCalls += spy.mock.calls.length;
      bails += spy.mock.results.filter((r) => r.value === 1).length;
    }
    expect(d.K).toBe(K);
    expect(kernelCalls).toBeGreaterThan(300); // the kernels ran
    expect(bails).toBeGreaterThan(10); // and left overflowing channels to JavaScript
    expect(lazySeen).toBeGreaterThan(100); // channels went lazy
  });
});

// the gated norm kernel: tiny's head dimensions and dv = 20 (a multiple of 4 that is not a power of two)
for (const [dk, dv] of [[16, 16], [12, 20]] as const) describe(`tracked gated norm in wasm (head dimensions ${dk} and ${dv})`, () => {
  const TINY = { ...resolveTarget('tiny').config, linearKeyHeadDim: dk, linearValueHeadDim: dv };
  const d = gdnDimsOf(TINY);
  const H = TINY.hiddenSize;

  /**
   * A tiny GDN layer whose value heads write v into state row 0 (k = e_0; β = 1 where input 0 is
   * set, else +0) and read row 0 back (q = e_0), so each output o is the v the input selects: seeded
   * sparse v rows (one head's entries overflow to ±∞ with input H − 1 at 2: an infinite sum of
   * squares, r = 0 and NaN outputs), and z rows that give saturated gates (≥ 17, ≤ −89), ±0 and
   * unsaturated ones (silu32's formula, called back from the kernel).
   */
  function layer(seed: number): GdnWeights {
    const rnd = lcg(seed);
    const pick = <T,>(v: readonly T[]): T => v[Math.floor(rnd() * v.length)]!;
    const { keyDim, valueDim, hk, hv, K, convDim } = d;
    const mat = (rows: number, cols: number, fill: (m: Float32Array) => void): Matrix => {
      const dense = new Float32Array(rows * cols);
      fill(dense);
      return { rows, cols, csr: sparsifyMatrix({ rows, cols, dense }).csr };
    };
    const conv1d = new Float32Array(convDim * K);
    for (let c = 0; c < convDim; c++) conv1d[c * K + K - 1] = 1;
    return {
      kind: 'linear_attention',
      inProjQkv: mat(2 * keyDim + valueDim, H, (m) => {
        // (a weight of its own per q and k head: no block repeats another, conv-alias.ts, so both
        // sequences below walk the one full stack and share its state)
        for (let kh = 0; kh < hk; kh++) { m[(kh * d.dk) * H + 1] = 30 + 2 * kh; m[(keyDim + kh * d.dk) * H + 1] = 31 + 2 * kh; }
        for (let c = 0; c < valueDim; c++) {
          const row = (2 * keyDim + c) * H;
          for (let col = 2; col < H - 1; col++) if (rnd() < 0.08) m[row + col] = pick([20, -20, 1, 0.5, 40, -3]);
          if (Math.floor(c / d.dv) === hv - 1 && c % 3 === 0) m[row + H - 1] = 3e38;
        }
      }),
      inProjZ: mat(valueDim, H, (m) => {
        for (let c = 0; c < valueDim; c++) for (let col = 2; col < H - 1; col++) if (rnd() < 0.06) m[c * H + col] = pick([30, -100, 2, -1, 0.25]);
      }),
      inProjB: mat(hv, H, (m) => { for (let h = 0; h < hv; h++) { m[h * H] = 230; m[h * H + 1] = -200; } }),
      inProjA: mat(hv, H, () => {}),
      conv1d, aLog: new Float32Array(hv).fill(-200), dtBias: new Float32Array(hv).fill(-200),
      norm: Float32Array.from({ length: d.dv }, (_, j) => pick([1, 0.5, -2, 0, 1 + j / 8])),
      outProj: mat(H, valueDim, (m) => { for (let i = 0; i < H; i++) m[i * valueDim + (i % valueDim)] = 0.5; }),
    };
  }

  for (const [meanMode, profile] of [['div', 'f32'], ['mulrecip', 'f32'], ['div', 'bf16'], ['mulrecip', 'bf16']] as const) {
    it(`the same outputs, normed entries, per-head records and changed lists as the JavaScript loop, every step (mean ${meanMode}, ${profile})`, () => {
      let calls = 0, bails = 0, callbacks = 0, fullCalls = 0;
      for (const seed of [1, 2, 3]) {
        const w = layer(seed);
        const ctxW = makeNumericContext({ meanMode, profile });
        const ctxJ = makeNumericContext({ meanMode, profile, tuning: { wasmHeapMiB: 0 } });
        const heap = wasmHeapOf(ctxW)!;
        const kernel = heap.gatedNormAt.bind(heap);
        const spy = vi.spyOn(heap, 'gatedNormAt').mockImplementation((ctlAt: number, bf16: boolean) => {
          if (new Int32Array(heap.buffer, ctlAt, NORM_CTL.full + 1)[NORM_CTL.full] === 1) fullCalls++;
          expect(bf16).toBe(profile === 'bf16');
          return kernel(ctlAt, bf16);
        });
        const cw: GdnCache = newGdnCache(d, heap);
        const cj: GdnCache = newGdnCache(d);
        // a second sequence on the same weights and contexts: its infinite inputs invalidate the
        // shared in-projection state, so the first sequence's next step has its projections
        // recomputed in full under a live track (any z may have moved: every kept head rescanned)
        const cw2: GdnCache = newGdnCache(d, heap);
        const cj2: GdnCache = newGdnCache(d);
        const rnd = lcg(200 + seed);
        // a few inputs met again and again (outputs and gates that stay, move alone or together), now and then a new one
        const input = () => {
          const x = new Float32Array(H);
          x[1] = 1;
          x[0] = rnd() < 0.8 ? 1 : 0; // write (β = 1) or keep the row (β = +0)
          for (let n = 0; n < 4; n++) x[2 + Math.floor(rnd() * (H - 3))] = [1, 2, -1, 0.5][Math.floor(rnd() * 4)]!;
          if (rnd() < 0.15) x[H - 1] = 2; // the overflowing head
          return x;
        };
        const pool = Array.from({ length: 6 }, input);
        for (let step = 0; step < 100; step++) {
          const x = rnd() < 0.2 ? input() : pool[Math.floor(rnd() * pool.length)]!;
          const a = gdnForward(ctxW, TINY, w, cw, [x], 'decode', 'sparse', false);
          const b = gdnForward(ctxJ, TINY, w, cj, [x], 'decode', 'sparse', false);
          expect(bits(a.out[0]!)).toEqual(bits(b.out[0]!));
          expect(bits(cw.buffers!.normed)).toEqual(bits(cj.buffers!.normed));
          const tw = cw.track!, tj = cj.track!;
          expect(tw.normIn).toBe(cw.buffers!.normKernel!.normIn); // the kernel's arrays
          expect(Array.from(tw.normIn)).toEqual(Array.from(tj.normIn));
          expect(Array.from(tw.normZ)).toEqual(Array.from(tj.normZ));
          expect(bits(tw.normAcc)).toEqual(bits(tj.normAcc));
          expect(bits(tw.normR)).toEqual(bits(tj.normR));
          expect(Array.from(tw.normKept)).toEqual(Array.from(tj.normKept));
          const proj = new Float32Array(tw.projBits.buffer, tw.projBits.byteOffset, tw.projBits.length); // (z at convDim)
          for (let c = 0; c < d.valueDim; c++) { const z = proj[d.convDim + c]!; if (z !== 0 && z < 17 && z > -89) callbacks++; }
          if (step % 9 === 8) {
            const x2 = input();
            x2[2] = Infinity;
            const a2 = gdnForward(ctxW, TINY, w, cw2, [x2], 'decode', 'sparse', false);
            const b2 = gdnForward(ctxJ, TINY, w, cj2, [x2], 'decode', 'sparse', false);
            expect(bits(a2.out[0]!)).toEqual(bits(b2.out[0]!));
          }
        }
        calls += spy.mock.calls.length;
        bails += spy.mock.results.filter((r) => r.value === 1).length;
      }
      expect(calls).toBeGreaterThan(200); // the kernel ran
      expect(bails).toBeGreaterThan(5); // and left the heads with NaN outputs to JavaScript
      expect(callbacks).toBeGreaterThan(1000); // with gates off silu32's saturated ends
      expect(fullCalls).toBeGreaterThan(10); // and after projections recomputed in full
    });
  }
});
