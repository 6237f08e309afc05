/**
 * Numerics verification through the REAL executor (src/exec/executor.ts) on hand-set pinned GDN
 * models (test/helpers/pinned-gdn.ts): a worked exact write/overwrite/read, relaxed variants of it
 * as hazards, a property test of the pinned RAM, R1′ digit rows, prefill-vs-decode state
 * identity and order invariance. Every exactness claim compares float32 bit patterns; expected
 * values are derived by hand from the layout (stored value = data + offset, markers = 2^40, …).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Executor } from '../src/exec/executor.ts';
import type { ExecOptions } from '../src/exec/types.ts';
import { sparsifyMatrix } from '../src/model/random-weights.ts';
import type { Matrix, ModelWeights } from '../src/model/weights.ts';
import { MARKER, PinnedGdnModel, type PinnedGdnOptions, type TokenSpec } from './helpers/pinned-gdn.ts';
import { bitDiffCount, f32bits, rng } from './helpers/numerics-ctx.ts';

const OFF = 128;

interface RunResult { ex: Executor; mids: Float32Array[] }

/**
 * Runs token specs through a fresh pinned model. mode 'prefill': one prefill of all tokens;
 * 'decode': prefill of a no-op token, then one decode step per spec. Returns residualMid per spec.
 */
function run(opts: PinnedGdnOptions, specs: TokenSpec[], mode: 'prefill' | 'decode', exec: ExecOptions = {},
  mapWeights?: (w: ModelWeights) => ModelWeights): RunResult {
  const m = new PinnedGdnModel(opts);
  const noop = m.token({});
  const ids = specs.map((s) => m.token(s));
  let w = m.weights();
  if (mapWeights) w = mapWeights(w);
  const ex = new Executor(w, exec);
  const mids: Float32Array[] = [];
  let skip = mode === 'decode' ? 1 : 0;
  ex.addHook((ev) => { if (skip > 0) { skip--; return; } mids.push(ev.residualMid); });
  if (mode === 'prefill') ex.prefill(ids);
  else { ex.prefill([noop]); for (const id of ids) ex.decode(id); }
  return { ex, mids };
}

/** Hand-derived marker-layout row: [M, M, x_0 + OFF, …]. */
function markerRow(data: number[], dv = 8): Float32Array {
  const r = new Float32Array(dv);
  r[0] = MARKER; r[1] = MARKER;
  data.forEach((x, j) => { r[2 + j] = x + OFF; });
  return r;
}

function stateRow(ex: Executor, addr: number, head = 0, dv = 8): Float32Array {
  return ex.gdnState(0, head).slice(addr * dv, (addr + 1) * dv);
}

function outDims(m: PinnedGdnModel, mid: Float32Array): Float32Array {
  return mid.slice(m.dim.out, m.dim.out + m.dim.outCount);
}

const pad6 = (xs: number[]) => [...xs, ...new Array(6 - xs.length).fill(0)];
// A worked example: four rows of small random values (negative ones included), then the overwrite of address 2.
const SEED_VALS = [[88, 25, 36], [79, 15, 55], [-40, -43, 74], [7, 7, 7]];
const seedWrites = (): TokenSpec[] => [
  ...SEED_VALS.map((v, addr) => ({ write: { addr, data: pad6(addr === 3 ? [-40, -43, 74] : v) } })),
  { write: { addr: 2, data: pad6([7, 7, 7]) } },
];
// Resulting rows: 0 → [88,25,36], 1 → [79,15,55], 2 → [7,7,7] (overwritten), 3 → [−40,−43,74].
const SEED_EXPECT = [[88, 25, 36], [79, 15, 55], [7, 7, 7], [-40, -43, 74]];

