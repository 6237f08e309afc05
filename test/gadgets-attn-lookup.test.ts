/**
 * The hard-attention lookup gadget (src/gadgets/attn-lookup.ts) through the real layer math of
 * the reference executor: one full_attention layer holding the lookup's heads (FFN empty), an
 * embedding that maps token t to the fields of position t (BOS at position 0), random streams
 * (fast-check) compared bit for bit with an independent reference of the IR lookup semantics
 * (latest = largest stamp among published positions s ≤ t whose key equals the query; defaults
 * and hit = 0 otherwise), in f32 and bf16 (the executor's bf16 profile rounds scores to bf16
 * before the softmax, as transformers' eager attention does), sequential / shuffled / FMA orders,
 * on tiny (D = 32, R = 8) and a copy with D = 256, R = 64. Negative tests: a margin below 104,
 * content in rotary dims, uncentred scores under eager-bf16 rounding, same-stamp ties.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Executor } from '../src/exec/executor.ts';
import type { ExecOptions } from '../src/exec/types.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { ModelConfig } from '../src/model/config.ts';
import type { AttnKvHeadSpec, Form } from '../src/lower/forms.ts';
import { buildHarness, runHarness, type Harness } from './helpers/layer-harness.ts';
import { ChipcError } from '../src/util/errors.ts';
import {
  attnDimsOf, fillSquares, lowerLookupToAttention, normWeightFor,
  type LookupInVDims, type LookupLowering, type LookupOptions, type LookupOutVDims,
} from '../src/gadgets/attn-lookup.ts';
import { rng } from './helpers/numerics-ctx.ts';
import { bitDiff } from './helpers/assert.ts';

const tiny = resolveTarget('tiny').config;
const wide: ModelConfig = { ...tiny, headDim: 256, partialRotaryFactor: 0.25 };


// ---- a lookup case: vdims ---------------------------------------------------------------------

interface Shape {
  n: number;
  L: number;
  nv: number;
  publish: boolean;
}

interface Dims {
  io: LookupInVDims;
  out: LookupOutVDims;
  numDims: number;
}

function dimsFor(s: Shape): Dims {
  let d = 0;
  const take = (k: number) => Array.from({ length: k }, () => d++);
  const isBos = take(1)[0]!;
  const publish = s.publish ? take(1)[0]! : null;
  const keyBits = take(s.n);
  const queryBits = take(s.n);
  const stampBits = take(s.L);
  const values = take(s.nv);
  const outValues = take(s.nv);
  const hit = take(1)[0]!;
  return { io: { keyBits, queryBits, stampBits, publish, isBos, values }, out: { values: outValues, hit }, numDims: d };
}

interface Pos {
  bos: boolean;
  publish: number;
  key: number;
  query: number;
  stamp: number;
  values: number[];
}

/** Raw vdim values of one position's embedding (inputs only; outputs 0). */
function inputRow(dm: Dims, p: Pos): number[] {
  const row = new Array<number>(dm.numDims).fill(0);
  row[dm.io.isBos] = p.bos ? 1 : 0;
  if (dm.io.publish !== null) row[dm.io.publish] = p.publish;
  dm.io.keyBits.forEach((v, b) => (row[v] = (p.key >> b) & 1));
  dm.io.queryBits.forEach((v, b) => (row[v] = (p.query >> b) & 1));
  dm.io.stampBits.forEach((v, b) => (row[v] = (p.stamp >> b) & 1));
  dm.io.values.forEach((v, x) => (row[v] = p.values[x]!));
  return row;
}

/** Independent reference: the IR lookup semantics, written from docs/dsl.md (not from the gadget). */
function reference(stream: Pos[], defaults: number[], publishAll: boolean): { values: number[]; hit: number }[] {
  return stream.map((_, t) => {
    let best = -1;
    for (let s = 1; s <= t; s++) {
      const p = stream[s]!;
      const published = publishAll || p.publish === 1;
      if (!published || p.key !== stream[t]!.query) continue;
      if (best < 0 || p.stamp > stream[best]!.stamp) best = s;
      else if (p.stamp === stream[best]!.stamp) throw new Error('test generator produced a stamp tie');
    }
    return best < 0 ? { values: defaults.slice(), hit: 0 } : { values: stream[best]!.values.slice(), hit: 1 };
  });
}

