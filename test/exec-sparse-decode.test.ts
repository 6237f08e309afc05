/**
 * The sparse decode fast paths of the executor are bit-identical to the plain math:
 *  - gdn-sparse-step.ts recurrentStepSparse (tracked state kind, sparse k/q, untouched rows, skipped decay)
 *    against recurrentStep in sequential order without its skip, on states full of ±0, tiny,
 *    huge and non-finite values, and the kind it reports is true of the state it leaves;
 *  - matmul-plans.ts per-matrix plan (empty rows, dense rows without −0) against the dense path;
 *  - numeric.ts roundBf16's shortcut and silu32(±0) against the plain formulas;
 *  - gdn-tracked.ts's gated norm (entries recomputed where o or z moved while the head's sum of
 *    squares stays) and its β = ±0 heads passed over, against the full step, on pinned
 *    write-then-read heads; the tracked step in bf16 (its casts) on those and on random layers;
 *  - whole executors: sparse vs dense path on compiled example circuits and on a random model with
 *    unused heads, with the live GDN state written through gdnState() between decode steps.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { gdnStepCase } from './helpers/gdn-step-cases.ts';
import { Executor, argmax } from '../src/exec/executor.ts';
import { gdnForward, recurrentStep } from '../src/exec/gdn.ts';
import { gdnConvedSnapshot } from '../src/exec/gdn-tracked.ts';
import { gdnDimsOf, newGdnCache, type GdnCache } from '../src/exec/gdn-cache.ts';
import {
  beyondVBound, classifyState, newKvMemo, newSparseStepScratch, recurrentStepSparse, STATE_ANY, STATE_CLEAN, STATE_POS, STATE_ZERO,
} from '../src/exec/gdn-sparse-step.ts';
import { linearEx, newMatmulStats, type MatmulStats } from '../src/exec/matmul.ts';
import { wasmHeapOf } from '../src/exec/delta.ts';
import { exp32, makeNumericContext, roundBf16, silu32, siluFormula } from '../src/exec/numeric.ts';
import { convOutput } from '../src/exec/gdn-token.ts';
import { attentionStep, KvCache, ropeInvFreq } from '../src/exec/attention.ts';
import { bf16ToF32, f32ToBf16 } from '../src/safetensors/dtype.ts';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { densifyMatrix, randomModelWeights, sparsifyMatrix } from '../src/model/random-weights.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { GdnWeights, Matrix, ModelWeights } from '../src/model/weights.ts';
import { turn } from './helpers/turn.ts';
import { lcg, sparseRandomModel } from './helpers/random-models.ts';

/** Bit patterns, with every NaN mapped to one value (NaN payloads are not part of the contract). */
const bits = (a: Float32Array): number[] =>
  Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));

const ctx = makeNumericContext({});

