/**
 * FFN gadget library (src/gadgets/ffn.ts) through the real layer math: each gadget's units are
 * the FFN of a one-layer harness model (empty GDN mixer) whose embedding puts the gadget's inputs
 * (functions of the token id) into vdims. Every token of the domain runs in f32 and bf16, in
 * sequential (sparse and dense), shuffled and FMA order (and with the other silu / mean forms),
 * and every vdim's float32 bit pattern is compared with the exact integer computed here by plain
 * arithmetic (inputs unchanged, outputs = the gadget's function, every other vdim +0).
 * Controls: A = 64 and a gate beyond the bf16 window break exactness.
 */
import { describe, expect, it } from 'vitest';
import { buildHarness, runHarness } from './helpers/layer-harness.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { constForm, form, type FfnUnit } from '../src/lower/forms.ts';
import type { ExecOptions } from '../src/exec/types.ts';
import * as F from '../src/gadgets/ffn.ts';
import { rng } from './helpers/numerics-ctx.ts';
import { expectChipcError } from './helpers/assert.ts';

const { input } = F;
const TINY = resolveTarget('tiny').config;

type Vals = [dim: number, value: number][];

interface GadgetCase {
  numDims: number;
  /** Domain: token ids 0 … tokens−1. */
  tokens: number;
  inputs: (t: number) => Vals;
  /** One FFN unit list per layer. */
  layers: FfnUnit[][];
  /** Values of the dims that differ from the inputs after layer `layer` (others keep the input or +0). */
  expected: (t: number, layer: number) => Vals;
  hidden?: number;
}

const ALL_CONFIGS: [string, ExecOptions][] = [
  ['f32 sequential', { profile: 'f32', order: { kind: 'sequential' } }],
  ['bf16 sequential', { profile: 'bf16', order: { kind: 'sequential' } }],
  ['f32 shuffled', { profile: 'f32', order: { kind: 'shuffled', seed: 7 } }],
  ['bf16 shuffled', { profile: 'bf16', order: { kind: 'shuffled', seed: 11 } }],
  ['f32 fma', { profile: 'f32', order: { kind: 'fma' } }],
  ['bf16 fma', { profile: 'bf16', order: { kind: 'fma' } }],
  ['f32 dense', { profile: 'f32', order: { kind: 'sequential' }, path: 'dense' }],
  // the non-default silu form ('div' is the default) and the CUDA-style mean
  ['bf16 silu-mul mean-mulrecip', { profile: 'bf16', order: { kind: 'sequential' }, siluForm: 'mul', meanMode: 'mulrecip' }],
];
const FAST_CONFIGS = ALL_CONFIGS.filter(([n]) => n.endsWith('sequential') || n.endsWith('fma'));
/** For the wide FFNs (hundreds of units): the shuffled order once, in bf16. */
const MEDIUM_CONFIGS = ALL_CONFIGS.filter(([n]) => n.endsWith('sequential') || n.endsWith('fma') || n === 'bf16 shuffled');

function build(c: GadgetCase) {
  const width = Math.max(1, ...c.layers.map((l) => l.length));
  return buildHarness({
    target: { ...TINY, vocabSize: c.tokens, intermediateSize: width },
    numDims: c.numDims,
    embedding: (t) => c.inputs(t).map(([dim, value]) => ({ dim, value })),
    layers: c.layers.map((ffn) => ({ mixer: { kind: 'linear_attention' as const, heads: [] }, ffn })),
    ...(c.hidden ? { hidden: c.hidden } : {}),
  });
}