interface Built {
  h: Harness;
  low: LookupLowering;
  dm: Dims;
}

function build(target: ModelConfig, s: Shape, stream: Pos[], defaults: number[], opts: LookupOptions = {},
  mutate?: (kv: AttnKvHeadSpec) => void): Built {
  const dm = dimsFor(s);
  const low = lowerLookupToAttention(dm.io, dm.out, attnDimsOf(target), {
    defaults, valueAtBos: stream[0]!.values, ...opts,
  });
  if (mutate) mutate(low.kv);
  const h = buildHarness({
    target: { ...target, vocabSize: stream.length },
    numDims: dm.numDims,
    embedding: (t) => inputRow(dm, stream[t]!).map((value, dim) => ({ dim, value })).filter((e) => e.value !== 0),
    layers: [{
      mixer: { kind: 'full_attention', heads: [low.kv], qNormWeight: low.norms.qNormWeight, kNormWeight: low.norms.kNormWeight },
      ffn: [],
    }],
  });
  return { h, low, dm };
}

/** Number of vdim values (all vdims, all positions) whose bits differ from the reference. */
function mismatches(b: Built, stream: Pos[], defaults: number[], opts: ExecOptions & { prefill?: number }): number {
  const res = runHarness(b.h, stream.map((_, t) => t), opts);
  const ref = reference(stream, defaults, b.dm.io.publish === null);
  let bad = 0;
  stream.forEach((p, t) => {
    const want = inputRow(b.dm, p);
    b.dm.out.values.forEach((v, x) => (want[v!] = ref[t]!.values[x]!));
    want[b.dm.out.hit!] = ref[t]!.hit;
    const got = res.values[t]![0]!.subarray(0, b.dm.numDims);
    bad += bitDiff(Float32Array.from(want), got);
  });
  return bad;
}

/** Softmax rows of the lookup's query head that are not exactly one-hot. */
function nonOneHotRows(b: Built, stream: Pos[], opts: ExecOptions): number {
  const ex = new Executor(b.h.weights, opts);
  let bad = 0;
  ex.addHook((ev) => {
    const row = ev.attentionProbs![0]!;
    let ones = 0;
    let zeros = 0;
    for (const p of row) {
      if (p === 1) ones++;
      else if (p === 0) zeros++;
    }
    if (!(ones === 1 && zeros === row.length - 1)) bad++;
  });
  ex.prefill([0]);
  for (let t = 1; t < stream.length; t++) ex.decode(t);
  return bad;
}

// ---- stream generation ----------------------------------------------------------------------

interface GenOpts {
  len: number;
  seed: number;
  /** Stamps increase with the position among publishers (else a random distinct order). */
  increasing: boolean;
  /** Keys are distinct among published positions (publish-all / no-stamp lookups). */
  uniqueKeys?: boolean;
}

function genStream(s: Shape, g: GenOpts): Pos[] {
  const r = rng(g.seed);
  const ri = (k: number) => Math.floor(r() * k);
  const vals = () => Array.from({ length: s.nv }, () => ri(513) - 256);
  const keySpace = 2 ** s.n;
  const stream: Pos[] = [];
  // BOS: random bits and values everywhere except publish (the gadget must not care)
  // (BOS values and defaults within ±128, so default − BOS value is bf16-exact: see the errors test)
  stream.push({
    bos: true, publish: 0, key: ri(keySpace), query: ri(keySpace), stamp: ri(2 ** s.L),
    values: Array.from({ length: s.nv }, () => ri(257) - 128),
  });
  const stampPool = Array.from({ length: 2 ** s.L }, (_, i) => i);
  for (let i = stampPool.length - 1; i > 0; i--) {
    const j = ri(i + 1);
    [stampPool[i], stampPool[j]] = [stampPool[j]!, stampPool[i]!];
  }
  const keysLeft = Array.from({ length: keySpace }, (_, i) => i);
  const published: number[] = [];
  let pubCount = 0;
  for (let t = 1; t < g.len; t++) {
    let publish = !s.publish || r() < 0.6 ? 1 : 0;
    if (s.L > 0 && pubCount >= stampPool.length) publish = 0;
    if (g.uniqueKeys && keysLeft.length === 0) publish = 0;
    if (!s.publish && publish === 0) break; // publish-all streams end when keys/stamps run out
    let key: number;
    if (g.uniqueKeys && publish) key = keysLeft.splice(ri(keysLeft.length), 1)[0]!;
    else key = ri(keySpace);
    const stamp = publish && s.L > 0 ? stampPool[pubCount]! : ri(2 ** Math.max(s.L, 0));
    if (publish) {
      pubCount++;
      published.push(key);
    }
    const query = published.length > 0 && r() < 0.7 ? published[ri(published.length)]! : ri(keySpace);
    stream.push({ bos: false, publish, key, query, stamp, values: vals() });
  }
  if (g.increasing && s.L > 0) {
    const pubs = stream.filter((p) => !p.bos && (p.publish === 1 || !s.publish));
    const sorted = pubs.map((p) => p.stamp).sort((a, b) => a - b);
    pubs.forEach((p, x) => (p.stamp = sorted[x]!));
  }
  return stream;
}