describe('recurrentStepSparse', () => {
  const caseArb = gdnStepCase(fc.record({ dk: fc.integer({ min: 1, max: 5 }), dv: fc.integer({ min: 1, max: 4 }) }));

  it('is bit-identical to recurrentStep (sequential, no skip) and reports a true state kind', () => {
    const seen = new Set<string>();
    fc.assert(fc.property(caseArb, fc.boolean(), ({ dk, dv, S, q, k, v, g, beta }, conservativeRows) => {
      const Sa = new Float32Array(S);
      const Sb = Sa.slice();
      const qa = new Float32Array(q), ka = new Float32Array(k), va = new Float32Array(v);
      const oa = new Float32Array(dv), ob = new Float32Array(dv);
      recurrentStep(ctx, dk, dv, Sa, qa, 0, ka, 0, va, 0, g, beta, oa, 0, false);
      const rows = new Uint8Array(dk);
      const kindIn = classifyState(Sb, rows);
      if (conservativeRows) rows.fill(1); // "may be non-zero" for every row is also true
      const kindOut = recurrentStepSparse(dk, dv, Sb, kindIn, rows, qa, 0, ka, 0, va, 0, g, beta, ob, 0, newSparseStepScratch(dk, dv));
      expect(bits(Sb)).toEqual(bits(Sa));
      expect(bits(ob)).toEqual(bits(oa));
      const truthRows = new Uint8Array(dk);
      const truth = classifyState(Sb, truthRows);
      if (kindOut === STATE_ZERO) expect(truth).toBe(STATE_ZERO);
      if (kindOut === STATE_CLEAN) expect(truth).not.toBe(STATE_ANY);
      // a state reported free of sign bits is (+0 and positive finite entries only)
      if (kindOut === STATE_POS) expect([STATE_POS, STATE_ZERO]).toContain(truth);
      // a row reported all +0 is all +0
      for (let i = 0; i < dk; i++) if (!rows[i]) expect(truthRows[i]).toBe(0);
      seen.add(`${kindIn}>${kindOut}`);
    }), { numRuns: 3000 });
    // every kind was exercised on the way in and on the way out
    for (const key of [`${STATE_ZERO}>${STATE_ZERO}`, `${STATE_CLEAN}>${STATE_CLEAN}`, `${STATE_ANY}>${STATE_ANY}`, `${STATE_ZERO}>${STATE_CLEAN}`,
      `${STATE_POS}>${STATE_POS}`, `${STATE_ZERO}>${STATE_POS}`]) {
      expect(seen.has(key)).toBe(true);
    }
  });

  it('hand case: all-zero state, one-hot key, exp(g) = 1 (a pinned RAM write, then a read)', () => {
    // dk = 3, dv = 2; k = e₁·2, v = (3, −0), β = 1, g = −0 (exp = 1), q = (−0, 4, −0).
    // kv_j: terms +0·k_i → +0 for k₁ = 2 > 0, so kv = +0; δ = (3 − 0, −0 − +0) = (3, −0);
    // row 1 becomes (+0 + 6, +0 + (2·−0 = −0)) = (6, +0); other rows unchanged (+0).
    // o_j = Σ S_ij·q_i: o₀ = 6·4 = 24; o₁: terms (+0·−0, +0·4, +0·−0) = (−0, +0, −0) → +0.
    const S = new Float32Array(6);
    const o = new Float32Array(2);
    const kind = recurrentStepSparse(3, 2, S, STATE_ZERO, new Uint8Array(3), new Float32Array([-0, 4, -0]), 0, new Float32Array([0, 2, -0]), 0,
      new Float32Array([3, -0]), 0, -0, 1, o, 0, newSparseStepScratch(3, 2));
    expect(Array.from(S)).toEqual([0, 0, 6, 0, 0, 0]);
    expect(Object.is(S[3], 0)).toBe(true);
    expect(o[0]).toBe(24);
    expect(Object.is(o[1], 0)).toBe(true);
    expect(kind).toBe(STATE_POS); // S holds +0 and 6 only
    // all-zero state, zero key, q all sign-bit-set: o = −0 (every term +0·(−x) = −0), state untouched
    const S2 = new Float32Array(6);
    const o2 = new Float32Array(2);
    const kind2 = recurrentStepSparse(3, 2, S2, STATE_ZERO, new Uint8Array(3), new Float32Array([-1, -0, -2]), 0, new Float32Array([0, -0, 0]), 0,
      new Float32Array([5, 5]), 0, -1, 1, o2, 0, newSparseStepScratch(3, 2));
    expect(kind2).toBe(STATE_ZERO);
    expect(bits(S2)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Object.is(o2[0], -0) && Object.is(o2[1], -0)).toBe(true);
  });

  it('tracked steps (kv memo, qSame): sequences of steps equal recurrentStep, both early returns included', () => {
    // A head stepped repeatedly as the tracked decode does: q and k each often repeat (both: the
    // memo's `same`; k alone: `kSame`, a read whose row moved while the write stays; q alone:
    // `qSame`, a RAM whose read row stays while a shared write row moves),
    // v and β change (written or masked), k is one-hot or all ±0, now and then g decays S or v is
    // not finite or huge (S then grows past the β = ±0 shortcut's bound, where v_j − kv_j can
    // overflow). Each step runs recurrentStepSparse with a memo and the bound, and recurrentStep on
    // a copy; o and S must be bit-identical whichever shortcut returned.
    let early = 0;
    let reused = 0;
    let betaZero = 0;
    let queryAlone = 0;
    let betaZeroMoved = 0;
    let steps = 0;
    const dkv = fc.constantFrom(2, 3, 4);
    fc.assert(fc.property(dkv, dkv, fc.integer({ min: 0, max: 2 ** 31 - 1 }), (dk, dv, seed) => {
      let s = seed >>> 0;
      const rnd = (): number => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 4294967296; };
      const pick = <T,>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
      const Sa = new Float32Array(dk * dv);
      const Sb = Sa.slice();
      const rows = new Uint8Array(dk);
      const sMax = new Float64Array(1);
      let kind = classifyState(Sb, rows, sMax, 0);
      const memo = newKvMemo(1, dv);
      const scratch = newSparseStepScratch(dk, dv);
      const oa = new Float32Array(dv), ob = new Float32Array(dv);
      let q = new Float32Array(dk), k = new Float32Array(dk);
      let prevModified = true;
      let first = true;
      for (let step = 0; step < 24; step++) {
        const keepQ = !first && rnd() < 0.7;
        const keepK = !first && rnd() < 0.6;
        if (!keepQ) q = Float32Array.from({ length: dk }, () => pick([0, -0, 0, 4, -0, 1]));
        if (!keepK) {
          const hot = Math.floor(rnd() * (dk + 1)); // dk: no hot row (k all ±0)
          k = Float32Array.from({ length: dk }, (_, i) => (i === hot ? pick([1, 1, 0.5, Infinity]) : pick([0, -0])));
        }
        const huge = rnd() < 0.1;
        const v = Float32Array.from({ length: dv }, () => (huge ? pick([3e38, -3e38, 1e38]) : pick([-0, -0, 181, 3, rnd() < 0.05 ? NaN : 181])));
        const beta = pick([0, 0, -0, 1, 0.5]);
        const g = rnd() < 0.1 ? -1 : -0;
        recurrentStep(ctx, dk, dv, Sa, q, 0, k, 0, v, 0, g, beta, oa, 0, false);
        const same = keepQ && keepK && !prevModified;
        const kSame = keepK && !prevModified;
        const validBefore = memo.valid[0] === 1;
        if (keepQ && beta === 0 && g === 0 && kind !== STATE_ANY) betaZero++;
        if (!keepQ && !first && beta === 0 && g === 0 && kind !== STATE_ANY) betaZeroMoved++;
        kind = recurrentStepSparse(dk, dv, Sb, kind, rows, q, 0, k, 0, v, 0, g, beta, ob, 0, scratch, memo, 0, same, keepQ, sMax, kSame);
        prevModified = scratch.modified[0] === 1;
        // the bound stays a bound
        if (kind !== STATE_ANY) for (const x of Sb) expect(Math.abs(x)).toBeLessThanOrEqual(sMax[0]!);
        expect(bits(Sb)).toEqual(bits(Sa));
        expect(bits(ob)).toEqual(bits(oa));
        if (same && validBefore && memo.valid[0] === 1 && !prevModified) early++;
        if (kSame && !keepQ && validBefore && memo.valid[0] === 1 && !prevModified) queryAlone++;
        if (keepQ && !keepK && !prevModified) reused++;
        steps++;
        first = false;
      }
    }), { numRuns: 400, seed: 28 });
    expect(steps).toBe(400 * 24);
    // (seeded: 473, 486 and 1,138 of them over 9,600 steps)
    expect(early).toBeGreaterThan(300); // the memo's path ran
    expect(queryAlone).toBeGreaterThan(100); // and with a moved query, the output dots alone (191 with the seed)
    expect(reused).toBeGreaterThan(250); // and the output was kept with a moved key
    expect(betaZero).toBeGreaterThan(400); // steps the β = ±0 shortcut may take (about 1,000)
    expect(betaZeroMoved).toBeGreaterThan(200); // and with a moved query, where it computes the output dots (483)
  });

  it('classifyState: +0 only → ZERO; any −0 or non-finite → ANY; +0 and positive → POS; else CLEAN', () => {
    expect(classifyState(new Float32Array([0, 0]))).toBe(STATE_ZERO);
    expect(classifyState(new Float32Array([0, 1.5]))).toBe(STATE_POS);
    expect(classifyState(new Float32Array([0, -1.5, 2]))).toBe(STATE_CLEAN);
    expect(classifyState(new Float32Array([-(2 ** -140)]))).toBe(STATE_CLEAN);
    expect(classifyState(new Float32Array([1, -0]))).toBe(STATE_ANY);
    expect(classifyState(new Float32Array([1, Infinity]))).toBe(STATE_ANY);
    expect(classifyState(new Float32Array([NaN, 0]))).toBe(STATE_ANY);
  });
});

