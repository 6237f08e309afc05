/**
 * exec/residual-track.ts: the incremental residual adds and RMSNorms of decode steps, bit for bit
 * against the plain loops (norms.ts rmsNorm1p through the generic context, and fl(a + b)), on
 * streams of vectors that change a few entries per step: an anchor that absorbs every later square
 * (the chip's case: a short walk), sums that do not stick (the walk runs on), a changed anchor (r
 * changes), ±0, NaN and infinities, f32 and bf16. And whole executors: a random model whose
 * every matrix is sparse, so each decode step runs the tracked stream, the tracked GDN step (β and
 * g only for the heads whose b / a rows changed) and the incremental SwiGLU, against the dense
 * path, bit for bit.
 */
import { describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { makeNumericContext } from '../src/exec/numeric.ts';
import { rmsNorm1p } from '../src/exec/norms.ts';
import { addTracked, NormSite, ResidualTrack, rowEntriesOf, SourceSeen, TrackedVector } from '../src/exec/residual-track.ts';
import { ExecPlans } from '../src/exec/plans.ts';
import { Executor, argmax } from '../src/exec/executor.ts';
import { decodeLockstep } from './helpers/lockstep.ts';
import { sparseRandomModel } from './helpers/random-models.ts';
import type { LayerDetail, PhaseTimes } from '../src/exec/profile.ts';
import { densifyMatrix, sparsifyMatrix } from '../src/model/random-weights.ts';
import type { Matrix, ModelWeights } from '../src/model/weights.ts';
import { gdnConvSnapshot } from '../src/exec/gdn-tracked.ts';
import { wasmHeapOf } from '../src/exec/delta.ts';
import type { WasmHeap } from '../src/exec/wasm-heap.ts';

const f32 = Math.fround;
const bits = (v: Float32Array): Uint32Array => new Uint32Array(v.buffer, v.byteOffset, v.length);

/** Indices whose bits differ between two vectors. */
function diff(a: Float32Array, b: Float32Array): number[] {
  const x = bits(a), y = bits(b);
  const out: number[] = [];
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) out.push(i);
  return out;
}

const special = [0, -0, Number.NaN, Infinity, -Infinity, 1e-30, -3.5, 2 ** -140];

/** A random stream of vectors: step 0 random, later steps change a few entries. */
function streamArb(H: number, anchor: boolean) {
  const val = fc.oneof(
    { weight: 8, arbitrary: fc.float({ min: -4, max: 4, noNaN: true }) },
    { weight: 1, arbitrary: fc.constantFrom(...special) },
  );
  const edit = fc.record({ i: fc.integer({ min: 0, max: H - 1 }), v: val });
  return fc.record({
    first: fc.array(fc.float({ min: -4, max: 4, noNaN: true }), { minLength: H, maxLength: H }),
    steps: fc.array(fc.array(edit, { maxLength: 6 }), { minLength: 1, maxLength: 12 }),
  }).map(({ first, steps }) => {
    const xs: Float32Array[] = [Float32Array.from(first, f32)];
    if (anchor) xs[0][0] = 2 ** 20;
    for (const st of steps) {
      const x = xs[xs.length - 1].slice();
      for (const e of st) if (!(anchor && e.i === 0)) x[e.i] = e.v;
      xs.push(x);
    }
    return xs;
  });
}

/** The context's wasm memory, with spies counting its list loops' calls by result. */
function heapOf(ctx: ReturnType<typeof makeNumericContext>): { heap: WasmHeap; calls: Map<string, number> } {
  const heap = wasmHeapOf(ctx);
  if (heap === null) throw new Error('no wasm memory');
  const calls = new Map<string, number>();
  const count = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);
  const norm = heap.normListedAt.bind(heap);
  vi.spyOn(heap, 'normListedAt').mockImplementation((...a) => { const m = norm(...a); count(m < 0 ? 'norm refused' : 'norm'); return m; });
  const add = heap.addListsAt.bind(heap);
  vi.spyOn(heap, 'addListsAt').mockImplementation((...a) => { const st = add(...a); count(st === 0 ? 'add' : 'add stopped'); return st; });
  return { heap, calls };
}