const ORDERS: { name: string; opts: ExecOptions }[] = [
  { name: 'f32 sequential', opts: { profile: 'f32' } },
  { name: 'f32 shuffled', opts: { profile: 'f32', order: { kind: 'shuffled', seed: 11 } } },
  { name: 'f32 fma', opts: { profile: 'f32', order: { kind: 'fma' } } },
  { name: 'bf16 sequential', opts: { profile: 'bf16' } },
  { name: 'bf16 shuffled', opts: { profile: 'bf16', order: { kind: 'shuffled', seed: 5 } } },
  { name: 'bf16 fma', opts: { profile: 'bf16', order: { kind: 'fma' } } },
];

// ---- tests ----------------------------------------------------------------------------------

describe('lookup → hard attention: layout facts (derived independently)', () => {
  const cases: [string, ModelConfig, Shape, boolean][] = [
    ['tiny n=3 L=5', tiny, { n: 3, L: 5, nv: 2, publish: true }, true],
    ['D=256 n=6 L=8', wide, { n: 6, L: 8, nv: 3, publish: true }, true],
    ['D=256 n=8 L=8 uncentred', wide, { n: 8, L: 8, nv: 3, publish: true }, false],
    ['tiny n=5 no stamps no publish', tiny, { n: 5, L: 0, nv: 1, publish: false }, true],
  ];
  for (const [name, target, s, eager] of cases) {
    it(`${name}: rotary dims empty, constant power-of-four norms, bf16-exact, 1 product per output`, () => {
      const dm = dimsFor(s);
      const low = lowerLookupToAttention(dm.io, dm.out, attnDimsOf(target), { eagerBf16: eager });
      const { D, R } = attnDimsOf(target);
      const qh = low.kv.queries[0]!;
      expect(low.kv.queries.length).toBe(target.numAttentionHeads / target.numKeyValueHeads);
      for (let d = 0; d < R; d++) {
        expect(low.kv.k[d]!.terms.length + Math.abs(low.kv.k[d]!.constant)).toBe(0);
        expect(qh.q[d]!.terms.length + Math.abs(qh.q[d]!.constant)).toBe(0);
      }
      // Evaluate q and k over random bit assignments (float64, exact for these integers):
      // Σk² (non-BOS) and Σq² must be D·4^x exactly and the same for every assignment.
      const r = rng(7);
      const evalF = (f: Form, x: number[]) => f.terms.reduce((a, t) => a + t.coef * x[t.dim]!, f.constant);
      const sums = new Set<number>();
      const qsums = new Set<number>();
      for (let trial = 0; trial < 200; trial++) {
        const x = Array.from({ length: dm.numDims }, () => (r() < 0.5 ? 1 : 0));
        x[dm.io.isBos] = 0;
        sums.add(low.kv.k.reduce((a, f) => a + evalF(f, x) ** 2, 0));
        qsums.add(qh.q.reduce((a, f) => a + evalF(f, x) ** 2, 0));
        // BOS: the sink dominates by ≥ 2^25
        x[dm.io.isBos] = 1;
        const sink = low.layout.sinkDims.reduce((a, d) => a + evalF(low.kv.k[d]!, x) ** 2, 0);
        const rest = low.kv.k.reduce((a, f, d) => a + (low.layout.sinkDims.includes(d) ? 0 : evalF(f, x) ** 2), 0);
        expect(sink / rest).toBeGreaterThanOrEqual(2 ** 25);
        expect(Math.log2(sink / D) % 2).toBe(0);
      }
      expect(sums.size).toBe(1);
      expect(qsums.size).toBe(1);
      const [ks] = [...sums];
      const [qs] = [...qsums];
      expect(Math.log2(ks! / D) % 2).toBe(0); // D·4^j·c²
      expect(Math.log2(qs! / D) % 2).toBe(0); // D·4^i
      expect(ks! / D).toBeGreaterThanOrEqual(64); // eps absorbed
      expect(qs! / D).toBeGreaterThanOrEqual(64);
      expect(qs!).toBeLessThan(2 ** 24);
      // o_proj: one weight-1 product per output; gates 32
      const outDims = [...dm.out.values, dm.out.hit];
      expect(qh.out.map((o) => o.dim).sort((a, b) => a - b)).toEqual(outDims.sort((a, b) => a! - b!));
      for (const o of qh.out) expect(o.weight).toBe(1);
      for (const o of qh.out) expect(qh.gate[o.col]!.constant).toBe(32);
      // norm weights: f32(1 + w) is the scale, a power of two
      for (const w of [...low.norms.qNormWeight, ...low.norms.kNormWeight]) {
        const sc = Math.fround(1 + w);
        expect(Math.log2(sc) % 1).toBe(0);
      }
      expect(Math.fround(1 + low.norms.qNormWeight[0]!)).toBe(low.norms.q);
      expect(Math.fround(1 + low.norms.kNormWeight[0]!)).toBe(low.norms.k);
      expect(low.scores.marginF32).toBeGreaterThanOrEqual(128);
      if (eager) expect(low.scores.marginEagerBf16).toBeGreaterThanOrEqual(112);
      expect(low.cost.contentDims).toBeLessThanOrEqual(D - R);
      expect(low.cost.nonZeros).toBeGreaterThan(0);
    });
  }

  it('fillSquares returns bf16-exact squares summing exactly', () => {
    for (const r of [0, 1, 7, 94, 1947, 1549995, 4194303]) {
      const f = fillSquares(r)!;
      expect(f).not.toBeNull();
      expect(f.reduce((a, x) => a + x * x, 0)).toBe(r);
      for (const x of f) expect(Math.fround(x)).toBe(x);
    }
    expect(normWeightFor(256)).toBe(255);
    expect(Math.fround(1 + normWeightFor(2 ** 24))).toBe(2 ** 24);
  });
});