describe('sparse linear plan', () => {
  it('dense+CSR rows without −0 need no dense fallback; rows with −0 still get it; bits match the dense path', () => {
    // row 0: dense has no −0 (CSR rule applies); row 1 is all zero with a −0 (dense fallback);
    // row 2 empty, all +0.
    const dense = new Float32Array([2, 0, 0, 0, -0, 0, 0, 0, 0]);
    const m: Matrix = { rows: 3, cols: 3, dense, csr: sparsifyMatrix({ rows: 3, cols: 3, dense }).csr };
    for (const x of [[-0, -0, -0], [-0, 1, -0], [3, -0, -0], [-1, -2, -3]]) {
      const xs = new Float32Array(x);
      const stats = newMatmulStats();
      const s = linearEx(ctx, m, xs, 'sparse', { stats });
      expect(s.usedSparse).toBe(true);
      expect(bits(s.out)).toEqual(bits(linearEx(ctx, { rows: 3, cols: 3, dense }, xs, 'dense').out));
      expect(stats.denseRowFallbacks).toBeLessThanOrEqual(1);
    }
    // x all −0: row 1's terms are (+0·−0, −0·−0, +0·−0) = (−0, +0, −0) → +0, row 2's all −0 → −0
    const r = linearEx(ctx, m, new Float32Array([-0, -0, -0]), 'sparse').out;
    expect(Object.is(r[0], -0)).toBe(true);
    expect(Object.is(r[1], 0)).toBe(true);
    expect(Object.is(r[2], -0)).toBe(true);
  });
});

describe('numeric shortcuts', () => {
  it('roundBf16 equals bf16ToF32(f32ToBf16(x)) on random and special bit patterns', () => {
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    const check = (b: number): void => {
      u[0] = b >>> 0;
      const x = f[0];
      const want = bf16ToF32(f32ToBf16(x));
      const got = roundBf16(x);
      if (Number.isNaN(want)) expect(Number.isNaN(got)).toBe(true);
      else expect(Object.is(got, want)).toBe(true);
    };
    for (const b of [0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0x3f800000, 0x3f808000, 0x3f818000,
      0x3f807fff, 0x00010000, 0x00008000, 0x7f7fffff, 0x80018000]) check(b);
    fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.boolean(), (b, lowZero) => check(lowZero ? b & 0xffff0000 : b)), { numRuns: 20000 });
  });

  it('exp32 equals fl(Math.exp(x)) across its underflow shortcut (x < −104 → +0)', () => {
    for (let i = 0; i <= 4000; i++) {
      const x = Math.fround(-80 - i * 0.01);
      expect(Object.is(exp32(x), Math.fround(Math.exp(x)))).toBe(true);
    }
    expect(exp32(-90)).toBeGreaterThan(0);
    expect(Object.is(exp32(-Infinity), 0)).toBe(true);
    expect(Number.isNaN(exp32(NaN))).toBe(true);
  });

  it('silu32(±0) = ±0 in both forms', () => {
    for (const form of ['mul', 'div'] as const) {
      expect(Object.is(silu32(0, form), 0)).toBe(true);
      expect(Object.is(silu32(-0, form), -0)).toBe(true);
      // the plain formulas give the same: ±0·fl(1/fl(1+1)), ±0/2
      expect(Object.is(Math.fround(-0 * 0.5), -0) && Object.is(Math.fround(-0 / 2), -0)).toBe(true);
    }
  });

  it('convOutput: SiLU of the fold in f32; in bf16 the fold cast, then SiLU\'s output cast (HF: conv1d in bf16, then the activation in bf16), bit for bit', () => {
    // folds whose bf16 cast moves them (random significands), ±0, saturated and tiny ones
    const rnd = lcg(20261207);
    const ys = [0, -0, 1e-30, -1e-30, 17.5, -90, 3, -2.5, ...Array.from({ length: 400 }, () => Math.fround((rnd() - 0.5) * 2 ** (rnd() * 12 - 4)))];
    let moved = 0;
    for (const form of ['mul', 'div'] as const) {
      for (const y of ys) {
        expect(bits(Float32Array.of(convOutput(y, form, false)))).toEqual(bits(Float32Array.of(silu32(y, form))));
        const want = roundBf16(siluFormula(roundBf16(y), form));
        expect(bits(Float32Array.of(convOutput(y, form, true)))).toEqual(bits(Float32Array.of(want)));
        if (roundBf16(siluFormula(y, form)) !== want) moved++;
      }
    }
    expect(moved).toBeGreaterThan(50); // the cast before SiLU decides the output for many folds
  });
});

