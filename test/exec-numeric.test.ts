/**
 * exec/numeric.ts: the correctly rounded float32 add (checked against exact BigInt arithmetic),
 * the order modes, bf16 rounding and the saturated regions of the activation functions.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  addRoundOnce, exp32, makeDot, makeNumericContext, makeSum, roundBf16, rsqrt32, sigmoid32, silu32, softplus32,
  sigmoidFormula, siluFormula,
} from '../src/exec/numeric.ts';

const f32 = Math.fround;
const bitsOf = (x: number): number => new Uint32Array(new Float32Array([x]).buffer)[0];

/** Exact value of a double as [mantissa, exponent] with value = m·2^e (m a BigInt). */
function exactOf(x: number): [bigint, number] {
  if (x === 0) return [0n, 0];
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  const hi = dv.getUint32(0);
  const lo = dv.getUint32(4);
  const sign = hi >>> 31 ? -1n : 1n;
  const ex = (hi >>> 20) & 0x7ff;
  let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let e: number;
  if (ex === 0) e = -1074;
  else { m |= 1n << 52n; e = ex - 1075; }
  return [sign * m, e];
}

/** Reference: float32 round-to-nearest-even of the exact rational m·2^e (finite results only). */
function roundToF32(m: bigint, e: number): number {
  if (m === 0n) return 0;
  const neg = m < 0n;
  let a = neg ? -m : m;
  // Normalise so that a has exactly 24 significant bits plus guard info: find bit length.
  const len = a.toString(2).length;
  // exponent of the leading bit: len − 1 + e; float32 quantum q = max(lead − 23, −149)
  const lead = len - 1 + e;
  const q = Math.max(lead - 23, -149);
  const shift = q - e; // number of low bits to drop
  let r: bigint;
  if (shift <= 0) r = a << BigInt(-shift);
  else {
    const s = BigInt(shift);
    const keep = a >> s;
    const rem = a - (keep << s);
    const half = 1n << (s - 1n);
    r = keep;
    if (rem > half || (rem === half && (keep & 1n) === 1n)) r = keep + 1n;
  }
  a = r;
  const v = Number(a) * 2 ** q;
  return neg ? -v : v;
}

/** Exact float32(acc + p) via BigInt. */
function refAdd(acc: number, p: number): number {
  const [m1, e1] = exactOf(acc);
  const [m2, e2] = exactOf(p);
  if (m1 === 0n && m2 === 0n) return f32(acc + p);
  const e = Math.min(m1 === 0n ? e2 : e1, m2 === 0n ? e1 : e2);
  const s = (m1 === 0n ? 0n : m1 << BigInt(e1 - e)) + (m2 === 0n ? 0n : m2 << BigInt(e2 - e));
  if (s === 0n) return 0; // exact cancellation: +0 in round-to-nearest
  return roundToF32(s, e);
}

/** Random float32 values m·2^e with 24-bit m and exponents close together (so sums interact). */
const f32Arb = fc.tuple(fc.integer({ min: -(2 ** 24 - 1), max: 2 ** 24 - 1 }), fc.integer({ min: -40, max: 10 }))
  .map(([m, e]) => f32(m * 2 ** e));