describe('lookup → hard attention: random streams, bit for bit', () => {
  const configs: { name: string; target: ModelConfig; s: Shape; eager?: boolean; unique?: boolean; maxLen: number; runs: number }[] = [
    { name: 'tiny D=32 R=8, 3 key bits, 5 stamp bits, publish', target: tiny, s: { n: 3, L: 5, nv: 2, publish: true }, maxLen: 60, runs: 8 },
    { name: 'D=256 R=64, 4 key bits, 8 stamp bits, publish', target: wide, s: { n: 4, L: 8, nv: 3, publish: true }, maxLen: 60, runs: 3 },
    { name: 'tiny, 6 key bits, no stamps, every position publishes (unique keys)', target: tiny, s: { n: 6, L: 0, nv: 2, publish: false }, unique: true, maxLen: 40, runs: 3 },
  ];
  for (const cf of configs) {
    for (const ord of ORDERS) {
      it(`${cf.name} — ${ord.name}`, () => {
        fc.assert(fc.property(
          fc.integer({ min: 2, max: cf.maxLen }), fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.boolean(),
          (len, seed, increasing) => {
            const stream = genStream(cf.s, { len, seed, increasing, uniqueKeys: cf.unique });
            const rr = rng(seed ^ 0x5bd1);
            const defaults = Array.from({ length: cf.s.nv }, () => Math.floor(rr() * 257) - 128);
            const b = build(cf.target, cf.s, stream, defaults, { eagerBf16: cf.eager ?? true });
            expect(mismatches(b, stream, defaults, ord.opts)).toBe(0);
          },
        ), { numRuns: cf.runs, seed: 1234 });
      });
    }
  }

  it('the generator covers hits, misses, overridden matches and out-of-order stamps', () => {
    const s: Shape = { n: 3, L: 5, nv: 2, publish: true };
    let hits = 0;
    let misses = 0;
    let overridden = 0;
    let olderWins = 0;
    for (let seed = 0; seed < 20; seed++) {
      const stream = genStream(s, { len: 60, seed, increasing: seed % 2 === 0 });
      const ref = reference(stream, [0, 0], false);
      ref.forEach((r, t) => {
        if (r.hit) hits++;
        else misses++;
        const m = stream.slice(1, t + 1).filter((p) => p.publish === 1 && p.key === stream[t]!.query);
        if (m.length > 1) overridden++;
        if (m.length > 1 && m[m.length - 1]!.stamp < Math.max(...m.map((p) => p.stamp))) olderWins++;
      });
    }
    expect(Math.min(hits, misses, overridden, olderWins)).toBeGreaterThan(20);
  });

  it('tiny: dense path, and the whole stream as one prefill, are exact too', () => {
    const s: Shape = { n: 3, L: 5, nv: 2, publish: true };
    const stream = genStream(s, { len: 50, seed: 99, increasing: true });
    const defaults = [7, -3];
    const b = build(tiny, s, stream, defaults);
    expect(mismatches(b, stream, defaults, { profile: 'f32', path: 'dense' })).toBe(0);
    expect(mismatches(b, stream, defaults, { profile: 'bf16', prefill: stream.length })).toBe(0);
    expect(nonOneHotRows(b, stream, { profile: 'bf16' })).toBe(0);
  });

  it('long stream (300 positions, 8 stamp bits, (1+w) = 2^24) on tiny: exact, every row one-hot', () => {
    const s: Shape = { n: 3, L: 8, nv: 2, publish: true };
    const stream = genStream(s, { len: 300, seed: 4242, increasing: true });
    const defaults = [0, 256];
    const b = build(tiny, s, stream, defaults);
    expect(b.low.norms.k).toBe(2 ** 24);
    expect(mismatches(b, stream, defaults, { profile: 'f32' })).toBe(0);
    expect(mismatches(b, stream, defaults, { profile: 'bf16', order: { kind: 'shuffled', seed: 3 } })).toBe(0);
    expect(nonOneHotRows(b, stream, { profile: 'f32' })).toBe(0);
  });
});