describe('attention shortcuts', () => {
  it('zero-query heads and sparse value sums keep −0: all-(−0) values give −0 outputs, as on the dense path', () => {
    // H = Hq·D = 64 with Hq = 2, Hkv = 1, D = 32; o_proj = identity, so out_r = −0 iff every
    // attention output is −0 (row r's terms: 1·a_r and +0·a_c for c ≠ r, each −0 iff a is).
    // x has every sign bit set, v_proj and k_proj have no entries → k = v = −0 everywhere;
    // head 0's query has non-zero entries (a used head), head 1's none (an unused head). Every
    // score is ±0, p is uniform (> 0), so every a_d = Σ_j p·(−0) = −0 and gate = sigmoid(±0) = 0.5.
    const cfg = { ...resolveTarget('tiny').config, numAttentionHeads: 2, numKeyValueHeads: 1, headDim: 32 };
    const H = 64, D = 32;
    const empty = (rows: number, cols: number): Matrix => ({ rows, cols, csr: { rowPtr: new Uint32Array(rows + 1), colIdx: new Uint32Array(0), values: new Float32Array(0) } });
    const qRows = [3, 12, 20]; // head 0 query rows (not its gate rows 32..63)
    const qRowPtr = new Uint32Array(2 * 2 * D + 1);
    for (let r = 0; r < 2 * 2 * D; r++) qRowPtr[r + 1] = qRowPtr[r] + (qRows.includes(r) ? 1 : 0);
    const qProj: Matrix = { rows: 2 * 2 * D, cols: H, csr: { rowPtr: qRowPtr, colIdx: new Uint32Array(qRows.map((_, i) => i)), values: new Float32Array([2, -1, 0.5]) } };
    const oProj: Matrix = { rows: H, cols: H, csr: { rowPtr: Uint32Array.from({ length: H + 1 }, (_, i) => i), colIdx: Uint32Array.from({ length: H }, (_, i) => i), values: new Float32Array(H).fill(1) } };
    const w = { kind: 'full_attention' as const, qProj, kProj: empty(D, H), vProj: empty(D, H), oProj, qNorm: new Float32Array(D), kNorm: new Float32Array(D) };
    const x = new Float32Array(H).map((_, i) => (i % 2 ? -1 - i : -0));
    const rope = ropeInvFreq(cfg);
    for (const profile of ['f32', 'bf16'] as const) {
      const c = makeNumericContext({ profile });
      const cs = new KvCache(D), cd = new KvCache(D);
      for (let pos = 0; pos < 4; pos++) {
        const s = attentionStep(c, cfg, w, cs, x, pos, rope, 'sparse', true);
        const d = attentionStep(c, cfg, w, cd, x, pos, rope, 'dense', true);
        expect(bits(s.out)).toEqual(bits(d.out));
        expect(s.probs!.map(bits)).toEqual(d.probs!.map(bits));
        for (const v of s.out) expect(Object.is(v, -0)).toBe(true);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// the tracked GDN step: gated norm and β = ±0 heads

const TINY = resolveTarget('tiny').config;
const TINY_GDN = gdnDimsOf(TINY);

/**
 * A `tiny` GDN layer with CSR weights set by `fill` (dense [rows, H] arrays of in_proj's qkv, z and
 * b rows, b read as β = fl(sigmoid(b))), a single-tap conv (the current input), no decay (a_log =
 * dt_bias = −200: g = −0), no a rows, norm weights `norm` and out_proj 0.5 on a diagonal.
 */
function tinyGdnLayer(fill: { qkv: (m: Float32Array) => void; z: (m: Float32Array) => void; b: (m: Float32Array) => void }, norm: Float32Array): { w: GdnWeights; H: number } {
  const d = TINY_GDN;
  const H = TINY.hiddenSize;
  const { keyDim, valueDim, hv, K } = d;
  const mat = (rows: number, set: (dense: Float32Array) => void, cols = H): Matrix => {
    const dense = new Float32Array(rows * cols);
    set(dense);
    return { rows, cols, csr: sparsifyMatrix({ rows, cols, dense }).csr };
  };
  const conv1d = new Float32Array(d.convDim * K);
  for (let c = 0; c < d.convDim; c++) conv1d[c * K + K - 1] = 1;
  return {
    w: {
      kind: 'linear_attention', inProjQkv: mat(2 * keyDim + valueDim, fill.qkv), inProjZ: mat(valueDim, fill.z),
      inProjB: mat(hv, fill.b), inProjA: mat(hv, () => {}), conv1d,
      aLog: new Float32Array(hv).fill(-200), dtBias: new Float32Array(hv).fill(-200), norm,
      outProj: mat(H, (m) => { for (let i = 0; i < H; i++) m[i * valueDim + (i % valueDim)] = 0.5; }, valueDim),
    },
    H,
  };
}

/**
 * A layer whose every value head writes its v into state row 0 (k = e_0, β = 1) and reads row 0
 * back (q = e_0), so its output o is the v that input dims 1…16 select — the sum of squares of o
 * stays while one hot entry moves, and moves with their count — and whose gate z is 20 plus 5
 * where input dims 17…20 select (z moves alone when only that selector does). `switchedWrite`:
 * β = 1 only where input dim 21 is 1, else fl(sigmoid(−200)) = +0 (the head then keeps the row it
 * holds, and its output stays while v, z or nothing moves).
 */
function pinnedNormLayer(switchedWrite = false): { w: GdnWeights; H: number } {
  const H = TINY.hiddenSize;
  const { keyDim, valueDim, hk, hv, dk, dv } = TINY_GDN;
  return tinyGdnLayer({
    qkv: (m) => {
      for (let kh = 0; kh < hk; kh++) { m[(kh * dk) * H] = 1; m[(keyDim + kh * dk) * H] = 1; } // q = k = e_0
      for (let c = 0; c < valueDim; c++) m[(2 * keyDim + c) * H + 1 + (c % dv)] = 1; // v_j = x_{1+j}
    },
    z: (m) => { for (let c = 0; c < valueDim; c++) { m[c * H] = 20; m[c * H + 17 + (c % 4)] = 5; } },
    // β = fl(sigmoid(30)) = 1; switched, fl(sigmoid(−200 + 230·x_21)): 1 or +0
    b: (m) => {
      for (let h = 0; h < hv; h++) {
        m[h * H] = switchedWrite ? -200 : 30;
        if (switchedWrite) m[h * H + 21] = 230;
      }
    },
  }, Float32Array.from({ length: dv }, (_, j) => 1 + j / 8));
}

/**
 * Runs `xs` through the layer twice — the tracked decode step (sparse path) and the full step
 * (dense path), each on a cache and numeric context of its own, in `profile` — and expects the
 * same output bits at every step and the same states after; `afterStep` sees the tracked cache
 * after each step. Returns the tracked steps' stats.
 */
function trackedAgainstFull(
  w: GdnWeights, xs: Float32Array[], afterStep?: (tracked: GdnCache) => void, aliasAt = 1, profile: 'f32' | 'bf16' = 'f32',
): MatmulStats {
  // the tracked step twice: on a wasm memory (its kernels: wasm-gdn-kernels.ts) and without one;
  // repeated conv blocks run through their representatives from the track's step `aliasAt` on
  const tctx = makeNumericContext({ profile, tuning: { aliasConvBlocks: aliasAt } });
  const tracked = newGdnCache(TINY_GDN, wasmHeapOf(tctx));
  const jctx = makeNumericContext({ profile, tuning: { wasmHeapMiB: 0, aliasConvBlocks: aliasAt } });
  const trackedJs = newGdnCache(TINY_GDN);
  const full = newGdnCache(TINY_GDN);
  const fctx = makeNumericContext({ profile });
  const stats = newMatmulStats();
  for (const x of xs) {
    const a = gdnForward(tctx, TINY, w, tracked, [x], 'decode', 'sparse', false, stats);
    const j = gdnForward(jctx, TINY, w, trackedJs, [x], 'decode', 'sparse', false);
    const b = gdnForward(fctx, TINY, w, full, [x], 'decode', 'dense', false);
    expect(bits(a.out[0]!)).toEqual(bits(b.out[0]!));
    expect(bits(j.out[0]!)).toEqual(bits(b.out[0]!));
    afterStep?.(tracked);
    afterStep?.(trackedJs);
  }
  for (let h = 0; h < TINY_GDN.hv; h++) {
    expect(bits(tracked.S[h]!)).toEqual(bits(full.S[h]!));
    expect(bits(trackedJs.S[h]!)).toEqual(bits(full.S[h]!));
  }
  return stats;
}

describe('tracked GDN step: gated norm', () => {
  it('outputs whose hot entry moves at a constant sum of squares, and z moving alone, give the full step\'s bits', () => {
    const { w, H } = pinnedNormLayer();
    // per step: the hot v entry, a second one (−1: none; o's sum of squares then moves) and z's selector
    const step = fc.tuple(fc.integer({ min: 0, max: 15 }), fc.integer({ min: -1, max: 15 }), fc.integer({ min: 0, max: 3 }));
    fc.assert(fc.property(fc.array(step, { minLength: 2, maxLength: 14 }), (steps) => {
      const stats = trackedAgainstFull(w, steps.map(([v, v2, z]) => {
        const x = new Float32Array(H);
        x[0] = 1;
        x[1 + v] = 1;
        if (v2 >= 0) x[1 + v2] = 1;
        x[17 + z] = 1;
        return x;
      }));
      // the steps after the first ran the tracked step (its head steps are counted)
      expect(stats.gdnHeadSteps).toBeGreaterThan(0);
    }), { numRuns: 60, seed: 28 });
  });

  it('heads that keep their output while z moves (no write), and writes that move it, give the full step\'s bits', () => {
    const { w, H } = pinnedNormLayer(true);
    // per step: the hot v entry, z's selector, whether the head writes
    const step = fc.tuple(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 2 }).map((x) => x === 0));
    fc.assert(fc.property(fc.array(step, { minLength: 2, maxLength: 14 }), (steps) => {
      trackedAgainstFull(w, steps.map(([v, z, write]) => {
        const x = new Float32Array(H);
        x[0] = 1;
        x[1 + v] = 1;
        x[17 + z] = 1;
        if (write) x[21] = 1;
        return x;
      }));
    }), { numRuns: 80, seed: 28 });
  });
});

/**
 * A layer (q = e_0 at every step) whose inputs set, per step, β (input 21: β = 1, else
 * fl(sigmoid(−200)) = +0), the key (input 22: k = e_1, else e_0), v's hot entry (inputs 1…16) and
 * whether v overflows (inputs 23 and 24: every v_j = fl(3·10^38 + 3·10^38) = +∞, beyond the β = ±0
 * test's bound, and NaN in the conv's next steps): a β = ±0 step then has δ = NaN, which turns S
 * to NaN, and the step must not be passed over.
 */
function betaZeroLayer(): { w: GdnWeights; H: number } {
  const H = TINY.hiddenSize;
  const { keyDim, valueDim, hk, hv, dk, dv } = TINY_GDN;
  return tinyGdnLayer({
    qkv: (m) => {
      for (let kh = 0; kh < hk; kh++) {
        m[(kh * dk) * H] = 1; // q = e_0, or e_2 with input 26
        m[(kh * dk) * H + 26] = -1;
        m[(kh * dk + 2) * H + 26] = 1;
        // k = e_0, or e_1 with input 22 (from 4,096 = 2^12: l2norm gives exactly 1)
        m[(keyDim + kh * dk) * H] = 4096;
        m[(keyDim + kh * dk) * H + 22] = -4096;
        m[(keyDim + kh * dk + 1) * H + 22] = 4096;
      }
      for (let c = 0; c < valueDim; c++) {
        m[(2 * keyDim + c) * H + 1 + (c % dv)] = 1;
        m[(2 * keyDim + c) * H + 23] = 3e38;
        m[(2 * keyDim + c) * H + 24] = 3e38;
      }
    },
    z: (m) => { for (let c = 0; c < valueDim; c++) m[c * H] = 20; },
    b: (m) => { for (let h = 0; h < hv; h++) { m[h * H] = -200; m[h * H + 21] = 230; } },
  }, new Float32Array(dv).fill(1));
}

/**
 * A layer whose heads repeat each other (conv-alias.ts): q of both key heads and k of key head 0
 * are the same one-hot rows (q = k = e_i for the first of inputs 25…28 that is set; +0 when none),
 * k of key head 1 is e_0; value heads 0, 1 and 2 have v_j = x_{1+j}, head 3 twice that; every
 * head writes where input 21 is 1 (else β = +0); z = 20.
 */
function aliasedLayer(): { w: GdnWeights; H: number } {
  const H = TINY.hiddenSize;
  const { keyDim, valueDim, hk, hv, dk, dv } = TINY_GDN;
  return tinyGdnLayer({
    qkv: (m) => {
      for (let kh = 0; kh < hk; kh++) {
        for (let i = 0; i < 4; i++) m[(kh * dk + i) * H + 25 + i] = 1;
        if (kh === 0) for (let i = 0; i < 4; i++) m[(keyDim + i) * H + 25 + i] = 1;
        else m[(keyDim + kh * dk) * H] = 1;
      }
      for (let c = 0; c < valueDim; c++) m[(2 * keyDim + c) * H + 1 + (c % dv)] = c >= 3 * dv ? 2 : 1;
    },
    z: (m) => { for (let c = 0; c < valueDim; c++) m[c * H] = 20; },
    b: (m) => { for (let h = 0; h < hv; h++) { m[h * H] = -200; m[h * H + 21] = 230; } },
  }, new Float32Array(dv).fill(1));
}

describe('tracked GDN step: aliased conv blocks', () => {
  it('heads that repeat another\'s q, k or v read it through their representative: the full step\'s bits, and the blocks aliased (from the first step, and from the third)', () => {
    const { w, H } = aliasedLayer();
    const { hk } = TINY_GDN;
    // per step: the query / key selector (−1: none), v's hot entry, whether the heads write
    const step = fc.tuple(fc.integer({ min: -1, max: 3 }), fc.integer({ min: 0, max: 15 }), fc.boolean());
    let aliasedSteps = 0;
    fc.assert(fc.property(fc.array(step, { minLength: 2, maxLength: 16 }), fc.constantFrom(1, 3), (steps, aliasAt) => {
      trackedAgainstFull(w, steps.map(([sel, v, write]) => {
        const x = new Float32Array(H);
        x[0] = 1;
        x[1 + v] = 1;
        if (sel >= 0) x[25 + sel] = 1;
        if (write) x[21] = 1;
        return x;
      }), (tracked) => {
        const a = tracked.track?.alias;
        // set up by the step aliasAt (1: the track's first), not before
        if (tracked.track !== undefined) expect(a !== null).toBe(tracked.track.step >= aliasAt);
        if (!a) return;
        aliasedSteps++;
        // q head 1 and k head 0 repeat q head 0; k head 1 does not; value heads 1, 2 repeat head 0
        expect(Array.from(a.keyBlocks)).toEqual([1, hk]);
        expect(Array.from(a.keyReps)).toEqual([0, 0]);
        expect(Array.from(a.valueBlocks)).toEqual([1, 2]);
        expect(Array.from(a.valueReps)).toEqual([0, 0]);
        expect(a.complete).toBe(true);
      }, aliasAt);
    }), { numRuns: 80, seed: 33 });
    expect(aliasedSteps).toBeGreaterThan(200);
  });
});

describe('tracked GDN step: β = ±0 heads', () => {
  const d = TINY_GDN;
  const { w, H } = betaZeroLayer();
  /** [v's hot entry, β = 1, k = e_1, v = +∞] per step. */
  type Step = [number, boolean, boolean, boolean];
  /** trackedAgainstFull on the steps, the track's bound counts checked after each; returns the heads passed over. */
  const compare = (steps: Step[]): number => trackedAgainstFull(w, steps.map(([v, beta1, k1, inf]) => {
    const x = new Float32Array(H);
    x[0] = 1;
    x[1 + v] = 1;
    if (beta1) x[21] = 1;
    if (k1) x[22] = 1;
    if (inf) { x[23] = 1; x[24] = 1; }
    return x;
  }), (tracked) => {
    // the track's count of each head's v entries beyond the bound is a count of the conv outputs
    // (an aliased block's: its representative's, conv-alias.ts)
    const convedBits = new Uint32Array(gdnConvedSnapshot(tracked)!.buffer);
    for (let h = 0; h < d.hv; h++) {
      let n = 0;
      for (let j = 0; j < d.dv; j++) n += beyondVBound(convedBits[2 * d.keyDim + h * d.dv + j]!);
      expect(tracked.track!.vBeyond[h]).toBe(n);
    }
  }).gdnHeadsBetaZero;

  it('a write, a β = ±0 step that overflows v (δ = NaN), and a kv memo of a key that has since moved', () => {
    // v = +∞ under β = ±0: fl(v − kv)·(±0) is NaN, and the full step turns S to NaN
    expect(compare([[3, true, false, false], [3, false, false, true], [4, true, false, false]])).toBe(0);
    // the second step rewrites the row it holds (δ = ±0: S kept, the kv memo of k = e_0 valid); the
    // third, β = ±0 with k = e_1, is passed over and must drop that memo, for the fourth (k = e_1
    // again, same v) would find δ = ±0 in it and keep S where row 1's kv = +0 gives δ = v
    expect(compare([[3, true, false, false], [3, true, false, false], [3, false, true, false], [3, true, true, false]])).toBeGreaterThan(0);
  });

  it('a read (β = ±0, the query moved) under a key that has since moved drops the kv memo of the old key', () => {
    // [v's hot entry, β = 1, k = e_1, q = e_2] per step: the second step rewrites the row it holds
    // (the kv memo of k = e_0 valid); the third reads with q = e_2 at β = ±0 and k = e_1 (S and
    // the memo's key unchanged by it: the memo must go); the fourth writes with k = e_1 again and
    // the same v, where row 1's kv = +0 gives δ = v (a memo kept from e_0 would give δ = ±0)
    const steps: [number, boolean, boolean, boolean][] = [[3, true, false, false], [3, true, false, false], [3, false, true, true], [3, true, true, false]];
    const stats = trackedAgainstFull(w, steps.map(([v, beta1, k1, q2]) => {
      const x = new Float32Array(H);
      x[0] = 1;
      x[1 + v] = 1;
      if (beta1) x[21] = 1;
      if (k1) x[22] = 1;
      if (q2) x[26] = 1;
      return x;
    }));
    expect(stats.gdnHeadSteps).toBeGreaterThan(0);
  });

  it('the bound on B·Σ|k_i|: a head holding 2^125 is passed over under a one-hot k (Σ|k_i| = 1), not under one of two entries (Σ|k_i| = √2)', () => {
    const { keyDim, valueDim, hk, hv, dk, dv } = d;
    // q = e_0; k = e_0, or fl(l2norm(e_0 + e_1)) with input 26; v_j = x_{1+j} + 2^125·x_25; β = 1 with input 21, else +0
    const { w: layer } = tinyGdnLayer({
      qkv: (m) => {
        for (let kh = 0; kh < hk; kh++) {
          m[(kh * dk) * H] = 1;
          m[(keyDim + kh * dk) * H] = 4096;
          m[(keyDim + kh * dk + 1) * H + 26] = 4096;
        }
        for (let c = 0; c < valueDim; c++) { m[(2 * keyDim + c) * H + 1 + (c % dv)] = 1; m[(2 * keyDim + c) * H + 25] = 2 ** 125; }
      },
      z: (m) => { for (let c = 0; c < valueDim; c++) m[c * H] = 20; },
      b: (m) => { for (let h = 0; h < hv; h++) { m[h * H] = -200; m[h * H + 21] = 230; } },
    }, new Float32Array(dv).fill(1));
    const input = (...on: number[]): Float32Array => { const x = new Float32Array(H); x[0] = 1; for (const i of on) x[i] = 1; return x; };
    // a write of 2^125 into row 0 (B = 2^125), then a β = ±0 step with the same q
    const oneHot = trackedAgainstFull(layer, [input(25, 21), input(3)]);
    expect(oneHot.gdnHeadsBetaZero).toBe(hv); // 2^125·1 ≤ 2^125
    const twoEntries = trackedAgainstFull(layer, [input(25, 21), input(3, 26)]);
    expect(twoEntries.gdnHeadsBetaZero).toBe(0); // 2^125·√2 > 2^125: the head steps
  });

  it('random steps: passed over only where S and the output provably stay (property)', async () => {
    const step = fc.tuple(fc.integer({ min: 0, max: 15 }), fc.boolean(), fc.boolean(), fc.integer({ min: 0, max: 7 }).map((x) => x === 0));
    let passedOver = 0;
    // (wasm memories a run: a turn of the event loop first, test/helpers/turn.ts)
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 16 }), async (steps) => { await turn(); passedOver += compare(steps); }), { numRuns: 150, seed: 28 });
    expect(passedOver).toBeGreaterThan(0);
  });
});

