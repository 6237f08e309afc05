/**
 * Tests of the chunked GDN prefill kernel (src/exec/gdn-chunked.ts):
 *  - math: against an independent float64 recurrence (a tolerance: this checks the algebra only,
 *    not float32 rounding) over chunk boundaries L = 1, 63, 64, 65, 130, both solve variants;
 *  - docs/numerics.md "Chunked prefill": a write-only prompt with pinned gates (g = −0, β ∈ {0,1}, exact
 *    one-hot keys) leaves a final state bit-identical to the float32 recurrent rule, also with rows
 *    rewritten many times and in every reduction order; reads inside a prompt differ under FMA.
 */
import { describe, expect, it } from 'vitest';
import { chunkGatedDeltaRule, type ChunkSolveVariant } from '../src/exec/gdn-chunked.ts';
import { ChipcError } from '../src/util/errors.ts';
import {
  bitDiffCount, f32bits, fmaF32, makeTestContext, recurrentF32, rng, type TestOrder,
} from './helpers/numerics-ctx.ts';

const f = Math.fround;
const S_F = f(1 / Math.sqrt(128)); // fl32(1/√128) = 0x3DB504F3
const T_HOT = 181.01934814453125; // R1′ hot value: fl32(T·S_F) = 16

/** Float64 plain recurrence (no float32 rounding anywhere). */
function recurrent64(
  L: number, dk: number, dv: number, q: Float32Array, k: Float32Array, v: Float32Array,
  g: Float32Array, beta: Float32Array, state: Float64Array,
): Float64Array {
  const out = new Float64Array(L * dv);
  for (let t = 0; t < L; t++) {
    const e = Math.exp(g[t]);
    for (let i = 0; i < dk * dv; i++) state[i] *= e;
    const delta = new Float64Array(dv);
    for (let j = 0; j < dv; j++) {
      let kv = 0;
      for (let i = 0; i < dk; i++) kv += state[i * dv + j] * k[t * dk + i];
      delta[j] = (v[t * dv + j] - kv) * beta[t];
    }
    for (let i = 0; i < dk; i++) for (let j = 0; j < dv; j++) state[i * dv + j] += k[t * dk + i] * delta[j];
    for (let j = 0; j < dv; j++) {
      let o = 0;
      for (let i = 0; i < dk; i++) o += state[i * dv + j] * q[t * dk + i];
      out[t * dv + j] = o;
    }
  }
  return out;
}

function randomInputs(L: number, dk: number, dv: number, seed: number) {
  const r = rng(seed);
  const unit = (n: number, scale: number) => {
    const a = new Float32Array(L * n);
    for (let t = 0; t < L; t++) {
      let ss = 0;
      for (let i = 0; i < n; i++) { const x = r() * 2 - 1; a[t * n + i] = x; ss += x * x; }
      const inv = scale / Math.sqrt(ss);
      for (let i = 0; i < n; i++) a[t * n + i] = f(a[t * n + i] * inv);
    }
    return a;
  };
  const q = unit(dk, 1 / Math.sqrt(dk));
  const k = unit(dk, 1);
  const v = Float32Array.from({ length: L * dv }, () => f(r() * 4 - 2));
  const g = Float32Array.from({ length: L }, () => f(-r() * 0.3));
  const beta = Float32Array.from({ length: L }, () => f(r()));
  const state = Float32Array.from({ length: dk * dv }, () => f(r() - 0.5));
  return { q, k, v, g, beta, state };
}