describe('addRoundOnce (FMA accumulation: float32(acc + a·b) rounded once)', () => {
  it('crafted halfway case: the naive fround(acc + p) double-rounds, addRoundOnce does not', () => {
    // p = (2^12+1)² = 2^24 + 2^13 + 1 is exactly halfway between the float32s 2^24+2^13 and
    // 2^24+2^13+2; a tiny acc decides the direction, but the double sum loses it.
    const p = 4097 * 4097;
    for (const [acc, want] of [[2 ** -100, 2 ** 24 + 2 ** 13 + 2], [-(2 ** -100), 2 ** 24 + 2 ** 13]] as const) {
      expect(refAdd(acc, p)).toBe(want);
      expect(addRoundOnce(acc, p)).toBe(want);
    }
    expect(f32(2 ** -100 + p)).toBe(2 ** 24 + 2 ** 13); // the naive form is wrong here
  });

  it('exact halfway ties to even, and exact cancellation gives +0', () => {
    expect(addRoundOnce(0, 4097 * 4097)).toBe(2 ** 24 + 2 ** 13);
    expect(addRoundOnce(-0, 4095 * 4097)).toBe(refAdd(-0, 4095 * 4097));
    expect(Object.is(addRoundOnce(1.5, -1.5), 0)).toBe(true);
    expect(Object.is(addRoundOnce(-0, -0), -0)).toBe(true);
  });

  it('matches exact BigInt rounding on random float32 acc and products a·b', () => {
    fc.assert(fc.property(f32Arb, f32Arb, f32Arb, (acc, a, b) => {
      const p = a * b;
      if (!Number.isFinite(p) || Math.abs(p) > 3e38) return;
      const want = refAdd(acc, p);
      if (!Number.isFinite(want)) return;
      expect(bitsOf(addRoundOnce(acc, p))).toBe(bitsOf(want));
    }), { numRuns: 3000 });
  });

  it('matches exact rounding on near-halfway cases built from 13-bit factors (25–26-bit products)', () => {
    let naiveWrong = 0;
    fc.assert(fc.property(
      fc.integer({ min: 4097, max: 8191 }), fc.integer({ min: 4097, max: 8191 }), fc.integer({ min: -60, max: 0 }),
      fc.integer({ min: -130, max: -30 }), fc.boolean(),
      (x, y, sc, tinyExp, negTiny) => {
        const p = x * y * 2 ** sc; // 25–26 significant bits: often exactly halfway between float32s
        const acc = (negTiny ? -1 : 1) * 2 ** (tinyExp + sc);
        const want = refAdd(acc, p);
        expect(bitsOf(addRoundOnce(acc, p))).toBe(bitsOf(want));
        if (bitsOf(f32(acc + p)) !== bitsOf(want)) naiveWrong++;
      }), { numRuns: 2000 });
    expect(naiveWrong).toBeGreaterThan(0);
  });
});

describe('order modes', () => {
  it('sequential starts at −0: the empty sum and a sum of −0 products are −0', () => {
    const dot = makeDot({ kind: 'sequential' });
    expect(Object.is(dot([], 0, 1, [], 0, 1, 0), -0)).toBe(true);
    expect(Object.is(dot([-1, 1], 0, 1, [0, -0], 0, 1, 2), -0)).toBe(true);
    expect(Object.is(dot([1, 1], 0, 1, [0, -0], 0, 1, 2), 0)).toBe(true);
  });

  it('sequential is index order with a rounding per product and per partial sum', () => {
    const a = [1, 2 ** -24, 2 ** -24];
    const b = [1, 1, 1];
    // (1 + 2^-24) rounds to 1 (tie to even), twice: 1; the reverse order gives 1 + 2^-23.
    expect(makeDot({ kind: 'sequential' })(a, 0, 1, b, 0, 1, 3)).toBe(1);
    expect(makeDot({ kind: 'sequential' })(a.slice().reverse(), 0, 1, b, 0, 1, 3)).toBe(1 + 2 ** -23);
    expect(makeSum({ kind: 'sequential' })(a, 0, 1, 3)).toBe(1);
  });

  it('shuffled is deterministic per seed and call number, and reaches other orders', () => {
    const a = [1, 2 ** -24, 2 ** -24, 2 ** -24, 2 ** -24];
    const run = (seed: number): number[] => {
      const s = makeSum({ kind: 'shuffled', seed });
      return Array.from({ length: 20 }, () => s(a, 0, 1, 5));
    };
    expect(run(7)).toEqual(run(7));
    const seen = new Set(run(7).concat(run(8)));
    expect(seen.size).toBeGreaterThan(1);
  });

  it('fma mode keeps the exact product', () => {
    const dot = makeDot({ kind: 'fma' });
    const seq = makeDot({ kind: 'sequential' });
    // (1+2^-12)² = 1 + 2^-11 + 2^-24: the product rounds to 1 + 2^-11 alone (tie to even);
    // with −1 − 2^-11 added the FMA keeps 2^-24.
    const x = 1 + 2 ** -12;
    // first term alone: −0 + x² rounds once to 1 + 2^-11, then cancels exactly
    expect(dot([x, -1 - 2 ** -11], 0, 1, [x, 1], 0, 1, 2)).toBe(0);
    expect(dot([-1 - 2 ** -11, x], 0, 1, [1, x], 0, 1, 2)).toBe(2 ** -24);
    expect(seq([-1 - 2 ** -11, x], 0, 1, [1, x], 0, 1, 2)).toBe(0);
  });

  it('rejects bad options with a ChipcError', () => {
    expect(() => makeNumericContext({ profile: 'f16' as never })).toThrow(/profile/);
    expect(() => makeNumericContext({ order: { kind: 'shuffled', seed: 1.5 } })).toThrow(/seed/);
  });
});