/** n inputs that repeat, move a few entries or jump: fractional values in [−2, 2), half +0, so bf16's casts round. */
function wanderingInputs(rnd: () => number, H: number, n: number): Float32Array[] {
  const fresh = () => Float32Array.from({ length: H }, () => (rnd() < 0.5 ? 0 : rnd() * 4 - 2));
  const xs: Float32Array[] = [];
  let x = fresh();
  for (let t = 0; t < n; t++) {
    const r = rnd();
    if (r < 0.3) x = x.slice();
    else if (r < 0.85) { x = x.slice(); for (let i = 0; i < 3; i++) x[Math.floor(rnd() * H)] = rnd() < 0.3 ? 0 : rnd() * 4 - 2; }
    else x = fresh();
    xs.push(x);
  }
  return xs;
}

describe('tracked GDN step: bf16', () => {
  it('random layers (fractional weights, decays, multi-tap convs): the tracked step, with and without a wasm memory, gives the full bf16 step\'s bits', () => {
    let headSteps = 0;
    let convChannels = 0;
    for (let seed = 1; seed <= 4; seed++) {
      const model = sparseRandomModel(seed);
      const layer = model.layers.find((l) => l.mixer.kind === 'linear_attention')!.mixer as GdnWeights;
      const H = model.config.hiddenSize;
      const stats = trackedAgainstFull(layer, wanderingInputs(lcg(seed * 7919), H, 24), undefined, 1 + (seed % 3), 'bf16');
      headSteps += stats.gdnHeadSteps;
      convChannels += stats.convChannels;
    }
    // the steps after each first ran the tracked step's parts
    expect(headSteps).toBeGreaterThan(0);
    expect(convChannels).toBeGreaterThan(0);
  });

  it('a cache stepped in f32, then in bf16, then in f32 again starts a fresh track at each change: the full step\'s bits', () => {
    const model = sparseRandomModel(6);
    const layer = model.layers.find((l) => l.mixer.kind === 'linear_attention')!.mixer as GdnWeights;
    const xs = wanderingInputs(lcg(61), model.config.hiddenSize, 30);
    const ctxs = { f32: makeNumericContext({ profile: 'f32' }), bf16: makeNumericContext({ profile: 'bf16' }) };
    const tracked = newGdnCache(TINY_GDN);
    const full = newGdnCache(TINY_GDN);
    const stats = newMatmulStats();
    xs.forEach((x, t) => {
      const c = ctxs[t >= 10 && t < 20 ? 'bf16' : 'f32'];
      const a = gdnForward(c, TINY, layer, tracked, [x], 'decode', 'sparse', false, stats);
      const b = gdnForward(c, TINY, layer, full, [x], 'decode', 'dense', false);
      expect(bits(a.out[0]!)).toEqual(bits(b.out[0]!));
    });
    expect(stats.convChannels).toBeGreaterThan(0);
  });

  it('pinned write-then-read heads and β = ±0 heads in bf16: the full step\'s bits', () => {
    const { w, H } = pinnedNormLayer(true);
    const { w: wb } = betaZeroLayer();
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 3 }), fc.boolean(), fc.boolean()), { minLength: 2, maxLength: 12 }), (steps) => {
      const xs = steps.map(([v, z, write, k1]) => {
        const x = new Float32Array(H);
        x[0] = 1;
        x[1 + v] = 1;
        x[17 + z] = 1;
        if (write) x[21] = 1;
        if (k1) x[22] = 1;
        return x;
      });
      trackedAgainstFull(w, xs, undefined, 1, 'bf16');
      trackedAgainstFull(wb, xs, undefined, 1, 'bf16');
    }), { numRuns: 40, seed: 1207 });
  });
});

