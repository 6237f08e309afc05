/**
 * The sparse evaluation of the chunked GDN kernel (src/exec/gdn-chunked-sparse.ts) against the
 * kernel it skips work for (src/exec/gdn-chunked.ts): outputs and final states bit for bit in
 * sequential and FMA order, on inputs shaped like a compiled chip's (one-hot keys and queries,
 * mostly-zero states and values, zeros of both signs, pinned and decaying gates) and on dense
 * random ones; and a refusal (null, state untouched) where a skipped product would not be a zero.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chunkGatedDeltaRule } from '../src/exec/gdn-chunked.ts';
import { chunkGatedDeltaRuleSparse } from '../src/exec/gdn-chunked-sparse.ts';
import { bits, makeTestContext, rng } from './helpers/numerics-ctx.ts';

const f = Math.fround;

interface Case { L: number; dk: number; dv: number; C: number; q: Float32Array; k: Float32Array; v: Float32Array; g: Float32Array; beta: Float32Array; state: Float32Array }

/**
 * Chip-like inputs: each token's key and query a one-hot (value ±1, ±T, or a random magnitude) or
 * all zeros of either sign, sometimes a dense vector; values zero (of either sign) with
 * probability `sparsity`; gates −0 or random decays; β ∈ {0, 1, random}; a sparse initial state.
 */
function chipLikeCase(seed: number, L: number, dk: number, dv: number, C: number, sparsity: number): Case {
  const r = rng(seed);
  const zero = () => (r() < 0.5 ? 0 : -0);
  const mag = () => [1, -1, 181.01934814453125, 16, f(r() * 8 - 4)][Math.floor(r() * 5)]!;
  const code = (n: number) => {
    const a = new Float32Array(L * n);
    for (let t = 0; t < L; t++) {
      const kind = r();
      for (let i = 0; i < n; i++) a[t * n + i] = zero();
      if (kind < 0.7) a[t * n + Math.floor(r() * n)] = mag();
      else if (kind < 0.85) for (let i = 0; i < n; i++) a[t * n + i] = r() < 0.3 ? f(r() * 2 - 1) : zero();
    }
    return a;
  };
  const v = Float32Array.from({ length: L * dv }, () => (r() < sparsity ? zero() : mag()));
  const g = Float32Array.from({ length: L }, () => (r() < 0.7 ? -0 : f(-r() * 0.5)));
  const beta = Float32Array.from({ length: L }, () => [0, 1, f(r())][Math.floor(r() * 3)]!);
  const state = Float32Array.from({ length: dk * dv }, () => (r() < 0.9 ? zero() : mag()));
  return { L, dk, dv, C, q: code(dk), k: code(dk), v, g, beta, state };
}

function run(c: Case, order: 'sequential' | 'fma', sparse: boolean): { out: Uint32Array | null; state: Uint32Array } {
  const state = c.state.slice();
  const args = { L: c.L, dk: c.dk, dv: c.dv, q: c.q, k: c.k, v: c.v, g: c.g, beta: c.beta, state, ctx: makeTestContext(order), chunkSize: c.C };
  const out = sparse ? chunkGatedDeltaRuleSparse(args, order) : chunkGatedDeltaRule(args);
  return { out: out === null ? null : bits(out), state: bits(state) };
}

function expectSame(c: Case, order: 'sequential' | 'fma'): void {
  const dense = run(c, order, false);
  const sparse = run(c, order, true);
  expect(sparse.out).not.toBeNull();
  expect(Array.from(sparse.out!)).toEqual(Array.from(dense.out!));
  expect(Array.from(sparse.state)).toEqual(Array.from(dense.state));
}