describe('bf16 and activations', () => {
  it('bf16 rounds to nearest even on the top 16 bits', () => {
    expect(roundBf16(1 + 2 ** -8)).toBe(1); // halfway, ties to even (1)
    expect(roundBf16(1 + 3 * 2 ** -8)).toBe(1 + 2 ** -6); // halfway, ties to even (up)
    expect(roundBf16(1 + 2 ** -8 + 2 ** -20)).toBe(1 + 2 ** -7);
    expect(roundBf16(181.01934814453125)).toBe(181);
    const ctx = makeNumericContext({ profile: 'bf16' });
    expect(ctx.act(257)).toBe(256);
    expect(makeNumericContext({}).act(257)).toBe(257);
  });

  it('the saturation shortcuts of sigmoid32 / silu32 equal the plain formulas bit for bit', () => {
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    const bitsOf = (x: number): number => { f[0] = x; return u[0]; };
    const xs: number[] = [Infinity, -Infinity, NaN, 0, -0, 16, 16.5, 16.63553, 16.64, 17, 18, 88, 88.72, 88.73, 89, 90, 1e30, 3.4e38];
    // every float32 in a band around each shortcut threshold, and a geometric sweep beyond
    for (const t of [17, -17, 89, -89]) {
      f[0] = t;
      const b = u[0];
      for (let d = -4096; d <= 4096; d++) { u[0] = b + d; xs.push(f[0]); }
    }
    for (let x = 1; x < 3e38; x *= 1.01) { xs.push(Math.fround(x)); xs.push(Math.fround(-x)); }
    let checked = 0;
    for (const x of xs) {
      expect(bitsOf(sigmoid32(x))).toBe(bitsOf(sigmoidFormula(x)));
      expect(bitsOf(silu32(x, 'mul'))).toBe(bitsOf(x === 0 ? x : siluFormula(x, 'mul')));
      expect(bitsOf(silu32(x, 'div'))).toBe(bitsOf(x === 0 ? x : siluFormula(x, 'div')));
      checked++;
    }
    expect(checked).toBeGreaterThan(30000);
  });

  it('saturated regions (docs/numerics.md "Saturated regions")', () => {
    for (const x of [16.64, 17, 100, 1e6]) {
      expect(sigmoid32(x)).toBe(1);
      expect(silu32(f32(x), 'mul')).toBe(f32(x));
      expect(silu32(f32(x), 'div')).toBe(f32(x));
    }
    for (const x of [-88.73, -100, -128]) {
      expect(Object.is(sigmoid32(x), 0)).toBe(true);
      expect(Object.is(silu32(x, 'mul'), -0)).toBe(true);
      expect(Object.is(silu32(x, 'div'), -0)).toBe(true);
    }
    expect(silu32(0, 'mul')).toBe(0);
    expect(softplus32(-128)).toBe(0);
    expect(softplus32(21)).toBe(21);
    expect(exp32(-104)).toBe(0);
    expect(exp32(-0)).toBe(1);
    expect(rsqrt32(64)).toBe(0.125);
    expect(rsqrt32(4 ** 7)).toBe(2 ** -7);
    // the pinned GDN gate: g = −exp(0)·softplus(−128) = −0, exp(g) = 1
    expect(Object.is(f32(-exp32(0) * softplus32(-128)), -0)).toBe(true);
  });
});