describe('NormSite', () => {
  for (const [profile, inHeap] of [['f32', false], ['bf16', false], ['f32', true], ['bf16', true]] as const) {
    for (const anchor of [true, false]) {
      it(`equals rmsNorm1p bit for bit on a changing stream (${profile}, ${anchor ? 'anchored' : 'no anchor'}${inHeap ? ', in wasm memory' : ''})`, () => {
        const ctx = makeNumericContext({ profile, order: { kind: 'sequential' } });
        const wasm = inHeap ? heapOf(ctx) : null;
        const H = 23;
        fc.assert(fc.property(streamArb(H, anchor), fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: H, maxLength: H }), (xs, wl) => {
          const w = Float32Array.from(wl, f32);
          const site = new NormSite(ctx.plans, w, 1e-6, wasm?.heap ?? null);
          const x = new TrackedVector(H, wasm?.heap ?? null);
          let prev: Float32Array | null = null;
          let prevOut: Float32Array | null = null;
          let prevStamp = -1;
          for (let s = 0; s < xs.length; s++) {
            const fresh = s === 0;
            const old = x.v.slice();
            x.v.set(xs[s]);
            const d = diff(old, x.v);
            x.changed.set(d);
            x.n = d.length;
            x.all = fresh;
            site.run(ctx, x, fresh);
            const want = new Float32Array(H);
            rmsNorm1p(ctx, Array.from(xs[s]), 0, H, w, 1e-6, want, 0); // generic path (plain array)
            expect(Array.from(bits(site.out.v))).toEqual(Array.from(bits(want)));
            if (!fresh && prevOut !== null) {
              // the change list covers every changed output
              const listed = new Set(Array.from(site.out.changed.subarray(0, site.out.n)));
              if (!site.out.all) for (const i of diff(prevOut, want)) expect(listed.has(i)).toBe(true);
              const ch = site.changes();
              if (ch !== null) expect(ch.prevStamp).toBe(prevStamp);
            }
            prev = xs[s];
            prevOut = want;
            prevStamp = site.stamp;
          }
          return prev !== null;
        }), { numRuns: 150 });
        // the wasm list loop ran (anchored streams), and refused some steps (a square not absorbed,
        // a non-finite entry) that the JavaScript path then took
        if (wasm !== null) {
          if (anchor) expect(wasm.calls.get('norm') ?? 0).toBeGreaterThan(100);
          expect(wasm.calls.get('norm refused') ?? 0).toBeGreaterThan(10);
        }
      });
    }
  }

  it('a weight vector with an infinite entry keeps the site off the wasm list loop (its outputs could be ∞·0)', () => {
    const ctx = makeNumericContext({ profile: 'f32', order: { kind: 'sequential' } });
    const { heap, calls } = heapOf(ctx);
    const H = 8;
    const run = (w: Float32Array): void => {
      const site = new NormSite(ctx.plans, w, 1e-6, heap);
      const x = new TrackedVector(H, heap);
      x.v.set([2 ** 20, 1, 2, 3, 4, 5, 6, 7]); // the anchor absorbs every other square
      site.run(ctx, x, true);
      x.v[3] = 0.5;
      x.changed[0] = 3; x.n = 1; x.all = false;
      site.run(ctx, x, false);
    };
    run(new Float32Array(H));
    expect(calls.get('norm')).toBe(1);
    const w = new Float32Array(H);
    w[5] = Infinity;
    run(w);
    expect(calls.get('norm')).toBe(1);
  });

  it('an anchor that absorbs every later square: one fold step per changed entry', () => {
    const ctx = makeNumericContext({ profile: 'f32', order: { kind: 'sequential' } });
    const H = 1000;
    const w = new Float32Array(H);
    const site = new NormSite(ctx.plans, w, 1e-6);
    const x = new TrackedVector(H);
    x.v[0] = 2 ** 24;
    for (let i = 1; i < H; i++) x.v[i] = (i % 7) - 3;
    site.run(ctx, x, true);
    expect(site.walked).toBe(H);
    x.v[500] = 2; x.v[900] = -1; x.v[10] = 0.5;
    x.changed.set([900, 10, 500]);
    x.n = 3;
    x.all = false;
    site.run(ctx, x, false);
    expect(site.walked).toBe(3);
    const want = new Float32Array(H);
    rmsNorm1p(ctx, Array.from(x.v), 0, H, w, 1e-6, want, 0);
    expect(Array.from(bits(site.out.v))).toEqual(Array.from(bits(want)));
    expect(Array.from(site.out.changed.subarray(0, site.out.n)).sort((a, b) => a - b)).toEqual([10, 500, 900]);
  });

  it('a sum that does not stick: the fold walks on past the changed entry until it meets the kept prefix', () => {
    const ctx = makeNumericContext({ profile: 'f32', order: { kind: 'sequential' } });
    const H = 8;
    const site = new NormSite(ctx.plans, new Float32Array(H), 1e-6);
    const x = new TrackedVector(H);
    x.v.set([1, 2, 3, 4, 5, 6, 7, 8]);
    site.run(ctx, x, true);
    x.v[2] = 1;
    x.changed[0] = 2; x.n = 1; x.all = false;
    site.run(ctx, x, false);
    expect(site.walked).toBe(6); // every later prefix changed
    const want = new Float32Array(H);
    rmsNorm1p(ctx, Array.from(x.v), 0, H, new Float32Array(H), 1e-6, want, 0);
    expect(Array.from(bits(site.out.v))).toEqual(Array.from(bits(want)));
    expect(site.out.n).toBe(H); // r changed: every output changed
  });
});