describe('chunkGatedDeltaRuleSparse: the dense kernel bit for bit', () => {
  for (const order of ['sequential', 'fma'] as const) {
    it(`${order}: chip-like inputs (one-hot codes, zeros of both signs, pinned and decaying gates), several chunk sizes`, () => {
      fc.assert(fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }), fc.integer({ min: 1, max: 90 }), fc.constantFrom(4, 7, 64),
        fc.constantFrom(8, 16), fc.constantFrom(4, 8), fc.constantFrom(0.5, 0.95),
        (seed, L, C, dk, dv, sparsity) => expectSame(chipLikeCase(seed, L, dk, dv, C, sparsity), order),
      ), { numRuns: 60, seed: 20261203 });
    });

    it(`${order}: dense random inputs, L = 130 over chunks of 64`, () => {
      const r = rng(order === 'fma' ? 5 : 6);
      const L = 130, dk = 16, dv = 8;
      const rand = (n: number, s: number) => Float32Array.from({ length: n }, () => f((r() * 2 - 1) * s));
      expectSame({
        L, dk, dv, C: 64, q: rand(L * dk, 0.3), k: rand(L * dk, 0.3), v: rand(L * dv, 2),
        g: Float32Array.from({ length: L }, () => f(-r() * 0.3)), beta: Float32Array.from({ length: L }, () => f(r())),
        state: rand(dk * dv, 1),
      }, order);
    });
  }

  it('all-zero inputs of mixed signs: the signs of the zero outputs and states are the dense kernel\'s', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const c = chipLikeCase(seed, 9, 4, 3, 4, 1);
      c.q.fill(0); c.k.fill(0);
      const r = rng(seed);
      for (const a of [c.q, c.k, c.v, c.state]) for (let i = 0; i < a.length; i++) a[i] = r() < 0.5 ? 0 : -0;
      for (const order of ['sequential', 'fma'] as const) expectSame(c, order);
    }
  });
});

describe('chunkGatedDeltaRuleSparse: refuses what it cannot skip exactly', () => {
  it('a non-finite input, or a value that overflows inside the chunk, gives null and leaves the state alone', () => {
    const base = chipLikeCase(3, 20, 8, 4, 7, 0.5);
    const cases: Case[] = [];
    for (const name of ['v', 'state', 'q'] as const) {
      const c = { ...base, [name]: base[name].slice() };
      c[name][5] = name === 'q' ? NaN : Infinity;
      cases.push(c);
    }
    // finite inputs whose chunk values overflow: v·β and the state update reach ±inf
    cases.push({ ...base, v: base.v.map(() => 3e38), state: base.state.map(() => 3e38) });
    for (const c of cases) {
      const state = c.state.slice();
      const out = chunkGatedDeltaRuleSparse({ ...c, chunkSize: c.C, state, ctx: makeTestContext('sequential') }, 'sequential');
      expect(out).toBeNull();
      expect(Array.from(bits(state))).toEqual(Array.from(bits(c.state)));
    }
  });

  it('checks its arguments as the dense kernel does (exec.gdn-chunk-input)', () => {
    const c = chipLikeCase(5, 10, 8, 4, 4, 0.5);
    const args = { ...c, chunkSize: c.C, state: c.state.slice(), ctx: makeTestContext('sequential') };
    for (const bad of [{ v: c.v.subarray(1) }, { L: 11 }, { chunkSize: 0 }, { state: new Float32Array(3) }]) {
      expect(() => chunkGatedDeltaRuleSparse({ ...args, ...bad }, 'sequential')).toThrow(expect.objectContaining({ code: 'exec.gdn-chunk-input' }));
    }
  });

  it('shuffled order and the inverse variant are left to the dense kernel', () => {
    const c = chipLikeCase(4, 10, 8, 4, 4, 0.5);
    const args = { ...c, chunkSize: c.C, state: c.state.slice(), ctx: makeTestContext({ shuffleSeed: 1 }) };
    expect(chunkGatedDeltaRuleSparse(args, 'shuffled')).toBeNull();
    expect(chunkGatedDeltaRuleSparse({ ...args, ctx: makeTestContext('sequential'), variant: 'inverse' }, 'sequential')).toBeNull();
  });
});