describe('1. an exact write / overwrite / read through the full layer math', () => {
  for (const mode of ['prefill', 'decode'] as const) {
    it(`${mode}: every row holds exactly [M, M, v + 128] after the writes and the overwrite`, () => {
      const { ex } = run({}, seedWrites(), mode);
      for (let a = 0; a < 4; a++) expect(bitDiffCount(stateRow(ex, a), markerRow(pad6(SEED_EXPECT[a])))).toBe(0);
      // Untouched rows stay +0.
      for (let a = 4; a < 16; a++) expect(bitDiffCount(stateRow(ex, a), new Float32Array(8))).toBe(0);
    });
  }
  it('decode reads return exactly the stored integers (negative ones included) in the output dims', () => {
    const m = new PinnedGdnModel({});
    const specs: TokenSpec[] = [...seedWrites(), ...[0, 1, 2, 3].map((a) => ({ read: a }))];
    const { mids } = run({}, specs, 'decode');
    for (let a = 0; a < 4; a++) {
      const got = outDims(m, mids[5 + a]);
      expect(bitDiffCount(got, Float32Array.from(pad6(SEED_EXPECT[a])))).toBe(0);
    }
  });
});

describe('2. hazards: relaxed variants and known pitfalls fail; the pinned recipe holds', () => {
  const fourWrites: TokenSpec[] = [[10, 20, 30], [40, 50, 60], [70, 80, 90], [1, 2, 3]]
    .map((v, addr) => ({ write: { addr, data: pad6(v) } }));
  const rowsExact = (ex: Executor, rows: number[][]) =>
    rows.every((v, a) => bitDiffCount(stateRow(ex, a), markerRow(pad6(v))) === 0);
  const VALS = [[10, 20, 30], [40, 50, 60], [70, 80, 90], [1, 2, 3]];

  it('gate ≈ 0.9 (dt_bias / A_log not pinned): earlier rows shrink; pinned gate: exact', () => {
    const aLog = Math.log(-Math.log(0.9) / Math.LN2); // g = −exp(A_log)·softplus(0) ≈ ln 0.9
    const { ex } = run({ dtBias: 0, aLog }, fourWrites, 'decode');
    expect(rowsExact(ex, VALS)).toBe(false);
    // Row 0 saw 3 later decays: its marker is about 0.9³·M, strictly below M.
    const r0 = stateRow(ex, 0);
    expect(r0[0]).toBeLessThan(MARKER * 0.73);
    expect(r0[0]).toBeGreaterThan(MARKER * 0.72);
    expect(rowsExact(run({}, fourWrites, 'decode').ex, VALS)).toBe(true);
  });

  it('β = 0.5: a write into an empty row stores exactly half (blending); β pinned to 1: exact', () => {
    const { ex } = run({ betaHalf: true }, fourWrites, 'decode');
    for (let a = 0; a < 4; a++) {
      const half = markerRow(pad6(VALS[a])).map((x) => x / 2);
      expect(bitDiffCount(stateRow(ex, a), half)).toBe(0);
    }
    expect(rowsExact(ex, VALS)).toBe(false);
  });

  it('a key overlapping two addresses (e2 + e3)/√2 writes into both: row 2 is corrupted', () => {
    const specs = fourWrites.map((s, a) => (a === 3 ? { ...s, mix: 1 as const } : s));
    const { ex } = run({ mixRow: 2 }, specs, 'decode');
    expect(bitDiffCount(stateRow(ex, 2), markerRow(pad6(VALS[2])))).toBeGreaterThan(0);
    expect(rowsExact(run({ mixRow: 2 }, fourWrites, 'decode').ex, VALS)).toBe(true); // mix flag off
  });

  it('key pre-activation 41 (not a power of two) gives k = 0.99999994, not 1: the row is scaled; 128 and 256 are exact', () => {
    const { ex } = run({ keyScale: 41 }, fourWrites, 'decode');
    expect(bitDiffCount(stateRow(ex, 1), markerRow(pad6(VALS[1])))).toBeGreaterThan(0);
    expect(stateRow(ex, 1)[0]).toBe(Math.fround(MARKER * 0.99999994));
    for (const keyScale of [128, 256]) expect(rowsExact(run({ keyScale }, fourWrites, 'decode').ex, VALS)).toBe(true);
  });

  it('eps not absorbed: Σx² = 4·H (mean 4) breaks the norm factor; mean 64 is exact; mean 16 survives only by CPU 1/sqrt slack', () => {
    // Anchors [a, a] plus write-token content chosen so that Σx² is exactly mean·64 (integers: exact in any order).
    const cases = [
      { a: 8, shift: 1, data: [11, 2, 1] }, // 128 + 121 + 4 + 1 + 2 (wen, ben) = 256 → mean 4
      { a: 16, shift: 2, data: [16, 15, 5, 2] }, // 512 + 510 + 2 = 1024 → mean 16
      { a: 32, shift: 3, data: [32, 31, 6, 5] }, // 2048 + 2046 + 2 = 4096 → mean 64
    ];
    const exact = cases.map(({ a, shift, data }) => {
      const { ex } = run({ anchorValues: [a, a], normShift: shift }, [{ write: { addr: 0, data: pad6(data) } }], 'decode');
      return bitDiffCount(stateRow(ex, 0), markerRow(pad6(data))) === 0;
    });
    expect(exact).toEqual([false, true, true]);
    // The mean-16 case only passes because fl(16 + 1e-6) = 16 + 2^−19 and fl(sqrt) rounds back to 4.
    expect(Math.fround(16 + 1e-6)).not.toBe(16);
  });

  it('a naive raw-integer row read through the gated norm depends on its neighbours; marker rows do not', () => {
    const rawRead = (neighbour: number) => {
      const m = new PinnedGdnModel({ layout: 'raw', valueOffset: 0 });
      const { mids } = run({ layout: 'raw', valueOffset: 0 },
        [{ write: { addr: 5, data: [40, neighbour, 20, 20, 20, 20, 20, 20] } }, { read: 5 }], 'decode');
      return outDims(m, mids[1])[0];
    };
    const a = rawRead(1000), b = rawRead(20);
    expect(a).not.toBe(b);
    expect(a).not.toBe(40);
    const markerRead = (neighbour: number) => {
      const m = new PinnedGdnModel({});
      const { mids } = run({}, [{ write: { addr: 5, data: [40, neighbour, 20, 20, 20, 20] } }, { read: 5 }], 'decode');
      return f32bits(outDims(m, mids[1])[0]);
    };
    expect(markerRead(1000)).toBe(f32bits(40));
    expect(markerRead(20)).toBe(f32bits(40));
  });

  it('dt_bias = −20: g ≈ −2e−9 ≠ −0; decode survives (exp rounds to 1) but a 64-token prefill decays the state; −128 is exact', () => {
    const r = rng(3);
    const writes: TokenSpec[] = Array.from({ length: 64 }, (_, t) => ({
      write: { addr: t % 16, data: pad6(Array.from({ length: 6 }, () => Math.floor(r() * 200))) },
    }));
    const expected = new Map<number, number[]>();
    for (const s of writes) expected.set(s.write!.addr, s.write!.data);
    const allExact = (ex: Executor) => [...expected].every(([a, d]) => bitDiffCount(stateRow(ex, a), markerRow(d)) === 0);
    expect(allExact(run({ dtBias: -20 }, writes, 'prefill').ex)).toBe(false);
    expect(allExact(run({ dtBias: -20 }, writes, 'decode').ex)).toBe(true);
    expect(allExact(run({ dtBias: -128 }, writes, 'prefill').ex)).toBe(true);
  });
});