/** Mismatching (token, layer, vdim) triples of one run, described. */
function mismatches(c: GadgetCase, opts: ExecOptions, h = build(c)): { t: number; text: string }[] {
  const tokens = Array.from({ length: c.tokens }, (_, i) => i);
  const r = runHarness(h, tokens, opts);
  const bad: { t: number; text: string }[] = [];
  for (let t = 0; t < c.tokens; t++) {
    for (let l = 0; l < c.layers.length; l++) {
      const exp = new Float32Array(c.numDims);
      for (const [d, v] of c.inputs(t)) exp[d] = v === 0 ? 0 : v;
      for (const [d, v] of c.expected(t, l)) exp[d] = v === 0 ? 0 : v; // the exact result; a zero is +0
      const got = r.values[t]![l]!.subarray(0, c.numDims);
      const eb = new Uint32Array(exp.buffer);
      const gb = new Uint32Array(Float32Array.from(got).buffer);
      for (let d = 0; d < c.numDims; d++) {
        if (eb[d] !== gb[d]) bad.push({ t, text: `token ${t} layer ${l} vdim ${d}: got ${got[d]} want ${exp[d]}` });
      }
      // Slots beyond the used vdims stay +0 too.
      const rest = r.values[t]![l]!.subarray(c.numDims);
      for (let d = 0; d < rest.length; d++) if (!Object.is(rest[d], 0)) bad.push({ t, text: `token ${t} unused slot ${d} = ${rest[d]}` });
    }
  }
  return bad;
}

function expectExact(c: GadgetCase, configs = ALL_CONFIGS): void {
  const h = build(c);
  for (const [name, opts] of configs) {
    const bad = mismatches(c, opts, h);
    expect(bad.slice(0, 5).map((b) => b.text), `${name}: ${bad.length} mismatches`).toEqual([]);
  }
}


const perm97 = (t: number) => (t * 97) % 256; // a bijection of [0, 256)

describe('LIN family', () => {
  it('lin, linSum, constant, not, clear', () => {
    // dims: 0 a ∈ [−128, 127], 1 b ∈ [0, 255], 2 c ∈ [−255, 0], 3 s bit; outputs 4…8.
    const a = input(0, -128, 127);
    const b = input(1, 0, 255);
    const c = input(2, -255, 0);
    const units = [
      ...F.lin(4, a),
      ...F.lin(5, b, -1),
      ...F.linSum(6, [b, c]),
      ...F.constant(7, -77),
      ...F.not(8, 3),
      ...F.clear(1, { lo: 0, hi: 255 }),
    ];
    expect(units.length).toBe(6);
    const cOf = (t: number) => -((t * 53) % 256);
    expectExact({
      numDims: 9, tokens: 256, layers: [units],
      inputs: (t) => [[0, t - 128], [1, perm97(t)], [2, cOf(t)], [3, t & 1]],
      expected: (t) => [[4, t - 128], [5, -perm97(t)], [6, perm97(t) + cOf(t)], [7, -77], [8, 1 - (t & 1)], [1, 0]],
    });
  });
});