describe('addTracked', () => {
  it('equals fl(a + b) and lists exactly the changed entries (f32 and bf16; each in wasm memory too)', () => {
    for (const [profile, inHeap] of [['f32', false], ['bf16', false], ['f32', true], ['bf16', true]] as const) {
      const ctx = makeNumericContext({ profile, order: { kind: 'sequential' } });
      const wasm = inHeap ? heapOf(ctx) : null;
      const heap = wasm?.heap ?? null;
      const H = 17;
      fc.assert(fc.property(streamArb(H, false), streamArb(H, false), fc.boolean(), fc.integer({ min: 0, max: 3 }), (as, bs, unknownB, repeats) => {
        const n = Math.min(as.length, bs.length);
        const a = new TrackedVector(H, heap);
        const out = new TrackedVector(H, heap);
        // b and its change list where the wasm loop reads them
        const b = heap?.take(Float32Array, H) ?? new Float32Array(H);
        const bRows = heap?.take(Int32Array, H + 3) ?? new Int32Array(H + 3);
        for (let s = 0; s < n; s++) {
          const old = a.v.slice();
          a.v.set(as[s]);
          const d = diff(old, a.v);
          a.changed.set(d); a.n = d.length; a.all = s === 0;
          // b's list may repeat indices of a's and its own
          const bd = s === 0 ? [] : [...diff(bs[s - 1], bs[s]), ...d.slice(0, repeats)];
          if (bd.length > 0) bd.push(bd[0]);
          bRows.set(bd);
          b.set(bs[s]);
          const before = out.v.slice();
          addTracked(ctx, a, b, unknownB ? null : { rows: bRows, n: bd.length }, out, s === 0);
          const want = Float32Array.from(as[s], (v, i) => ctx.act(f32(v + bs[s][i])));
          expect(Array.from(bits(out.v))).toEqual(Array.from(bits(want)));
          if (s > 0) {
            expect(out.all).toBe(false);
            expect(Array.from(out.changed.subarray(0, out.n)).sort((p, q) => p - q)).toEqual(diff(before, want));
          }
        }
      }), { numRuns: 100, seed: 5 });
      // the wasm loop ran, and handed NaN sums (NaN and ∞ entries in the streams) to JavaScript
      if (wasm !== null) {
        expect(wasm.calls.get('add') ?? 0).toBeGreaterThan(100);
        expect(wasm.calls.get('add stopped') ?? 0).toBeGreaterThan(5);
      }
    }
  });
});

describe('the residual list loops in wasm (wasm-residual-kernels.ts)', () => {
  it('addLists stops before a NaN sum, saying where, and normListed refuses without writing', () => {
    const ctx = makeNumericContext({ profile: 'f32', order: { kind: 'sequential' } });
    const heap = wasmHeapOf(ctx) as WasmHeap;
    const f32s = (v: number[]): Float32Array => { const a = heap.take(Float32Array, v.length) as Float32Array; a.set(v); return a; };
    const i32s = (v: number[]): Int32Array => { const a = heap.take(Int32Array, v.length) as Int32Array; a.set(v); return a; };
    const x = f32s([1, 2, Infinity, 4, 5]);
    const b = f32s([0.5, 0, -Infinity, 1, 0]);
    const o = f32s([1.5, 9, 7, 9, 9]);
    const changed = i32s([0, 0, 0, 0, 0]);
    // list a: 0 (unchanged), 1, 3; list b: 4, then 2 (∞ + −∞)
    const st = heap.addLists(x, b, o, i32s([0, 1, 3]), 3, i32s([4, 2]), 2, changed);
    expect(st).toBe(1);
    expect(heap.appended).toBe(3);
    expect(Array.from(changed.subarray(0, 3))).toEqual([1, 3, 4]);
    expect(Array.from(o)).toEqual([1.5, 2, 7, 5, 5]); // o_2 not stored
    // normListed: a square not absorbed, then a non-finite entry that is: −1, nothing written
    const P = f32s([2 ** 40, 2 ** 40, 2 ** 40, Infinity]);
    const w1 = f32s([1, 1, 1, 1]);
    const ov = f32s([3, 3, 3, 3]);
    const nx = f32s([2 ** 20, 2 ** 19, 1, -Infinity]);
    const list = i32s([2, 1]);
    const before = Array.from(ov);
    expect(heap.normListed(nx, P, list, 2, w1, ov, changed, 2 ** -20)).toBe(-1);
    list.set([3, 2]);
    expect(heap.normListed(nx, P, list, 2, w1, ov, changed, 2 ** -20)).toBe(-1);
    expect(Array.from(ov)).toEqual(before);
    list.set([2]);
    expect(heap.normListed(nx, P, list, 1, w1, ov, changed, 2 ** -20)).toBe(1);
    expect(ov[2]).toBe(2 ** -20);
  });

  it('an infinite entry absorbed in an infinite sum of squares is left to JavaScript (its output is ∞·0)', () => {
    const ctx = makeNumericContext({ profile: 'f32', order: { kind: 'sequential' } });
    const { heap, calls } = heapOf(ctx);
    const H = 6;
    const w = new Float32Array(H);
    const site = new NormSite(ctx.plans, w, 1e-6, heap);
    const x = new TrackedVector(H, heap);
    x.v.set([2 ** 20, 1, Infinity, 3, 4, 5]);
    site.run(ctx, x, true);
    for (const [i, v] of [[2, -Infinity], [4, 0.5]] as const) {
      x.v[i] = v;
      x.changed[0] = i; x.n = 1; x.all = false;
      site.run(ctx, x, false);
      const want = new Float32Array(H);
      rmsNorm1p(ctx, Array.from(x.v), 0, H, w, 1e-6, want, 0);
      expect(Array.from(bits(site.out.v))).toEqual(Array.from(bits(want)));
    }
    // −∞ at 2 refused; 0.5 at 4 absorbed in the infinite sum (r = 0), taken in wasm
    expect([calls.get('norm refused'), calls.get('norm')]).toEqual([1, 1]);
  });
});