/** A random op of the pinned RAM property test. */
type Op = { kind: 'write'; addr: number; data: number[]; heads: (0 | 1)[] } | { kind: 'read'; addr: number };

function opsArb(minX: number, maxX: number) {
  const write = fc.record({
    kind: fc.constant('write' as const), addr: fc.integer({ min: 0, max: 15 }),
    data: fc.array(fc.integer({ min: minX, max: maxX }), { minLength: 6, maxLength: 6 }),
    heads: fc.tuple(fc.constantFrom<0 | 1>(0, 1), fc.constantFrom<0 | 1>(0, 1)).map((t) => [...t] as (0 | 1)[]),
  });
  const read = fc.record({ kind: fc.constant('read' as const), addr: fc.integer({ min: 0, max: 15 }) });
  return fc.array(fc.oneof(write, write, read), { minLength: 1, maxLength: 16 });
}

/** Runs ops in decode steps (2 value heads; head 0 feeds the output); returns mismatch count vs the hand model. */
function ramMismatches(ops: Op[]): number {
  const opts: PinnedGdnOptions = { hv: 2 };
  const m = new PinnedGdnModel(opts);
  const specs: TokenSpec[] = ops.map((o) => (o.kind === 'write'
    ? { write: { addr: o.addr, data: o.data, betaEnable: o.heads } } : { read: o.addr }));
  const { ex, mids } = run(opts, specs, 'decode');
  const mem: Map<number, number[]>[] = [new Map(), new Map()];
  let bad = 0;
  ops.forEach((o, t) => {
    if (o.kind === 'write') { for (let h = 0; h < 2; h++) if (o.heads[h]) mem[h].set(o.addr, o.data); return; }
    const want = mem[0].get(o.addr);
    if (want) bad += bitDiffCount(outDims(m, mids[t]), Float32Array.from(want));
  });
  for (let h = 0; h < 2; h++) {
    for (let a = 0; a < 16; a++) {
      const d = mem[h].get(a);
      bad += bitDiffCount(stateRow(ex, a, h), d ? markerRow(d) : new Float32Array(8));
    }
  }
  return bad;
}