// ---------------------------------------------------------------------------------------------
// whole executors

/**
 * A random tiny model, CSR-only, with unused GDN heads (zero q/k/v/z/b/a rows), an unused key head,
 * and dense MLPs with sparse gate / up rows (so that the incremental SwiGLU takes them) whose last
 * third of units have no entry, a compiled chip's layout, while the down projection still stores
 * entries in their columns.
 */
function holedModel(seed: number): ModelWeights {
  const cfg = resolveTarget('tiny').config;
  const w = randomModelWeights(cfg, seed);
  const { linearKeyHeadDim: dk, linearValueHeadDim: dv, linearNumKeyHeads: hk } = cfg;
  const keyDim = hk * dk;
  const zeroRows = (m: Matrix, from: number, to: number): void => { m.dense!.fill(0, from * m.cols, to * m.cols); };
  const csrOnly = (m: Matrix): Matrix => ({ rows: m.rows, cols: m.cols, csr: sparsifyMatrix(densifyMatrix(m)).csr });
  for (const l of w.layers) {
    if (l.mlp.kind === 'dense') {
      const f = l.mlp;
      for (const x of [f.gateProj, f.upProj, f.downProj]) Object.assign(x, densifyMatrix(x));
      const units = f.gateProj.rows;
      // about a fifth of each gate / up row stored, so that the incremental path takes them
      for (const x of [f.gateProj, f.upProj]) for (let k = 0; k < x.dense!.length; k++) if ((k % x.cols + Math.floor(k / x.cols)) % 5 !== 0) x.dense![k] = 0;
      zeroRows(f.gateProj, units - Math.floor(units / 3), units);
      zeroRows(f.upProj, units - Math.floor(units / 3), units);
      Object.assign(f, { gateProj: csrOnly(f.gateProj), upProj: csrOnly(f.upProj), downProj: csrOnly(f.downProj) });
    }
    const m = l.mixer;
    if (m.kind === 'linear_attention') {
      for (const x of [m.inProjQkv, m.inProjZ, m.inProjB, m.inProjA, m.outProj]) Object.assign(x, densifyMatrix(x));
      zeroRows(m.inProjQkv, dk, 2 * dk); // key head 1: q
      zeroRows(m.inProjQkv, keyDim + dk, keyDim + 2 * dk); // key head 1: k (value heads 2, 3 read it)
      zeroRows(m.inProjQkv, 2 * keyDim, 2 * keyDim + dv); // value head 0: v
      zeroRows(m.inProjZ, 0, dv);
      zeroRows(m.inProjB, 0, 1);
      zeroRows(m.inProjA, 0, 1);
      m.aLog[3] = -200; // exp(g) = 1 on head 3
      m.dtBias[3] = -200;
      Object.assign(m, { inProjQkv: csrOnly(m.inProjQkv), inProjZ: csrOnly(m.inProjZ), inProjB: csrOnly(m.inProjB), inProjA: csrOnly(m.inProjA), outProj: csrOnly(m.outProj) });
    } else {
      const D = cfg.headDim;
      for (const x of [m.qProj, m.kProj, m.vProj]) Object.assign(x, densifyMatrix(x));
      zeroRows(m.qProj, 2 * D, 4 * D); // query head 1 (and its gate): reads kv head 0, whose v is not zero
      zeroRows(m.qProj, 6 * D, 8 * D); // query head 3: reads kv head 1
      zeroRows(m.kProj, D, 2 * D); // kv head 1: k and v all zero
      zeroRows(m.vProj, D, 2 * D);
      zeroRows(m.vProj, 5, 9); // kv head 0: value dims 5..8 zero
      Object.assign(m, { qProj: csrOnly(m.qProj), kProj: csrOnly(m.kProj), vProj: csrOnly(m.vProj), oProj: csrOnly(m.oProj) });
    }
  }
  return w;
}