describe('ResidualTrack embedding by entries', () => {
  it('setEmbeddingEntries gives setEmbedding\'s x0 and change list, bit for bit (±0, NaN; f32 and bf16)', () => {
    const H = 13;
    // sparse rows: most entries +0, some −0, a few values (the embedding rows of a chip's alphabet)
    const entryArb = fc.oneof(
      { weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(-0) },
      { weight: 2, arbitrary: fc.float({ noDefaultInfinity: false }) },
    );
    const rowArb = fc.array(entryArb, { minLength: H, maxLength: H }).map((r) => Float32Array.from(r));
    for (const profile of ['f32', 'bf16'] as const) {
      const ctx = makeNumericContext({ profile, order: { kind: 'sequential' } });
      fc.assert(fc.property(fc.array(rowArb, { minLength: 2, maxLength: 8 }), fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }), (rows, fresh) => {
        const dense = new ResidualTrack(new ExecPlans(), H, [], new Float32Array(H), 1e-6);
        const byEntries = new ResidualTrack(new ExecPlans(), H, [], new Float32Array(H), 1e-6);
        for (let s = 0; s < rows.length; s++) {
          const f = s === 0 || fresh[s]!;
          const entries = rowEntriesOf(rows[s]!);
          // every index not listed holds +0 (bits), and the listed ones hold the row's bits
          const listed = new Set(entries.idx);
          for (let i = 0; i < H; i++) {
            if (!listed.has(i)) expect(bits(rows[s]!)[i]).toBe(0);
          }
          dense.setEmbedding(ctx, rows[s]!, f);
          if (f || !byEntries.setEmbeddingEntries(ctx, entries)) byEntries.setEmbedding(ctx, rows[s]!, f, entries);
          expect(Array.from(bits(byEntries.x0.v))).toEqual(Array.from(bits(dense.x0.v)));
          expect(byEntries.x0.all).toBe(dense.x0.all);
          expect(Array.from(byEntries.x0.changed.subarray(0, byEntries.x0.n))).toEqual(Array.from(dense.x0.changed.subarray(0, dense.x0.n)));
        }
      }), { numRuns: 200 });
    }
  });

  it('setEmbeddingEntries refuses after a step that gave no entries', () => {
    const ctx = makeNumericContext({ profile: 'f32', order: { kind: 'sequential' } });
    const tr = new ResidualTrack(new ExecPlans(), 4, [], new Float32Array(4), 1e-6);
    const row = Float32Array.from([0, 2, 0, 0]);
    tr.setEmbedding(ctx, row, true);
    const x0 = Array.from(bits(tr.x0.v));
    expect(tr.setEmbeddingEntries(ctx, rowEntriesOf(Float32Array.from([1, 0, 0, 0])))).toBe(false);
    expect(Array.from(bits(tr.x0.v))).toEqual(x0);
  });
});