describe('lookup → hard attention: hazards (each breaks exactness)', () => {
  const s: Shape = { n: 3, L: 5, nv: 2, publish: true };
  const defaults = [1, 2];

  it('a margin below 104 (scale too small for the stamp bits) leaves rows that are not one-hot', () => {
    const stream = genStream(s, { len: 40, seed: 17, increasing: true });
    const good = build(tiny, s, stream, defaults);
    expect(nonOneHotRows(good, stream, { profile: 'f32' })).toBe(0);
    // (1+w) q·k = 2^13 instead of 2^14: 2 units after the scale = 90.5 < 104
    const bad = build(tiny, s, stream, defaults, { scales: { q: 64, k: 128 }, minMargin: 0 });
    expect(bad.low.scores.marginF32).toBeLessThan(104);
    expect(nonOneHotRows(bad, stream, { profile: 'f32' })).toBeGreaterThan(0);
    // and the gadget refuses such scales unless the margin check is lowered
    expect(() => build(tiny, s, stream, defaults, { scales: { q: 64, k: 128 } })).toThrow(/margin/);
  });

  it('content in the rotary dims makes scores position dependent (mismatches)', () => {
    const stream = genStream(s, { len: 60, seed: 23, increasing: true });
    const { R } = attnDimsOf(tiny);
    const swap = (kv: AttnKvHeadSpec) => {
      const q = kv.queries[0]!.q;
      for (let d = 0; d < R; d++) {
        [kv.k[d], kv.k[R + d]] = [kv.k[R + d]!, kv.k[d]!];
        [q[d], q[R + d]] = [q[R + d]!, q[d]!];
      }
    };
    const good = build(tiny, s, stream, defaults);
    expect(mismatches(good, stream, defaults, { profile: 'f32' })).toBe(0);
    const bad = build(tiny, s, stream, defaults, {}, swap);
    expect(mismatches(bad, stream, defaults, { profile: 'f32' }) + nonOneHotRows(bad, stream, { profile: 'f32' })).toBeGreaterThan(0);
  });

  it('uncentred scores with 8 stamp bits: exact with f32 scores, not under eager-bf16 score rounding', () => {
    const s8: Shape = { n: 8, L: 8, nv: 1, publish: true };
    // every position publishes key 5 with stamp = position, queries key 5: adjacent stamps compete
    const stream: Pos[] = [{ bos: true, publish: 0, key: 0, query: 0, stamp: 0, values: [0] }];
    for (let t = 1; t < 40; t++) stream.push({ bos: false, publish: 1, key: 5, query: 5, stamp: 200 + t, values: [t] });
    const b = build(wide, s8, stream, [0], { eagerBf16: false });
    expect(b.low.scores.marginEagerBf16).toBeLessThan(104);
    expect(mismatches(b, stream, [0], { profile: 'f32' })).toBe(0);
    expect(nonOneHotRows(b, stream, { profile: 'bf16' })).toBeGreaterThan(0);
    // the centred layout of the same lookup is exact under eager-bf16 rounding
    const c = build(wide, s8, stream, [0]);
    expect(mismatches(c, stream, [0], { profile: 'bf16' })).toBe(0);
  });

  it('two published matches with the same key and stamp average (the IR rejects this stream)', () => {
    const stream: Pos[] = [
      { bos: true, publish: 0, key: 0, query: 0, stamp: 0, values: [0, 0] },
      { bos: false, publish: 1, key: 3, query: 3, stamp: 9, values: [10, 4] },
      { bos: false, publish: 1, key: 3, query: 3, stamp: 9, values: [20, 8] },
    ];
    const b = build(tiny, s, stream, defaults);
    const res = runHarness(b.h, [0, 1, 2], { profile: 'f32' });
    const v = res.values[2]![0]!;
    expect([v[b.dm.out.values[0]!], v[b.dm.out.values[1]!], v[b.dm.out.hit!]]).toEqual([15, 6, 1]);
    expect(() => reference(stream, defaults, false)).toThrow(/tie/);
  });
});