describe('chunkGatedDeltaRule: math against a float64 recurrence (tolerance 1e-4: algebra only)', () => {
  const dk = 8, dv = 5;
  for (const variant of ['solve', 'inverse'] as ChunkSolveVariant[]) {
    for (const L of [1, 63, 64, 65, 130]) {
      it(`${variant}, L = ${L}`, () => {
        const inp = randomInputs(L, dk, dv, 1000 + L);
        const s64 = Float64Array.from(inp.state);
        const want = recurrent64(L, dk, dv, inp.q, inp.k, inp.v, inp.g, inp.beta, s64);
        const state = Float32Array.from(inp.state);
        const got = chunkGatedDeltaRule({ L, dk, dv, ...inp, state, ctx: makeTestContext(), variant });
        expect(got.length).toBe(L * dv);
        for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThan(1e-4);
        for (let i = 0; i < s64.length; i++) expect(Math.abs(state[i] - s64[i])).toBeLessThan(1e-4);
      });
    }
  }

  it('a small chunk size (5) still computes the recurrence (L = 23, several chunks, padding)', () => {
    const L = 23;
    const inp = randomInputs(L, dk, dv, 77);
    const s64 = Float64Array.from(inp.state);
    const want = recurrent64(L, dk, dv, inp.q, inp.k, inp.v, inp.g, inp.beta, s64);
    const state = Float32Array.from(inp.state);
    const got = chunkGatedDeltaRule({ L, dk, dv, ...inp, state, ctx: makeTestContext(), chunkSize: 5 });
    for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThan(1e-4);
    for (let i = 0; i < s64.length; i++) expect(Math.abs(state[i] - s64[i])).toBeLessThan(1e-4);
  });

  it('L = 0 returns no outputs and leaves the state untouched', () => {
    const state = Float32Array.from([1, 2, 3, 4]);
    const e = new Float32Array(0);
    const out = chunkGatedDeltaRule({ L: 0, dk: 2, dv: 2, q: e, k: e, v: e, g: e, beta: e, state, ctx: makeTestContext() });
    expect(out.length).toBe(0);
    expect(Array.from(state)).toEqual([1, 2, 3, 4]);
  });

  it('rejects wrong lengths and bad sizes with a ChipcError', () => {
    const z = (n: number) => new Float32Array(n);
    const base = { L: 2, dk: 2, dv: 2, q: z(4), k: z(4), v: z(4), g: z(2), beta: z(2), state: z(4), ctx: makeTestContext() };
    expect(() => chunkGatedDeltaRule({ ...base, v: z(3) })).toThrow(ChipcError);
    expect(() => chunkGatedDeltaRule({ ...base, v: z(3) })).toThrow(/v has length 3, expected 4/);
    expect(() => chunkGatedDeltaRule({ ...base, state: z(5) })).toThrow(/state/);
    expect(() => chunkGatedDeltaRule({ ...base, chunkSize: 0 })).toThrow(/chunkSize/);
    expect(() => chunkGatedDeltaRule({ ...base, L: 1.5 })).toThrow(/L must be an integer/);
  });
});

/** A pinned-head op stream: per token an address (or −1 = no key), a write enable, a read address. */
interface PinnedOp { writeAddr: number; en: 0 | 1; value: number[]; readAddr: number }

function pinnedInputs(ops: PinnedOp[], dk: number, dv: number) {
  const L = ops.length;
  const q = new Float32Array(L * dk), k = new Float32Array(L * dk), v = new Float32Array(L * dv);
  const g = new Float32Array(L).fill(-0); // pinned: g = −exp(A_log)·softplus(−128) = −0
  const beta = new Float32Array(L);
  ops.forEach((op, t) => {
    if (op.writeAddr >= 0) k[t * dk + op.writeAddr] = 1;
    beta[t] = op.en;
    for (let j = 0; j < dv; j++) v[t * dv + j] = op.value[j];
    if (op.readAddr >= 0) q[t * dk + op.readAddr] = S_F;
  });
  return { L, q, k, v, g, beta };
}

const ORDERS: [string, TestOrder][] = [
  ['sequential', 'sequential'], ['fma', 'fma'], ['shuffled', { shuffleSeed: 9 }],
];