describe('ramps, steps, equality', () => {
  it('ramp / step / eq over x ∈ [−128, 127], including range ends and constant results', () => {
    const x = input(0, -128, 127);
    const parts: [FfnUnit[], (v: number) => number][] = [
      [F.ramp(1, x, 50), (v) => Math.max(0, v - 50)],
      [F.ramp(2, x, 0, -2), (v) => -2 * Math.max(0, v)],
      [F.step(3, x, -37), (v) => (v >= -37 ? 1 : 0)],
      [F.step(4, x, 127), (v) => (v >= 127 ? 1 : 0)],
      [F.step(5, x, -128), () => 1],
      [F.step(6, x, 10, -3), (v) => (v >= 10 ? -3 : 0)],
      [F.eq(7, x, 5), (v) => (v === 5 ? 1 : 0)],
      [F.eq(8, x, -128), (v) => (v === -128 ? 1 : 0)],
      [F.eq(9, x, 127, 200), (v) => (v === 127 ? 200 : 0)],
    ];
    // Costs: ramp 1, step 2 (1 at the top end, 1 constant unit when always true), eq 3 (1 at an end).
    expect(parts.map(([u]) => u.length)).toEqual([1, 1, 2, 1, 1, 2, 3, 1, 1]);
    expectExact({
      numDims: 10, tokens: 256, layers: [parts.flatMap(([u]) => u)],
      inputs: (t) => [[0, t - 128]],
      expected: (t) => parts.map(([, f], i) => [i + 1, f(t - 128)] as [number, number]),
    });
  });

  it('compare: all six ops over nibbles (exhaustive) and against a constant', () => {
    const a = input(0, 0, 15);
    const b = input(1, 0, 15);
    const ops: [F.CompareOp, (p: number, q: number) => boolean, number][] = [
      ['eq', (p, q) => p === q, 3], ['ne', (p, q) => p !== q, 4], ['lt', (p, q) => p < q, 2],
      ['le', (p, q) => p <= q, 2], ['gt', (p, q) => p > q, 2], ['ge', (p, q) => p >= q, 2],
    ];
    const units = ops.map(([op], i) => F.compare(2 + i, a, b, op));
    expect(units.map((u) => u.length)).toEqual(ops.map(([, , n]) => n));
    const constLt = F.compare(8, a, 7, 'lt');
    expectExact({
      numDims: 9, tokens: 256, layers: [[...units.flat(), ...constLt]],
      inputs: (t) => [[0, t >> 4], [1, t & 15]],
      expected: (t) => [
        ...ops.map(([, f], i) => [2 + i, f(t >> 4, t & 15) ? 1 : 0] as [number, number]),
        [8, (t >> 4) < 7 ? 1 : 0],
      ],
    });
  });

  it('compare: bytes (random pairs, many equal or adjacent), sequential and FMA', () => {
    const r = rng(5);
    const pairs = Array.from({ length: 256 }, (_, i) => {
      const p = Math.floor(r() * 256);
      const q = i % 4 === 0 ? p : i % 4 === 1 ? Math.min(255, p + 1) : i % 4 === 2 ? Math.max(0, p - 1) : Math.floor(r() * 256);
      return [p, q] as const;
    });
    pairs[0] = [0, 255];
    pairs[1] = [255, 0];
    pairs[2] = [255, 255];
    const a = input(0, 0, 255);
    const b = input(1, 0, 255);
    const ops: [F.CompareOp, (p: number, q: number) => boolean][] = [
      ['eq', (p, q) => p === q], ['ne', (p, q) => p !== q], ['lt', (p, q) => p < q],
      ['le', (p, q) => p <= q], ['gt', (p, q) => p > q], ['ge', (p, q) => p >= q],
    ];
    expectExact({
      numDims: 8, tokens: 256, layers: [ops.flatMap(([op], i) => F.compare(2 + i, a, b, op))],
      inputs: (t) => [[0, pairs[t]![0]], [1, pairs[t]![1]]],
      expected: (t) => ops.map(([, f], i) => [2 + i, f(pairs[t]![0], pairs[t]![1]) ? 1 : 0] as [number, number]),
    }, FAST_CONFIGS);
  });
});