describe('SourceSeen', () => {
  it('tells rows after one version, none for the same version, unknown otherwise', () => {
    const rows = Int32Array.from([3, 5]);
    const src = { version: 4, full: false, rows, nRows: 2 };
    const seen = new SourceSeen();
    expect(seen.advance(src)).toBeNull(); // first sight
    expect(seen.advance(src)?.n).toBe(0); // same version
    src.version = 5;
    expect(seen.advance(src)?.n).toBe(2);
    src.version = 7;
    expect(seen.advance(src)).toBeNull(); // two versions passed
    src.version = 8; src.full = true;
    expect(seen.advance(src)).toBeNull(); // a full recompute
    src.version = 9; src.full = false;
    expect(seen.advance({ ...src })).toBeNull(); // another source
    expect(seen.advance(null)).toBeNull();
  });
});


describe('tracked decode on whole executors', () => {
  const bitsOf = (a: Float32Array): number[] =>
    Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));

  // silu 'div' is the default; 'mul' runs the same fast paths (the tracked GDN step included)
  // (embedRowsKept 1: the kept embedding rows start over at every new id)
  for (const [profile, siluForm, kept] of [['f32', 'div', 4096], ['f32', 'mul', 4096], ['bf16', 'div', 4096], ['f32', 'div', 1]] as const) {
    it(`sparse random model: logits, residuals and GDN states equal the dense path (${profile}, silu ${siluForm}, ${kept} embedding rows kept)`, () => {
      const w = sparseRandomModel(5);
      const s = new Executor(w, { path: 'sparse', profile, siluForm, tuning: { embedRowsKept: kept } });
      const d = new Executor(w, { path: 'dense', profile, siluForm });
      const times: PhaseTimes = {};
      s.setPhaseTimes(times);
      const rec = (ex: Executor): number[][] => {
        const out: number[][] = [];
        ex.addHook((ev) => {
          out.push([ev.layer, ev.position], bitsOf(ev.residualIn), bitsOf(ev.residualMid), bitsOf(ev.residualOut));
          for (const a of ev.gdnState ?? []) out.push(bitsOf(a));
        });
        return out;
      };
      const rs = rec(s);
      const rd = rec(d);
      // a few greedy ids (little changes), others spread over the vocabulary
      decodeLockstep(s, d, [3, 1], 30, (i, greedy) => (i % 4 === 3 ? greedy : (i * 53 + 7) % w.config.vocabSize));
      expect(rs).toEqual(rd);
      expect(s.stats.dense).toBe(0);
      if (profile === 'f32') expect(times['gdn.tracked'] ?? 0).toBeGreaterThan(0); // the tracked GDN step ran
      // the per-layer totals (bench/chip-speed.ts prints them): every layer's two halves, and no other layer
      const layerKeys = Object.keys(times).filter((k) => k.startsWith('layer ')).sort();
      expect(layerKeys).toEqual(Array.from({ length: w.config.numLayers }, (_, l) => [`layer ${l} ffn`, `layer ${l} mixer`]).flat().sort());
      for (const k of layerKeys) expect(times[k]).toBeGreaterThan(0);
      expect(s.stats.delta).toBeGreaterThan(0);
    });
  }
});