describe('lookup → hard attention: resource errors', () => {
  const target = attnDimsOf(tiny);
  const lower = (s: Shape, opts: LookupOptions = {}, t = target) => {
    const dm = dimsFor(s);
    return lowerLookupToAttention(dm.io, dm.out, t, opts);
  };
  const code = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(ChipcError);
      return (e as ChipcError).code;
    }
    return 'no error';
  };
  it('names the resource that ran out', () => {
    expect(code(() => lower({ n: 16, L: 5, nv: 1, publish: true }))).toBe('fit.lookup.head-dims');
    expect(code(() => lower({ n: 3, L: 9, nv: 1, publish: true }))).toBe('fit.lookup.stamp-bits');
    expect(code(() => lower({ n: 3, L: 5, nv: 32, publish: true }))).toBe('fit.lookup.value-dims');
    expect(code(() => lower({ n: 3, L: 5, nv: 1, publish: true }, { defaults: [300] }))).toBe('fit.lookup.values');
    expect(code(() => lower({ n: 3, L: 5, nv: 1, publish: true }, { defaults: [170], valueAtBos: [-215] }))).toBe('fit.lookup.values');
    expect(code(() => lower({ n: 3, L: 5, nv: 1, publish: true }, { scales: { q: 2, k: 2 } }))).toBe('fit.lookup.margin');
    expect(code(() => lower({ n: 3, L: 5, nv: 1, publish: true }, { scales: { q: 1000, k: 2 } }))).toBe('fit.lookup.norm-scale');
    expect(code(() => lower({ n: 16, L: 8, nv: 1, publish: true }, {}, attnDimsOf(wide)))).toBe('fit.lookup.q-norm');
    expect(code(() => lower({ n: 3, L: 5, nv: 1, publish: true }, {}, { D: 41, R: 8, group: 1 }))).toBe('fit.lookup.head-dim');
  });
});