describe('one-hot and tables', () => {
  it('oneHot of a 32-value window over a wider range [−3, 36] (N + 2 ramps)', () => {
    const outs = Array.from({ length: 32 }, (_, j) => 1 + j);
    const units = F.oneHot(outs, input(0, -3, 36), 0);
    expect(units.length).toBe(34);
    expectExact({
      numDims: 33, tokens: 40, layers: [units],
      inputs: (t) => [[0, t - 3]],
      expected: (t) => outs.map((d, j) => [d, t - 3 === j ? 1 : 0] as [number, number]),
    });
  });

  it('oneHot of all 256 byte values (N units)', () => {
    const outs = Array.from({ length: 256 }, (_, j) => 1 + j);
    const units = F.oneHot(outs, input(0, 0, 255), 0);
    expect(units.length).toBe(256);
    expectExact({
      numDims: 257, tokens: 256, layers: [units],
      inputs: (t) => [[0, t]],
      expected: (t) => outs.map((d, j) => [d, t === j ? 1 : 0] as [number, number]),
    }, ALL_CONFIGS.filter(([n]) => n.endsWith('sequential')));
  });

  it('table: an irregular byte function', () => {
    const f = (x: number) => ((x * 37 + ((x * x) % 101)) % 256) - 128;
    const units = F.table(input(0, 0, 255), f, 1);
    // ≤ 255 ramps + 1 constant, plus duplicates for second differences wider than 8 bits.
    expect(units.length).toBeLessThanOrEqual(2 * 256);
    expectExact({
      numDims: 2, tokens: 256, layers: [units],
      inputs: (t) => [[0, t]],
      expected: (t) => [[1, f(t)]],
    }, MEDIUM_CONFIGS);
  });

  it('table with value and one-hot outputs (the LM-head emit field)', () => {
    const f = (x: number) => (x * 7) % 10;
    const dims = Array.from({ length: 10 }, (_, j) => 2 + j);
    const units = F.table(input(0, 0, 63), f, { value: 1, oneHot: { dims, lo: 0 } });
    expectExact({
      numDims: 12, tokens: 64, layers: [units],
      inputs: (t) => [[0, t]],
      expected: (t) => [[1, f(t)], ...dims.map((d, j) => [d, f(t) === j ? 1 : 0] as [number, number])],
    });
  });

  it('table whose second differences need more than 8 bits splits them over duplicated units', () => {
    const vals = [0, 256, -1, 255, -256, 3, 256, -255, 0, 129, -127, 200, -200, 1, 256, -256];
    const f = (x: number) => vals[x]!;
    const units = F.table(input(0, 0, 15), f, 1);
    const gates = units.map((u) => JSON.stringify(u.gate));
    expect(new Set(gates).size).toBeLessThan(units.length); // duplicates exist
    expectExact({
      numDims: 2, tokens: 16, layers: [units],
      inputs: (t) => [[0, t]],
      expected: (t) => [[1, f(t)]],
    });
  });

  it('tableN: a function of two nibbles through one index form', () => {
    const f = (p: number, q: number) => ((p * q) % 17) - 8;
    const units = F.tableN([input(0, 0, 15), input(1, 0, 15)], f, 2);
    expectExact({
      numDims: 3, tokens: 256, layers: [units],
      inputs: (t) => [[0, t >> 4], [1, t & 15]],
      expected: (t) => [[2, f(t >> 4, t & 15)]],
    }, MEDIUM_CONFIGS);
  });

  it('table2: a 16 × 32 domain in two FFN layers (one-hot, then gated ramps; scratch cleared)', () => {
    const f = (p: number, q: number) => (((p + 1) * (q + 3)) % 200) - 99;
    const scratch = Array.from({ length: 16 }, (_, j) => 3 + j);
    const [l1, l2] = F.table2(input(0, 0, 15), input(1, 0, 31), f, 2, scratch);
    expect(l1.length).toBe(16);
    expectExact({
      numDims: 19, tokens: 512, layers: [l1, l2],
      inputs: (t) => [[0, t >> 5], [1, t & 31]],
      expected: (t, layer) => layer === 0
        ? scratch.map((d, j) => [d, (t >> 5) === j ? 1 : 0] as [number, number])
        : [[2, f(t >> 5, t & 31)]],
    }, FAST_CONFIGS);
  });
});