function compareFinalStates(ops: PinnedOp[], dk: number, dv: number, init?: Float32Array) {
  const inp = pinnedInputs(ops, dk, dv);
  for (const [name, order] of ORDERS) {
    for (const variant of ['solve', 'inverse'] as ChunkSolveVariant[]) {
      const sRec = init ? Float32Array.from(init) : new Float32Array(dk * dv);
      const sChunk = Float32Array.from(sRec);
      recurrentF32(inp.L, dk, dv, inp.q, inp.k, inp.v, inp.g, inp.beta, sRec, makeTestContext(order));
      chunkGatedDeltaRule({ ...inp, dk, dv, state: sChunk, ctx: makeTestContext(order), variant });
      expect(bitDiffCount(sChunk, sRec), `${name}/${variant}`).toBe(0);
    }
  }
}

describe('chunkGatedDeltaRule: pinned write-only prompts give the recurrent state bit for bit', () => {
  const dk = 16, dv = 6;
  it('each row written once (130 tokens, β-masked writes and zero keys mixed in)', () => {
    const r = rng(5);
    const ops: PinnedOp[] = [];
    for (let t = 0; t < 130; t++) {
      const kind = r();
      const value = Array.from({ length: dv }, () => Math.floor(r() * 2000) - 1000);
      if (kind < 0.15) ops.push({ writeAddr: -1, en: 1, value, readAddr: -1 }); // zero key
      else if (kind < 0.3) ops.push({ writeAddr: Math.floor(r() * dk), en: 0, value, readAddr: -1 }); // β = 0
      else ops.push({ writeAddr: t % dk, en: 1, value, readAddr: -1 });
    }
    const inp = pinnedInputs(ops, dk, dv);
    const s = new Float32Array(dk * dv);
    chunkGatedDeltaRule({ ...inp, dk, dv, state: s, ctx: makeTestContext() });
    // Hand derivation: the last enabled write to row a with a non-zero key holds its value exactly.
    const expected = new Float32Array(dk * dv);
    for (const op of ops) if (op.writeAddr >= 0 && op.en === 1) for (let j = 0; j < dv; j++) expected[op.writeAddr * dv + j] = op.value[j];
    expect(bitDiffCount(s, expected)).toBe(0);
    compareFinalStates(ops, dk, dv);
  });

  it('3 rows rewritten ~50 times each over 150 tokens (chunk-internal overwrites), from a loaded state', () => {
    const r = rng(11);
    const ops: PinnedOp[] = [];
    for (let t = 0; t < 150; t++) {
      const value = Array.from({ length: dv }, () => Math.floor(r() * 1_000_000) - 500_000);
      ops.push({ writeAddr: [2, 7, 13][t % 3], en: 1, value, readAddr: -1 });
    }
    const init = Float32Array.from({ length: dk * dv }, () => Math.floor(r() * 100));
    compareFinalStates(ops, dk, dv, init);
    // And the values are the last writes, exactly.
    const inp = pinnedInputs(ops, dk, dv);
    const s = Float32Array.from(init);
    chunkGatedDeltaRule({ ...inp, dk, dv, state: s, ctx: makeTestContext({ shuffleSeed: 3 }) });
    for (const a of [2, 7, 13]) {
      const last = ops.filter((o) => o.writeAddr === a).at(-1)!;
      for (let j = 0; j < dv; j++) expect(f32bits(s[a * dv + j])).toBe(f32bits(last.value[j]));
    }
    expect(f32bits(s[0])).toBe(f32bits(init[0]));
  });

  it('R1′ rows (T / −0 one-hot digits) rewritten inside one chunk: state bit-identical', () => {
    const r = rng(21);
    const ops: PinnedOp[] = [];
    for (let t = 0; t < 100; t++) {
      const value = Array.from({ length: dv }, () => (r() < 0.5 ? T_HOT : -0));
      ops.push({ writeAddr: Math.floor(r() * 4), en: r() < 0.8 ? 1 : 0, value, readAddr: -1 });
    }
    compareFinalStates(ops, dk, dv);
  });

  it('control: a decaying gate (g ≠ 0) breaks bit-identity between the two kernels', () => {
    const r = rng(4);
    const L = 100;
    const ops: PinnedOp[] = Array.from({ length: L }, (_, t) => ({
      writeAddr: t % 5, en: 1 as const, value: Array.from({ length: dv }, () => f(r() * 1000)), readAddr: -1,
    }));
    const inp = pinnedInputs(ops, dk, dv);
    for (let t = 0; t < L; t++) inp.g[t] = f(-0.01 - 0.05 * r());
    const sRec = new Float32Array(dk * dv), sChunk = new Float32Array(dk * dv);
    recurrentF32(inp.L, dk, dv, inp.q, inp.k, inp.v, inp.g, inp.beta, sRec, makeTestContext());
    chunkGatedDeltaRule({ ...inp, dk, dv, state: sChunk, ctx: makeTestContext() });
    expect(bitDiffCount(sChunk, sRec)).toBeGreaterThan(0);
  });
});