describe('3. property: a pinned head is an exact RAM over random op streams (decode path)', () => {
  // Bound: the stored value x + 128 must be in silu's identity region (> 16.64) and < 2^24 (integers
  // exact in float32, so the delta form v − s and the read's (x + 128) − 128 are exact).
  it('writes / overwrites / β-masked writes / reads with x + 128 ∈ [17, 2^24 − 1] are bit-exact', () => {
    fc.assert(fc.property(opsArb(17 - OFF, 2 ** 24 - 1 - OFF), (ops) => ramMismatches(ops) === 0), { numRuns: 25, seed: 42 });
  });
  it('violation: stored values in (0, 16.64) (silu not the identity) break it', () => {
    fc.assert(fc.property(opsArb(1 - OFF, 16 - OFF), (ops) => {
      fc.pre(ops.some((o) => o.kind === 'write' && o.heads.some((h) => h === 1)));
      return ramMismatches(ops) > 0;
    }), { numRuns: 15, seed: 7 });
  });
});

/** A random 64-bit R1′ row. */
function bits64(r: () => number): number[] {
  return Array.from({ length: 64 }, () => (r() < 0.5 ? 1 : 0));
}

describe('4. R1′ compensated one-hot digit rows (T = 181.01934814453125, fl(T·fl(1/√128)) = 16)', () => {
  expect(Math.fround(181.01934814453125 * Math.fround(1 / Math.sqrt(128)))).toBe(16);
  const opts: PinnedGdnOptions = { layout: 'r1p', H: 256 };
  for (const profile of ['f32', 'bf16'] as const) {
    it(`${profile}: rows written, overwritten and read back bit-exactly through the gated norm and out_proj`, () => {
      const r = rng(profile === 'f32' ? 1 : 2);
      const rows = [bits64(r), bits64(r), bits64(r)];
      const addrs = [0, 77, 127];
      const specs: TokenSpec[] = [
        ...rows.map((data, i) => ({ write: { addr: addrs[i], data } })),
        { write: { addr: 77, data: rows[0] } }, // overwrite 77 with row 0's bits
        { read: 0 }, { read: 77 }, { read: 127 },
      ];
      const m = new PinnedGdnModel(opts);
      const { ex, mids } = run(opts, specs, 'decode', { profile });
      const want = [rows[0], rows[0], rows[2]];
      for (let i = 0; i < 3; i++) expect(bitDiffCount(outDims(m, mids[4 + i]), Float32Array.from(want[i]))).toBe(0);
      // The stored row: the hot column of each group holds T (f32) or bf16(T) = 181; the cold ones
      // stay +0 (S starts at +0 and S + (−0) = +0: the −0 of silu(−330) never reaches the state).
      const hot = profile === 'f32' ? 181.01934814453125 : 181;
      const row = ex.gdnState(0, 0).slice(127 * 128, 128 * 128);
      const expectRow = new Float32Array(128);
      for (let g = 0; g < 32; g++) expectRow[g * 4 + rows[2][2 * g] + 2 * rows[2][2 * g + 1]] = hot;
      expect(bitDiffCount(row, expectRow)).toBe(0);
    });
  }
});