describe('per-layer phase detail (Executor.setPhaseTimes with a LayerDetail)', () => {
  it('each layer half\'s work counters add up to the executor\'s totals over the same steps, the mixer\'s conv and head work in mixer halves', () => {
    const w = sparseRandomModel(5);
    const s = new Executor(w, { path: 'sparse' });
    s.prefill([3, 1]);
    const detail: LayerDetail = { tokenMs: [], work: [] };
    s.setPhaseTimes({}, detail);
    const st = s.stats;
    const before = [st.deltaEntries, st.deltaRows, st.convChannels, st.gdnHeadSteps, st.gdnHeadsBetaZero, st.ffnMemoHits];
    let id = 1;
    for (let i = 0; i < 12; i++) id = s.decodeArgmax(i % 3 === 0 ? id : (i * 53 + 7) % w.config.vocabSize);
    const total = [st.deltaEntries, st.deltaRows, st.convChannels, st.gdnHeadSteps, st.gdnHeadsBetaZero, st.ffnMemoHits].map((v, k) => v - before[k]!);
    const work = detail.work!;
    expect(work.length).toBe(2 * w.config.numLayers);
    const sum = (f: (h: (typeof work)[number]) => number, half?: 0 | 1) => work.filter((_, i) => half === undefined || i % 2 === half).reduce((a, h) => a + f(h), 0);
    expect([sum((h) => h.entries), sum((h) => h.rows), sum((h) => h.convChannels), sum((h) => h.headSteps), sum((h) => h.headsBetaZero), sum((h) => h.ffnMemoHits)]).toEqual(total);
    expect(total[0]).toBeGreaterThan(0);
    expect(total[2]).toBeGreaterThan(0);
    // the FFN halves walk entries; conv channels and value-head steps are the mixers' alone
    expect(sum((h) => h.entries, 1)).toBeGreaterThan(0);
    expect(sum((h) => h.convChannels, 1) + sum((h) => h.headSteps, 1)).toBe(0);
  });

  it('each layer\'s phases under its prefix, summing to at most the phase; one step time per half per tracked step', () => {
    const w = sparseRandomModel(5);
    const s = new Executor(w, { path: 'sparse' });
    const times: PhaseTimes = {};
    const detail: LayerDetail = { tokenMs: [] };
    s.prefill([3, 1]);
    s.setPhaseTimes(times, detail);
    let id = 1;
    const steps = 12;
    for (let i = 0; i < steps; i++) id = s.decodeArgmax(i % 3 === 0 ? id : (i * 53 + 7) % w.config.vocabSize);
    const L = w.config.numLayers;
    expect(detail.tokenMs.length).toBe(2 * L);
    for (const list of detail.tokenMs) {
      expect(list.length).toBe(steps);
      for (const ms of list) expect(ms).toBeGreaterThanOrEqual(0);
    }
    const prefixed = Object.keys(times).filter((k) => /^L\d+ /.test(k));
    const byPhase = new Map<string, number>();
    for (const k of prefixed) {
      const [, layer, phase] = /^L(\d+) (.+)$/.exec(k)!;
      expect(Number(layer)).toBeLessThan(L);
      byPhase.set(phase!, (byPhase.get(phase!) ?? 0) + times[k]!);
    }
    // the layers' phases, each also in the unprefixed total; the steps' own phases (embedding,
    // final norm, LM head) under no layer
    expect([...byPhase.keys()]).toEqual(expect.arrayContaining(['norm', 'residual', 'ffn.gateUp']));
    for (const [phase, sum] of byPhase) expect(sum).toBeLessThanOrEqual(times[phase]! * (1 + 1e-9));
    for (const own of ['embed', 'finalNorm', 'lmHead']) expect(byPhase.has(own)).toBe(false);
    // without a detail, no prefixed keys are added
    const plain: PhaseTimes = {};
    s.setPhaseTimes(plain);
    s.decodeArgmax(id);
    expect(Object.keys(plain).filter((k) => /^L\d+ /.test(k))).toEqual([]);
    expect(Object.keys(plain).length).toBeGreaterThan(3);
  });
});

describe('Executor.wasmMemoryUse', () => {
  it('what the context\'s wasm memory holds: more once decode steps carved their arrays, within its size; null without one', () => {
    const w = sparseRandomModel(5);
    const s = new Executor(w, { path: 'sparse' });
    const before = s.wasmMemoryUse()!;
    expect(before.sizeBytes).toBeGreaterThan(0);
    s.prefill([3, 1]);
    let id = 1;
    for (let i = 0; i < 4; i++) id = s.decodeArgmax((id + 7 * i) % w.config.vocabSize);
    const after = s.wasmMemoryUse()!;
    expect(after.sizeBytes).toBe(before.sizeBytes);
    expect(after.carvedBytes).toBeGreaterThan(before.carvedBytes);
    expect(after.carvedBytes).toBeLessThanOrEqual(after.sizeBytes);
    expect(new Executor(w, { path: 'sparse', tuning: { wasmHeapMiB: 0 } }).wasmMemoryUse()).toBeNull();
    // bf16: a memory too (the residual stream, the matmuls' states and the GDN layers' arrays are carved from it)
    expect(new Executor(w, { path: 'sparse', profile: 'bf16' }).wasmMemoryUse()!.carvedBytes).toBeGreaterThan(0);
  });
});

describe('first tracked step after a prefill', () => {
  const bitsOf = (a: Float32Array): number[] =>
    Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));
  it('first tracked step after a prefill: a conv channel whose qkv row was emptied since is still shifted', () => {
    // The first tracked step walks only the channels of non-empty qkv rows when every conv step
    // since the cache was made used the same stacked in_proj (the others held +0 inputs only). Here
    // the storage changes between the prefill and the first decode step: rows that fed the
    // prefill's conv states become empty, and those states must still shift in their +0 inputs.
    const w = sparseRandomModel(14);
    const cfg = w.config;
    const K = cfg.linearConvKernelDim;
    const li = cfg.layerTypes.indexOf('linear_attention'); // (the layer whose steps meet delta.ts's precondition)
    const m = w.layers[li].mixer;
    if (m.kind !== 'linear_attention') throw new Error('no GDN layer');
    const s = new Executor(w, { path: 'sparse', profile: 'f32' });
    const d = new Executor(w, { path: 'dense', profile: 'f32' });
    const cacheOf = (ex: Executor) => ex.gdnCacheOf(li);
    const a = s.prefill([5, 10])[0];
    expect(bitsOf(a)).toEqual(bitsOf(d.prefill([5, 10])[0]));
    // empty every qkv row whose channel now holds a non-zero tap (a new Matrix: a new stack)
    const conv = cacheOf(s).conv;
    const q = densifyMatrix(m.inProjQkv);
    let emptied = 0;
    for (let c = 0; c < q.rows; c++) {
      let live = false;
      for (let j = 0; j < K; j++) if (conv[c * K + j] !== 0) live = true;
      if (live) { q.dense!.fill(0, c * q.cols, (c + 1) * q.cols); emptied++; }
    }
    expect(emptied).toBeGreaterThan(0);
    m.inProjQkv = { rows: q.rows, cols: q.cols, csr: sparsifyMatrix({ rows: q.rows, cols: q.cols, dense: q.dense }).csr };
    let t = argmax(a);
    for (let i = 0; i < 6; i++) {
      const ls = s.decode(t);
      expect(bitsOf(ls)).toEqual(bitsOf(d.decode(t)));
      expect(cacheOf(s).track).toBeDefined(); // this layer's step was a tracked one
      expect(bitsOf(gdnConvSnapshot(cacheOf(s), K))).toEqual(bitsOf(cacheOf(d).conv));
      t = argmax(ls);
    }
  });

});