describe('switches, bit logic, mux, add with carry', () => {
  it('switchMul, and, or, xor, mux (|a − b| up to 512)', () => {
    const A = (t: number) => (t === 0 ? 256 : t === 1 ? -256 : ((t * 97) % 513) - 256);
    const B = (t: number) => (t === 0 ? -256 : t === 1 ? 256 : ((t * 31 + 5) % 513) - 256);
    const s = (t: number) => t & 1;
    const p = (t: number) => (t >> 1) & 1;
    const q = (t: number) => (t >> 2) & 1;
    const a = input(3, -256, 256);
    const b = input(4, -256, 256);
    const units = [
      ...F.switchMul(5, 0, a), ...F.and(6, 1, 2), ...F.or(7, 1, 2), ...F.xor(8, 1, 2), ...F.mux(9, 0, a, b),
      ...F.switchMul(10, 0, input(1, 0, 1), -200),
    ];
    expect(units.length).toBe(1 + 1 + 2 + 2 + 2 + 1);
    expectExact({
      numDims: 11, tokens: 256, layers: [units],
      inputs: (t) => [[0, s(t)], [1, p(t)], [2, q(t)], [3, A(t)], [4, B(t)]],
      expected: (t) => [
        [5, s(t) * A(t)], [6, p(t) & q(t)], [7, p(t) | q(t)], [8, p(t) ^ q(t)],
        [9, s(t) ? A(t) : B(t)], [10, -200 * s(t) * p(t)],
      ],
    });
  });

  it('addWithCarry base 16: every a, b, cin', () => {
    const units = F.addWithCarry(3, 4, input(0, 0, 15), input(1, 0, 15), 2, 16);
    expect(units.length).toBe(3);
    expectExact({
      numDims: 5, tokens: 512, layers: [units],
      inputs: (t) => [[0, t & 15], [1, (t >> 4) & 15], [2, t >> 8]],
      expected: (t) => {
        const sum = (t & 15) + ((t >> 4) & 15) + (t >> 8);
        return [[3, sum % 16], [4, Math.floor(sum / 16)]];
      },
    }, FAST_CONFIGS);
  });

  const bytePairs = (n: number, seed: number): [number, number, number][] => {
    const r = rng(seed);
    const out: [number, number, number][] = [[255, 255, 1], [255, 0, 1], [0, 0, 0], [128, 127, 1], [128, 127, 0], [255, 1, 0], [0, 255, 0]];
    while (out.length < n) out.push([Math.floor(r() * 256), Math.floor(r() * 256), r() < 0.5 ? 1 : 0]);
    return out;
  };

  it('addWithCarry base 256 (bytes, 4 units, every up ≤ 256): random and extreme triples', () => {
    const cases = bytePairs(256, 9);
    const units = F.addWithCarry(3, 4, input(0, 0, 255), input(1, 0, 255), 2, 256);
    expect(units.length).toBe(4);
    expectExact({
      numDims: 5, tokens: 256, layers: [units],
      inputs: (t) => [[0, cases[t]![0]], [1, cases[t]![1]], [2, cases[t]![2]]],
      expected: (t) => {
        const sum = cases[t]![0] + cases[t]![1] + cases[t]![2];
        return [[3, sum % 256], [4, sum >= 256 ? 1 : 0]];
      },
    });
  });

  it('at the qwen3.5-4b hidden size 2560 (two anchors): byte add, compare, one-hot', () => {
    const cases = bytePairs(48, 13);
    const units = [
      ...F.addWithCarry(3, 4, input(0, 0, 255), input(1, 0, 255), 2, 256),
      ...F.compare(5, input(0, 0, 255), input(1, 0, 255), 'le'),
      ...F.oneHot([6, 7, 8, 9], input(2, 0, 1), 0),
    ];
    expectExact({
      numDims: 10, tokens: 48, layers: [units], hidden: 2560,
      inputs: (t) => [[0, cases[t]![0]], [1, cases[t]![1]], [2, cases[t]![2]]],
      expected: (t) => {
        const [p, q, c] = cases[t]!;
        return [[3, (p + q + c) % 256], [4, p + q + c >= 256 ? 1 : 0], [5, p <= q ? 1 : 0], [6, 1 - c], [7, c]];
      },
    }, FAST_CONFIGS);
  });
});

describe('controls: violated preconditions break exactness', () => {
  it('A = 64: silu(−64) ≠ −0, so a step leaks a tiny non-zero below the threshold', () => {
    // Hand-built STEP_{≥0} with ramp scale 64 (the library refuses this scale: it is fixed at 128).
    const A = 64;
    const units: FfnUnit[] = [
      { gate: { terms: [{ dim: 0, coef: A }], constant: A }, up: constForm(1), down: [{ dim: 1, weight: 1 / A }] },
      { gate: { terms: [{ dim: 0, coef: A }], constant: 0 }, up: constForm(1), down: [{ dim: 1, weight: -1 / A }] },
    ];
    const c: GadgetCase = {
      numDims: 2, tokens: 64, layers: [units],
      inputs: (t) => [[0, t - 32]],
      expected: (t) => [[1, t - 32 >= 0 ? 1 : 0]],
    };
    for (const [, opts] of FAST_CONFIGS.filter(([n]) => n.endsWith('sequential'))) {
      const bad = mismatches(c, opts);
      // x = −1: RAMP_{−1} = silu(0) = 0 but RAMP_0 = silu(−64) ≈ −1e−26, so the output is not 0.
      expect(bad.map((b) => b.t)).toContain(31);
    }
    // The same step with the library's A = 128 is exact.
    expectExact({ ...c, layers: [F.step(1, input(0, -32, 31), 0)] }, FAST_CONFIGS.filter(([n]) => n.endsWith('sequential')));
  });

  it('a gate beyond the bf16 window (x − t + 1 > 256) fails in bf16 only', () => {
    // Declared range [−255, 218] keeps x − (t − 1) ≤ 256 for t = −37; tokens then feed x ∈ [219, 255].
    const units = F.step(1, input(0, -255, 218), -37);
    expect(units.length).toBe(2);
    const c: GadgetCase = {
      numDims: 2, tokens: 511, layers: [units],
      inputs: (t) => [[0, t - 255]],
      expected: (t) => [[1, t - 255 >= -37 ? 1 : 0]],
    };
    const seq = (p: 'f32' | 'bf16'): ExecOptions => ({ profile: p, order: { kind: 'sequential' } });
    expect(mismatches(c, seq('f32'))).toEqual([]);
    const bad = mismatches(c, seq('bf16')).map((b) => b.t - 255);
    const outside = Array.from({ length: 37 }, (_, i) => 219 + i);
    expect([...new Set(bad)].sort((p, q) => p - q)).toEqual(outside);
  });
});