/** Random write-only prompts (marker layout) with rewrites. */
function writePrompt(n: number, seed: number): TokenSpec[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, t) => ({
    write: {
      addr: t % 3 === 0 ? 5 : Math.floor(r() * 16),
      data: Array.from({ length: 6 }, () => Math.floor(r() * 100000) - 100),
      betaEnable: [r() < 0.85 ? 1 : 0] as (0 | 1)[],
    },
  }));
}

describe('6. firmware loading: chunked-prefill writes and decode writes give bit-identical states', () => {
  it('marker rows: a 130-token write-only prompt (3 chunks, row 5 rewritten 44×)', () => {
    const specs = writePrompt(130, 8);
    const a = run({}, specs, 'prefill').ex.gdnState(0, 0);
    const b = run({}, specs, 'decode').ex.gdnState(0, 0);
    expect(bitDiffCount(a, b)).toBe(0);
    expect(a.some((x) => x !== 0)).toBe(true);
  });
  it('R1′ rows: a 70-token write-only prompt with rewrites, f32', () => {
    const r = rng(12);
    const specs: TokenSpec[] = Array.from({ length: 70 }, () => ({ write: { addr: Math.floor(r() * 6), data: bits64(r) } }));
    const opts: PinnedGdnOptions = { layout: 'r1p', H: 256 };
    const a = run(opts, specs, 'prefill').ex.gdnState(0, 0);
    const b = run(opts, specs, 'decode').ex.gdnState(0, 0);
    expect(bitDiffCount(a, b)).toBe(0);
  });
});

describe('order invariance of the pinned (integer-valued) computations', () => {
  const sparse = (w: ModelWeights): ModelWeights => {
    const sp = (m: Matrix) => { const s = sparsifyMatrix(m); return { rows: s.rows, cols: s.cols, csr: s.csr }; };
    const l = w.layers[0];
    const g = l.mixer as import('../src/model/weights.ts').GdnWeights;
    const mlp = l.mlp as import('../src/model/weights.ts').DenseMlpWeights;
    return {
      ...w, embedTokens: sp(w.embedTokens), lmHead: sp(w.lmHead),
      layers: [{
        ...l,
        mixer: { ...g, inProjQkv: sp(g.inProjQkv), inProjZ: sp(g.inProjZ), inProjB: sp(g.inProjB), inProjA: sp(g.inProjA), outProj: sp(g.outProj) },
        mlp: { kind: 'dense', gateProj: sp(mlp.gateProj), upProj: sp(mlp.upProj), downProj: sp(mlp.downProj) },
      }],
    };
  };
  it('dense / sparse / shuffled / fma give bit-identical states and reads (prefill writes, decode reads)', () => {
    const specs = [...writePrompt(40, 99)];
    const reads: TokenSpec[] = [5, 0, 3, 9].map((a) => ({ read: a }));
    const variants: [string, ExecOptions, boolean][] = [
      ['dense', { path: 'dense' }, false], ['sparse', { path: 'sparse' }, true],
      ['shuffled', { order: { kind: 'shuffled', seed: 5 } }, false], ['fma', { order: { kind: 'fma' } }, false],
    ];
    const results = variants.map(([, exec, sp]) => {
      const m = new PinnedGdnModel({});
      const ids = specs.map((s) => m.token(s));
      const readIds = reads.map((s) => m.token(s));
      let w = m.weights();
      if (sp) w = sparse(w);
      const ex = new Executor(w, exec);
      const mids: Float32Array[] = [];
      ex.prefill(ids);
      ex.addHook((ev) => mids.push(ev.residualMid));
      for (const id of readIds) ex.decode(id);
      return { state: ex.gdnState(0, 0).slice(), mids };
    });
    for (let i = 1; i < results.length; i++) {
      expect(bitDiffCount(results[i].state, results[0].state), variants[i][0]).toBe(0);
      for (let t = 0; t < reads.length; t++) expect(bitDiffCount(results[i].mids[t], results[0].mids[t]), variants[i][0]).toBe(0);
    }
  });
});