describe('out_proj outside its delta form', () => {
  // One dense row makes out_proj's delta form never apply (a row must leave an unstored column
  // with a clear-sign input, delta.ts), so the tracked step runs linear() into its buffer, and
  // keeps that output while no normed entry changes and the matrix keeps its storage.
  const bitsOf = (a: Float32Array): number[] =>
    Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));
  /** sparseRandomModel with the first GDN layer's rows of `emptied` (q, v, z) empty and out_proj row 0 dense. */
  function model(seed: number, emptied: ('q' | 'v' | 'z')[]): { w: ModelWeights; li: number } {
    const w = sparseRandomModel(seed);
    const cfg = w.config;
    const li = cfg.layerTypes.indexOf('linear_attention');
    const m = w.layers[li].mixer;
    if (m.kind !== 'linear_attention') throw new Error('no GDN layer');
    const keyDim = cfg.linearNumKeyHeads * cfg.linearKeyHeadDim;
    const valueDim = cfg.linearNumValueHeads * cfg.linearValueHeadDim;
    const empty = (mat: Matrix, from: number, to: number): Matrix => {
      const d = densifyMatrix(mat);
      d.dense!.fill(0, from * d.cols, to * d.cols);
      // (densifyMatrix keeps the CSR it came with: derive a new one from the edited dense form)
      return { rows: d.rows, cols: d.cols, csr: sparsifyMatrix({ rows: d.rows, cols: d.cols, dense: d.dense }).csr };
    };
    if (emptied.includes('q')) m.inProjQkv = empty(m.inProjQkv, 0, keyDim);
    if (emptied.includes('v')) m.inProjQkv = empty(m.inProjQkv, 2 * keyDim, 2 * keyDim + valueDim);
    if (emptied.includes('z')) m.inProjZ = empty(m.inProjZ, 0, valueDim);
    const o = densifyMatrix(m.outProj);
    for (let c = 0; c < o.cols; c++) o.dense![c] = 0.25 + c / 64;
    m.outProj = { rows: o.rows, cols: o.cols, csr: sparsifyMatrix({ rows: o.rows, cols: o.cols, dense: o.dense }).csr };
    return { w, li };
  }

  it('constant normed (q, v, z rows empty): the output is kept, and recomputed when the matrix gets new storage', () => {
    const { w, li } = model(21, ['q', 'v', 'z']);
    const m = w.layers[li].mixer;
    if (m.kind !== 'linear_attention') throw new Error('no GDN layer');
    const s = new Executor(w, { path: 'sparse', profile: 'f32' });
    const d = new Executor(w, { path: 'dense', profile: 'f32' });
    const cacheOf = (ex: Executor) => ex.gdnCacheOf(li);
    let t = argmax(s.prefill([5, 10])[0]);
    expect(t).toBe(argmax(d.prefill([5, 10])[0]));
    for (let i = 0; i < 16; i++) {
      if (i === 8) {
        // new storage, new values (the same Matrix object): a kept output would be stale
        const o = densifyMatrix(m.outProj);
        for (let k = 0; k < o.dense!.length; k++) o.dense![k] *= -1.5;
        m.outProj.csr = sparsifyMatrix({ rows: o.rows, cols: o.cols, dense: o.dense }).csr;
      }
      const kept = s.stats.outProjKept;
      const id = (i * 29 + 3) % w.config.vocabSize;
      const ls = s.decode(id);
      expect(bitsOf(ls)).toEqual(bitsOf(d.decode(id)));
      expect(cacheOf(s).track).toBeDefined(); // the tracked step ran
      // kept at every step but the first tracked one and the one after the storage change
      expect(s.stats.outProjKept - kept).toBe(i === 0 || i === 8 ? 0 : 1);
      t = argmax(ls);
    }
  });

  it('normed changing now and then (v rows empty): kept only while it does not, equal to the dense path', () => {
    // S stays +0, so every core entry is ±0 and normed = ±0 with the signs of z: they change with
    // the token and stay while it repeats
    const { w, li } = model(22, ['v']);
    const s = new Executor(w, { path: 'sparse', profile: 'f32' });
    const d = new Executor(w, { path: 'dense', profile: 'f32' });
    const cacheOf = (ex: Executor) => ex.gdnCacheOf(li);
    let seen = 0;
    let kept = 0;
    let computed = 0;
    decodeLockstep(s, d, [5, 10], 40, (i) => {
      if (i > 1) {
        // the previous step (not the first): kept, or computed (its normed changed)
        if (s.stats.outProjKept > seen) kept++; else computed++;
      }
      seen = s.stats.outProjKept;
      if (i > 0) expect(cacheOf(s).track).toBeDefined();
      // each id six times in a row: the conv taps settle and normed stops changing, then a new id
      return (Math.floor(i / 6) * 37 + 11) % w.config.vocabSize;
    });
    expect(kept).toBeGreaterThan(0);
    expect(computed).toBeGreaterThan(0);
  });
});