describe('bounds are refused with a ChipcError naming them', () => {
  it('refuses requests outside the exact windows', () => {
    const byte = input(0, 0, 255);
    const sum3 = input(form([{ dim: 0, coef: 1 }, { dim: 1, coef: 1 }, { dim: 2, coef: 1 }]), 0, 765);
    expectChipcError(() => F.eq(3, sum3, 382), 'ffn.gate-range'); // both ramp directions need > 256
    expectChipcError(() => F.ramp(3, input(0, -200, 255), -10), 'ffn.gate-range');
    expectChipcError(() => F.lin(3, input(form([{ dim: 0, coef: 1 }, { dim: 1, coef: 1 }]), 0, 510)), 'ffn.up-range');
    expectChipcError(() => F.lin(3, byte, 2), 'ffn.out-range');
    expectChipcError(() => F.switchMul(3, 0, input(form([{ dim: 0, coef: 2 }]), 0, 510)), 'ffn.up-range');
    expectChipcError(() => F.mux(3, input(0, 0, 2), byte, byte), 'ffn.switch-bit');
    expectChipcError(() => F.tableN([input(0, 0, 15), input(1, 0, 16)], (p, q) => p + q, 3), 'ffn.table-span');
    expectChipcError(() => F.table(byte, (v) => v / 2, 3), 'ffn.table-value');
    expectChipcError(() => F.table(byte, (v) => v + 10, 3), 'ffn.out-range');
    expectChipcError(() => F.table(byte, (v) => (v % 2 ? 256 : -256), 3), 'ffn.partial-sum');
    expectChipcError(() => F.table(byte, (v) => v % 3, { oneHot: { dims: [4, 5], lo: 0 } }), 'ffn.table-value');
    expectChipcError(() => F.lin(3, input(form([{ dim: 0, coef: 257 }]), 0, 0)), 'ffn.weight');
    expectChipcError(() => F.lin(3, input(0, 0, 300)), 'ffn.input');
    expectChipcError(() => F.addWithCarry(3, 4, byte, byte, 2, 16), 'ffn.input');
  });
});

describe('costs', () => {
  it('FfnBuilder reports units and down non-zeros per gadget and checks shared-output partial sums', () => {
    const byte = input(0, 0, 255);
    const fb = new F.FfnBuilder()
      .add('step', F.step(1, byte, 100))
      .add('oneHot', F.oneHot([2, 3, 4], input(0, 0, 2), 0))
      .add('add', F.addWithCarry(5, 6, byte, input(7, 0, 255), 8, 256));
    expect(fb.gadgets).toEqual([
      { name: 'step', units: 2, downNonZeros: 2 },
      { name: 'oneHot', units: 3, downNonZeros: 6 },
      { name: 'add', units: 4, downNonZeros: 6 },
    ]);
    expect(fb.cost()).toEqual({ units: 9, downNonZeros: 14 });
    fb.checkPartialSums();
    // 300 copies of 128·[x = 0] over [−128, 127] into one dim: each has Σ|c|·m = 65024, so
    // Σ|w|·peak = 300·65024 ≥ 2^24 (one copy alone is fine).
    const big = new F.FfnBuilder();
    for (let i = 0; i < 300; i++) big.add('eq', F.eq(9, input(0, -128, 127), 0, 128));
    expectChipcError(() => big.checkPartialSums(), 'ffn.partial-sum');
  });
});