/** Bit patterns of every hook payload, in event order. */
function hookRecorder(ex: Executor): number[][] {
  const rec: number[][] = [];
  ex.addHook((ev) => {
    rec.push([ev.layer, ev.position], bits(ev.residualIn), bits(ev.residualMid), bits(ev.residualOut));
    for (const a of ev.gdnState ?? []) rec.push(bits(a));
    for (const a of ev.attentionProbs ?? []) rec.push(bits(a));
  });
  return rec;
}

/** Runs prefill + decodes on two executors, writing the same values into a live GDN state midway. */
function compareRuns(w: ModelWeights, prompt: number[], steps: number[], profile: 'f32' | 'bf16', write?: { layer: number; head: number; at: number }): void {
  const s = new Executor(w, { path: 'sparse', profile });
  const d = new Executor(w, { path: 'dense', profile });
  const recS = hookRecorder(s);
  const recD = hookRecorder(d);
  const gdnLayers = w.config.layerTypes.flatMap((t, i) => (t === 'linear_attention' ? [i] : []));
  // the reference is taken before any step: writes through it later must be seen
  const liveS = write ? s.gdnState(write.layer, write.head) : null;
  const liveD = write ? d.gdnState(write.layer, write.head) : null;
  const a = s.prefill(prompt, { allLogits: true });
  const b = d.prefill(prompt, { allLogits: true });
  for (let t = 0; t < a.length; t++) expect(bits(a[t])).toEqual(bits(b[t]));
  steps.forEach((id, i) => {
    if (write && i === write.at && liveS && liveD) {
      for (const S of [liveS, liveD]) { S[0] = -0; S[1] = 3; S[5] = -0.25; }
    }
    expect(bits(s.decode(id))).toEqual(bits(d.decode(id)));
  });
  for (const li of gdnLayers) {
    for (let h = 0; h < w.config.linearNumValueHeads; h++) expect(bits(s.gdnState(li, h))).toEqual(bits(d.gdnState(li, h)));
  }
  expect(recS).toEqual(recD);
  expect(recS.length).toBeGreaterThan(0);
  expect(s.stats.dense).toBe(0);
}