describe('single-tap conv shortcut', () => {
  it('y = fl(w·x) only with finite older taps: an infinite one still gives the fold\'s NaN (sparse = dense)', () => {
    const w = sparseRandomModel(9);
    const cfg = w.config;
    const K = cfg.linearConvKernelDim;
    const li = cfg.layerTypes.indexOf('linear_attention');
    const m = w.layers[li].mixer;
    if (m.kind !== 'linear_attention') throw new Error('no GDN layer');
    const c = 2 * cfg.linearNumKeyHeads * cfg.linearKeyHeadDim; // value channel 0
    for (let j = 0; j < K - 1; j++) m.conv1d[c * K + j] = 0; // single tap
    m.conv1d[c * K + K - 1] = 1;
    // in_proj_qkv row c: ±inf when |x_0| is above ~1.13, finite otherwise
    const q = densifyMatrix(m.inProjQkv);
    q.dense!.fill(0, c * q.cols, (c + 1) * q.cols);
    q.dense![c * q.cols] = 3e38;
    q.dense![c * q.cols + 1] = 0.5;
    // (densifyMatrix keeps the CSR it came with: re-derive it from the edited dense form)
    Object.assign(m, { inProjQkv: { rows: q.rows, cols: q.cols, csr: sparsifyMatrix({ rows: q.rows, cols: q.cols, dense: q.dense }).csr } });
    // residual dim 0 is 0 except for token 5, whose big entry makes the row overflow; the layer is
    // the first, so the next tokens' inputs stay finite while the inf sits in the older taps
    expect(li).toBe(0);
    const e = densifyMatrix(w.embedTokens);
    for (let r = 0; r < e.rows; r++) e.dense![r * e.cols] = 0;
    e.dense![5 * e.cols] = 30;
    const wm = { ...w, embedTokens: { rows: e.rows, cols: e.cols, csr: sparsifyMatrix({ rows: e.rows, cols: e.cols, dense: e.dense }).csr } };
    const s = new Executor(wm, { path: 'sparse', profile: 'f32' });
    const d = new Executor(wm, { path: 'dense', profile: 'f32' });
    const bitsOf = (a: Float32Array): number[] =>
      Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));
    const cacheOf = (ex: Executor) => ex.gdnCacheOf(li);
    s.prefill([3, 1]);
    d.prefill([3, 1]);
    let seen = 0;
    for (let i = 0; i < 60; i++) {
      const id = i % 6 === 0 ? 5 : (i * 61 + 11) % cfg.vocabSize;
      expect(bitsOf(s.decode(id))).toEqual(bitsOf(d.decode(id)));
      const conv = gdnConvSnapshot(cacheOf(s), K);
      expect(bitsOf(conv)).toEqual(bitsOf(cacheOf(d).conv));
      // the channel's output itself (a NaN state would hide it from the logits)
      expect(bitsOf(cacheOf(s).buffers!.conved)).toEqual(bitsOf(cacheOf(d).buffers!.conved));
      let olderInf = false;
      for (let j = 0; j < K - 1; j++) if (!Number.isFinite(conv[c * K + j])) olderInf = true;
      const newest = conv[c * K + K - 1];
      if (olderInf && Number.isFinite(newest) && newest !== 0) seen++;
    }
    expect(seen).toBeGreaterThan(0); // the case the shortcut must step aside for did occur
  });
});