describe('chunkGatedDeltaRule: reads inside a prompt (an FMA effect)', () => {
  const dk = 8, dv = 4;
  // Row 3 gets T in column 0, is rewritten to T in column 1, then read; also a plain read.
  const ops: PinnedOp[] = [
    { writeAddr: 3, en: 1, value: [T_HOT, -0, -0, -0], readAddr: -1 },
    { writeAddr: 3, en: 1, value: [-0, T_HOT, -0, -0], readAddr: -1 },
    { writeAddr: -1, en: 0, value: [0, 0, 0, 0], readAddr: 3 },
    { writeAddr: 5, en: 1, value: [T_HOT, T_HOT, -0, -0], readAddr: 5 },
  ];
  const run = (order: TestOrder) => {
    const inp = pinnedInputs(ops, dk, dv);
    const sR = new Float32Array(dk * dv), sC = new Float32Array(dk * dv);
    const rec = recurrentF32(inp.L, dk, dv, inp.q, inp.k, inp.v, inp.g, inp.beta, sR, makeTestContext(order));
    const chunk = chunkGatedDeltaRule({ ...inp, dk, dv, state: sC, ctx: makeTestContext(order) });
    return { rec, chunk, sR, sC };
  };

  it('the FMA helper is a single rounding: fma(T, s_f, −16) ≠ 0 while fl(fl(T·s_f) − 16) = 0', () => {
    expect(f(T_HOT * S_F)).toBe(16);
    expect(f(f(T_HOT * S_F) - 16)).toBe(0);
    expect(fmaF32(T_HOT, S_F, -16)).not.toBe(0);
    expect(fmaF32(T_HOT, S_F, -16)).toBe(f(T_HOT * S_F - 16)); // exact in a double here
  });

  it('sequential (every product rounded): prefill reads equal the recurrent reads bit for bit', () => {
    const { rec, chunk, sR, sC } = run('sequential');
    expect(bitDiffCount(chunk, rec)).toBe(0);
    expect(bitDiffCount(sC, sR)).toBe(0);
    expect(rec[2 * dv + 1]).toBe(16); // hand: row 3 holds T in column 1 → T·s_f rounds to 16
    expect(rec[2 * dv + 0]).toBe(0);
  });

  it('fma: the read of the rewritten row differs from the recurrent read; the final state does not', () => {
    const { rec, chunk, sR, sC } = run('fma');
    expect(bitDiffCount(sC, sR)).toBe(0);
    expect(rec[2 * dv + 0]).toBe(0);
    // Intra-chunk term s_f·T + s_f·(−T): the FMA keeps the exact second product.
    expect(chunk[2 * dv + 0]).not.toBe(0);
    expect(Math.abs(chunk[2 * dv + 0])).toBeLessThan(1e-5);
    expect(bitDiffCount(chunk, rec)).toBeGreaterThan(0);
  });
});