describe('rmsNorm1p', () => {
  // The formula written out with the generic numeric context's own pieces (ctx.sum, ctx.act),
  // element by element: the f32 fast path of norms.ts must give the same bits.
  const reference = (ctx: ReturnType<typeof makeNumericContext>, x: Float32Array, w: Float32Array, eps: number): Float32Array => {
    const sq = x.map((v) => f32(v * v));
    const sum = ctx.sum(sq, 0, 1, x.length);
    const mean = ctx.meanMode === 'div' ? f32(sum / x.length) : f32(sum * f32(1 / x.length));
    const r = rsqrt32(f32(mean + f32(eps)));
    return x.map((v, i) => ctx.act(f32(f32(v * r) * f32(1 + w[i]))));
  };
  const special = [0, -0, 1, -1, 1e-40, -3e-39, 65504, 2 ** 60, -(2 ** -20), 3.4e38];
  const vec = (n: number) => fc.array(fc.oneof(fc.float({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(...special)), { minLength: n, maxLength: n })
    .map((a) => Float32Array.from(a));
  it('equals the written-out formula bit for bit (f32 sequential, fma and mean modes, offsets)', async () => {
    const { rmsNorm1p } = await import('../src/exec/norms.ts');
    fc.assert(fc.property(fc.integer({ min: 1, max: 40 }).chain((n) => fc.tuple(vec(n), vec(n), fc.constantFrom(1e-6, 1e-5))),
      fc.constantFrom('sequential', 'fma'), fc.constantFrom('div', 'mulrecip'), fc.integer({ min: 0, max: 3 }),
      ([x, w, eps], order, meanMode, off) => {
        const ctx = makeNumericContext({ order: { kind: order } as never, meanMode: meanMode as 'div' | 'mulrecip' });
        const xo = new Float32Array(off + x.length);
        xo.set(x, off);
        const out = new Float32Array(off + x.length + 2).fill(7);
        rmsNorm1p(ctx, xo, off, x.length, w, eps, out, off + 1);
        const want = reference(ctx, x, w, eps);
        expect([...new Uint32Array(out.buffer).slice(off + 1, off + 1 + x.length)]).toEqual([...new Uint32Array(want.buffer)]);
        expect(out[off]).toBe(7); // nothing written outside the range
        expect(out[off + x.length + 1]).toBe(7);
      }), { numRuns: 400 });
  });
});

describe('gatedRmsNorm', () => {
  // The formula written out with the generic numeric context's own pieces (ctx.sum, ctx.act,
  // silu32 in the context's form): the f32 fast path of norms.ts must give the same bits.
  const reference = (ctx: ReturnType<typeof makeNumericContext>, o: Float32Array, z: Float32Array, w: Float32Array, eps: number): Float32Array => {
    const sq = o.map((v) => f32(v * v));
    const sum = ctx.sum(sq, 0, 1, o.length);
    const mean = ctx.meanMode === 'div' ? f32(sum / o.length) : f32(sum * f32(1 / o.length));
    const r = rsqrt32(f32(mean + f32(eps)));
    return o.map((v, i) => ctx.act(f32(ctx.act(f32(w[i]! * ctx.act(f32(v * r)))) * silu32(z[i]!, ctx.siluForm))));
  };
  const special = [0, -0, 1, -1, 1e-40, -3e-39, 17, -89, 16.5, -88.5, 2 ** 60, -(2 ** -20), 3.4e38, NaN, Infinity, -Infinity];
  const vec = (n: number) => fc.array(fc.oneof(fc.float({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(...special)), { minLength: n, maxLength: n })
    .map((a) => Float32Array.from(a));
  it('equals the written-out formula bit for bit (f32 and bf16, sequential and fma, mean modes, silu forms, offsets)', async () => {
    const { gatedRmsNorm } = await import('../src/exec/norms.ts');
    fc.assert(fc.property(fc.integer({ min: 1, max: 40 }).chain((n) => fc.tuple(vec(n), vec(n), vec(n), fc.constantFrom(1e-6, 1e-5))),
      fc.constantFrom('sequential', 'fma'), fc.constantFrom('div', 'mulrecip'), fc.constantFrom('mul', 'div'), fc.constantFrom('f32', 'bf16'),
      fc.integer({ min: 0, max: 3 }),
      ([o, z, w, eps], order, meanMode, siluForm, profile, off) => {
        const ctx = makeNumericContext({ order: { kind: order } as never, meanMode: meanMode as 'div' | 'mulrecip', siluForm: siluForm as 'mul' | 'div', profile: profile as 'f32' | 'bf16' });
        const oo = new Float32Array(off + o.length);
        oo.set(o, off);
        const zo = new Float32Array(2 * off + z.length);
        zo.set(z, 2 * off);
        const out = new Float32Array(off + o.length + 2).fill(7);
        gatedRmsNorm(ctx, oo, off, zo, 2 * off, o.length, w, eps, out, off + 1);
        const want = reference(ctx, o, z, w, eps);
        expect([...new Uint32Array(out.buffer).slice(off + 1, off + 1 + o.length)]).toEqual([...new Uint32Array(want.buffer)]);
        expect(out[off]).toBe(7); // nothing written outside the range
        expect(out[off + o.length + 1]).toBe(7);
      }), { numRuns: 400 });
  });
});

describe('l2normSeq (gdn-token.ts: q and k in sequential order)', () => {
  // norms.ts l2norm with the sequential sum, then fl(·s): the same bits however many zeros, and
  // for NaN and infinite inputs.
  const special = [0, -0, 0, -0, 0, 1, -1, 1e-40, -3e-39, 2 ** -80, 2 ** 60, 3.4e38, NaN, Infinity, -Infinity];
  const vec = fc.integer({ min: 1, max: 160 }).chain((n) => fc.array(fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(0, -0) },
    { weight: 2, arbitrary: fc.float({ noNaN: true, noDefaultInfinity: true }) },
    { weight: 1, arbitrary: fc.constantFrom(...special) },
  ), { minLength: n, maxLength: n }).map((a) => Float32Array.from(a)));
  it('equals fl(l2norm(x)·s) bit for bit (zeros copied, NaN and infinities through the formula)', async () => {
    const { l2norm } = await import('../src/exec/norms.ts');
    const { l2normSeq } = await import('../src/exec/gdn-token.ts');
    const ctx = makeNumericContext({});
    const bitsOf = (a: Float32Array) => [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
    fc.assert(fc.property(vec, fc.constantFrom(1, 0.125, 0.08838834764831845, 3), fc.integer({ min: 0, max: 3 }), (x, s, off) => {
      const xo = new Float32Array(off + x.length);
      xo.set(x, off);
      const want = new Float32Array(x.length);
      l2norm(ctx, x, 0, x.length, want, 0);
      if (s !== 1) for (let i = 0; i < want.length; i++) want[i] = f32(want[i] * s);
      const out = new Float32Array(x.length + 2).fill(7);
      l2normSeq(xo, off, x.length, out, 1, s);
      expect(bitsOf(out.subarray(1, 1 + x.length))).toEqual(bitsOf(want));
      expect(out[0]).toBe(7);
      expect(out[x.length + 1]).toBe(7);
    }), { numRuns: 600 });
  });
});