describe('sparse vs dense executors', () => {
  it('random model with unused GDN and attention heads: bit-identical logits, states and hook payloads, f32 and bf16, with live-state writes', () => {
    const w = holedModel(3);
    const steps = [5, 9, 100, 3, 3, 511, 0, 42];
    for (const profile of ['f32', 'bf16'] as const) {
      compareRuns(w, [1, 2], steps, profile);
      compareRuns(w, [1], steps, profile, { layer: 0, head: 0, at: 2 });
      compareRuns(w, [7, 8, 9], steps, profile, { layer: 1, head: 2, at: 0 });
    }
  });

  it('compiled example circuits: greedy decode bit-identical to the dense path, f32 and bf16', async () => {
    const tiny = resolveTarget('tiny').config;
    for (const name of ['regfile', 'adder', 'kv']) {
      const ir = await loadCircuitFile(`circuits/examples/${name}.ts`);
      const res = compileCircuit(ir, tiny);
      const bos = ir.bos ?? 0;
      for (const profile of ['f32', 'bf16'] as const) {
        const s = new Executor(res.weights, { path: 'sparse', profile });
        const d = new Executor(res.weights, { path: 'dense', profile });
        let ts = argmax(s.prefill([bos])[0]);
        let td = argmax(d.prefill([bos])[0]);
        let x = 12345;
        for (let i = 0; i < 40; i++) {
          // alternate greedy feedback with pseudo-random ids of the circuit's alphabet (never bos)
          x = (x * 1103515245 + 12345) % 2147483648;
          const id = i % 2 === 0 ? (bos > 0 ? ts % bos : ts) : x % Math.max(bos, 1);
          expect(ts).toBe(td);
          const ls = s.decode(id);
          const ld = d.decode(id);
          expect(bits(ls)).toEqual(bits(ld));
          ts = argmax(ls);
          td = argmax(ld);
        }
        expect(s.stats.dense).toBe(0);
      }
    }
  });
});
